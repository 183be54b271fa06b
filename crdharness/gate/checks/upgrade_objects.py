"""Part of check *upgrade*: the objects an earlier release stored (``Written``), their etcd
keys, and how a finding about one is recorded (excused by an ``allow`` entry or not)."""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from dataclasses import dataclass, field

from crdharness.etcd import StoredObject, custom_resource_key
from crdharness.gate import diff
from crdharness.gate.api import MANAGER
from crdharness.gate.checks.upgrade_writes import (
    RECREATE,
    RECREATE_STATUS,
)
from crdharness.gate.evidence import coverage, objects
from crdharness.gate.evidence.changes import Change
from crdharness.gate.evidence.packed import PackedReads
from crdharness.gate.results import CheckResult
from crdharness.gate.run.context import GateContext

RECREATES = (RECREATE, RECREATE_STATUS)


# A note (no finding) of a loss the webhook makes already under the earlier release.
WEBHOOKS_OWN = "not a change of this release"
# A note: a read of an old object that another client wrote since the gate's last read (the
# project's own controllers, running in the webhook's process, reconcile its objects).
WRITTEN_MEANWHILE = "written meanwhile by another client (not compared)"
# The field managers the gate's own writes leave: its server-side applies, its other writes
# (named after the HTTP client's agent), and the entry the API server makes of the managed
# fields of an object first applied after such writes.
GATE_MANAGERS = frozenset({MANAGER, "python-requests", "before-first-apply"})


def other_writers(before: dict, after: dict) -> list[str]:
    """The field managers, other than the gate's, whose ``metadata.managedFields`` entries
    changed between two reads of an object: another client wrote it in between, so what
    changed is not the upgrade's (nor the gate's writes') doing."""

    def entries(obj: dict) -> set[str]:
        managed = (obj.get("metadata") or {}).get("managedFields") or []
        return {
            json.dumps(e, sort_keys=True) for e in managed if e.get("manager") not in GATE_MANAGERS
        }

    return sorted({json.loads(e).get("manager", "?") for e in entries(after) - entries(before)})


def note_written_meanwhile(
    result: CheckResult, obj: Written, where: str, writers: list[str]
) -> None:
    line = f"{WRITTEN_MEANWHILE}: {obj.label} {where}: written by {', '.join(writers)}"
    if line not in result.details:
        result.details.append(line)


@dataclass(eq=False)
class Written:
    """An object the history phase wrote, and what it looked like then."""

    crd: str
    version: str  # written at
    name: str
    namespace: str | None
    # version -> the object as read at it (kept compressed: ~10,000 of a provider's objects)
    seen: MutableMapping[str, dict] = field(default_factory=PackedReads)
    sent: dict = field(default_factory=dict)  # the body written (fields, status)
    sample: bool = False  # one of the user's samples (an object clusters really hold)
    sample_name: str = ""  # a sample's own name, as the user knows it (the gate names it anew)
    changes: tuple[Change, ...] = ()  # the changes it was built to hold (``targeted``)
    baseline: set[tuple[str, str]] = field(default_factory=set)  # writes refused before
    findings: list[str] = field(default_factory=list)  # this transition's, about it
    excused: list[str] = field(default_factory=list)  # findings an `allow` entry excused
    hazarded: set[tuple[str, str]] = field(default_factory=set)  # writes refused both times
    refused: set[str] = field(default_factory=set)  # this transition's writes refused (any)
    captured: bool = False  # one of a source cluster's objects (``--from-cluster``)
    # Written once under this release (its index) through its own webhook and never again:
    # what most objects of a cluster are, read but never written by the gate's checks
    # (``upgrade_stored`` compares them with new objects under the candidate).
    kept_from: int | None = None
    screened: bool = False  # read by LIST and written as dry runs only (``upgrade_screen``)
    # (version, a list's schema path) that writes at that version under an earlier release
    # appended items to again and again: the same write grows it again under the next
    # (``upgrade_rewrites``); ``grown_once`` (with the version read at) holds a first growth,
    # which may be the last (an empty list given one zero item, then kept as it is)
    grown: set[tuple[str, str]] = field(default_factory=set)
    grown_once: set[tuple[str, str, str]] = field(default_factory=set)
    # Schema paths the gate's own writes under the earlier release lost or changed (through a
    # webhook, or strategy None): a refusal naming only these follows from that loss.
    lost_earlier: set[str] = field(default_factory=set)
    # Reads since its last write, at each version, under the release applied then (its
    # index): the next write at a version starts from one instead of reading it again. A
    # read the object has since moved past only costs a conflict (409) and a fresh read:
    # every update names the resourceVersion it read.
    fresh: MutableMapping[str, dict] = field(default_factory=PackedReads)
    fresh_under: int = -1

    def holds(self, change: Change) -> bool:
        """Whether it was built to hold ``change``."""
        return any(c is change for c in self.changes)

    def read_now(self, release: int, version: str, body: dict) -> None:
        """``body`` read at ``version`` just now, under release ``release``."""
        if self.fresh_under != release:
            self.fresh, self.fresh_under = PackedReads(), release
        self.fresh[version] = body

    def read_at(self, release: int, version: str) -> dict | None:
        """The object as last read at ``version`` under release ``release``, if nothing
        wrote it since (as far as the gate knows; the server judges the rest)."""
        return self.fresh.get(version) if self.fresh_under == release else None

    def written_now(self) -> None:
        """Written just now: no read before this is current."""
        self.fresh = PackedReads()

    @property
    def label(self) -> str:
        """How findings name it: a source cluster's object as ``namespace/name``, one of the
        user's samples with the name the user gave it too."""
        if self.captured and self.namespace:
            return f"{self.namespace}/{self.name}"
        if self.sample_name:
            return f"{self.name} (your sample {self.sample_name})"
        return self.name


def etcd_snapshot(ctx: GateContext, written: list[Written]) -> dict:
    """Each object's etcd key: (mod_revision, stored apiVersion), read with one range per
    CRD (a cluster's tens of thousands of objects, not one request each)."""
    etcd = ctx.cluster.etcd
    if etcd is None:
        return {}
    held: dict[str, StoredObject] = {}
    for crd in sorted({obj.crd for obj in written}):
        resource = ctx.resource(crd)
        prefix = custom_resource_key(resource.group, resource.plural, "")
        held |= {stored.key: stored for stored in etcd.list(prefix)}
    snapshot = {}
    for obj in written:
        resource = ctx.resource(obj.crd)
        key = custom_resource_key(resource.group, resource.plural, obj.name, obj.namespace)
        if key in held:
            snapshot[(obj.crd, obj.label)] = (held[key].mod_revision, held[key].api_version)
    return snapshot


def finding(
    ctx: GateContext,
    result: CheckResult,
    obj: Written,
    headline: str,
    *details: str,
    paths: list[str] | None = None,
) -> None:
    """A finding about ``obj``: the check fails, unless an ``allow`` entry (with no
    ``between``, or one naming the versions) covers every path it names."""
    named = paths if paths is not None else [p for d in details for p in diff.named_paths(d)]
    rule = None
    if named:
        rules = [
            next((r for r in ctx.config.allow if r.covers_upgrade(p, obj.version)), None)
            for p in named
        ]
        rule = rules[0] if all(rules) else None
    first = details[0] if details else headline
    first = first if obj.label in first else f"{obj.label}: {first}"
    if rule is not None:
        note = f"{obj.crd} {first} ({rule.reason})"
        obj.excused.append(note)
        if note not in result.allowed:
            result.allowed.append(note)
        return
    # Each line (each write refused, each path changed) is one of its findings: a change
    # is proven by the line that names its path.
    lines = [line if obj.label in line else f"{obj.label}: {line}" for line in details]
    obj.findings += lines or [first]
    result.fail(headline, *details)


def after_earlier_loss(ctx: GateContext, release, obj: Written, version: str, refusal) -> str:
    """Why ``refusal`` (a write at ``version`` under ``release``) is no change of this release,
    or "": every field its message names is one the gate's own writes of ``obj`` under the
    earlier release lost already (``lost_earlier``: a webhook emptying a required field), and
    ``version``'s schema is the same in both releases, so the earlier release refuses that
    content alike. The loss itself is named where it is made (round-trip, or the earlier
    release's hazards)."""
    named = {diff.schema_path(p) for p in diff.named_paths(refusal.message)}
    if not named or not release.index:
        return ""
    if any(not any(diff.at_or_under(p, lost) for lost in obj.lost_earlier) for p in named):
        return ""
    earlier = ctx.releases[release.index - 1].version(obj.crd, version)
    if earlier is None or earlier != release.version(obj.crd, version):
        return ""
    return (
        f"{WEBHOOKS_OWN}: {obj.label}: {refusal.line[:300]} (it lost "
        f"{', '.join(sorted(named))} through the gate's own writes under release "
        f"{release.index} already, with the same schema at {version})"
    )


def declared_first(entry: dict, found: list) -> list:
    """Differences with the fields ``entry``'s schema declares first (then metadata, then
    keys inside subtrees that preserve unknown fields), each group by path."""
    schema = objects.body_schema(entry)
    return sorted(found, key=lambda d: coverage.headline_order(schema, d.path))
