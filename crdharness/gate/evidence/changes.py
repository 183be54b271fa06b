"""What changed between two releases of a CRD, path by path: the classes a static schema
checker reports (an enum value removed, a field made required, a bound tightened, a new CEL
rule, a new default, ...). Computed from the manifests alone; each change then gets objects
built to hold it (``targeted``) and a decision from the real API server (``upgrade``).

A path is spelt as the schema names it: ``spec.priority``, ``status.conditions[].type``, and
``*`` for the values of a map (``spec.labels.*``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from crdharness.gate import diff
from crdharness.gate.evidence import crd_diff, schema_rules, schema_walk, schemas
from crdharness.gate.given.manifests import Release

ONE_VERSION = "at one version only"  # a path two served versions of one release differ in

# The decisions a change ends with (``decide``), and the one it starts with.
PROVEN, CLEARED, ALLOWED, NOT_PROVEN = "proven", "cleared", "allowed", "not proven"
# Back equal after A->B->A, but at B only in the webhook's annotations (``seen_at_b``).
HIDDEN_AT_B = "kept only in the webhook's annotations"
REPORTED = crd_diff.REPORTED  # shown, not judged: printer columns, short names, ...
UNDECIDED = ""


@dataclass(eq=False)  # a change is one row of the table: compared by identity
class Change:
    crd: str
    transition: int  # index of the release upgraded to (i+1)
    version: str  # the version whose schema changed ("" for the CRD as a whole)
    path: str  # the schema path ("" for the CRD as a whole)
    kind: str  # the class: "enum value removed", "required added", ...
    detail: str  # old -> new, as a person reads it
    parts: tuple[str, ...] = ()  # the path split: keys, "[]" for items, "*" for map values
    old: dict = field(default_factory=dict)  # the old schema node at the path
    new: dict = field(default_factory=dict)  # the new one
    values: tuple = ()  # class-specific: removed enum values, the new bound, ...
    decision: str = UNDECIDED
    evidence: str = ""
    keys: tuple[str, ...] = ()  # the CRD spec's JSON paths this row accounts for

    @property
    def subject(self) -> str:
        where = f" {self.version}" if self.version else ""
        return f"{self.crd}{where} {self.path}".rstrip()

    def decide(self, decision: str, evidence: str) -> None:
        self.decision, self.evidence = decision, evidence

    def as_json(self) -> dict:
        return {
            "transition": (
                "candidate"
                if self.kind == ONE_VERSION
                else f"release {self.transition}->{self.transition + 1}"
            ),
            "crd": self.crd,
            "version": self.version,
            "path": self.path,
            "change": self.kind,
            "detail": self.detail,
            "decision": self.decision or NOT_PROVEN,
            "evidence": self.evidence or "not decided by the run",
        }


def between(
    previous: Release, release: Release, crd: str, ignored: Counter | None = None
) -> list[Change]:
    """Every difference of ``crd``'s spec from ``previous`` to ``release`` (``crd_diff``),
    each a row; documentation-only differences are counted in ``ignored``."""
    if crd not in previous.crds or crd not in release.crds:
        return []
    docs = ignored if ignored is not None else Counter()
    old_spec, new_spec = previous.crds[crd]["spec"], release.crds[crd]["spec"]
    found = [_change(crd, release.index, row) for row in crd_diff.rows(old_spec, new_spec, docs)]
    return found + _storage_under_none(previous, release, crd)


def on_the_crd(change: Change) -> bool:
    """Whether the old objects of the CRD decide ``change`` (not objects built for it): a
    change to the CRD as a whole, one that only lets more in, or one no rule classifies."""
    return (
        not change.version
        or change.decision == REPORTED  # decided from the manifests: nothing to exercise
        or change.kind in crd_diff.WHOLE_CRD
        or change.kind in crd_diff.PROBED
        or change.kind in schema_rules.LOOSENED
        or change.kind == schema_rules.UNCLASSIFIED
    )


def _change(crd: str, t: int, row: schema_rules.Row) -> Change:
    change = Change(
        crd,
        t,
        row.version,
        spell(row.parts),
        row.kind,
        row.detail,
        row.parts,
        row.old,
        row.new,
        row.values,
        keys=row.keys,
    )
    change.decision, change.evidence = row.decision, row.evidence
    return change


def _root(entry: dict) -> dict:
    return (entry.get("schema") or {}).get("openAPIV3Schema") or {}


def spell(parts: tuple[str, ...]) -> str:
    text = ""
    for part in parts:
        text += part if part == "[]" else (f".{part}" if text else part)
    return text


def between_versions(release: Release, crd: str, a: str, b: str) -> list[Change]:
    """The paths an object written at ``a`` holds that ``b``'s schema cannot hold as they
    are (absent there, or of another type): each one a webhook must carry across, and
    strategy None loses."""
    found = []
    for path, text in schemas.grouped_differences(release, crd, a, b):
        parts = _parts(path)
        found.append(
            Change(
                crd,
                release.index,
                f"{a}->{b}",
                path,
                ONE_VERSION,
                text,
                parts,
                _node_at(_root(release.entry(crd, a)), parts),
                {},
            )
        )
    return found


def _storage_under_none(previous: Release, release: Release, crd: str) -> list[Change]:
    """A new storage version under strategy None: objects stored at the old one are read
    and rewritten at the new one as they are, so they hold fields it cannot, and meet every
    rule it tightens (a field it requires, a narrower enum)."""
    before, after = previous.storage(crd), release.storage(crd)
    if before == after or release.strategy(crd) != "None" or before not in release.names(crd):
        return []
    if before not in previous.served(crd):
        return []
    found = []
    differing = schemas.grouped_differences(release, crd, before, after)
    for path, text in differing:
        parts = _parts(path)
        node = _node_at(_root(previous.entry(crd, before)), parts)
        found.append(
            Change(
                crd,
                release.index,
                before,
                path,
                "storage version changed under None",
                f"storage {before} -> {after}: {text}",
                parts,
                node,
                {},
            )
        )
    old_root = _root(previous.entry(crd, before))
    new_root = _root(release.entry(crd, after))
    for row in schema_walk.walk(old_root, new_root, before, "", Counter()):
        change = _change(crd, release.index, row)
        change.keys = ()  # two versions compared, not two releases: no spec path of the diff
        if change.kind in ("field removed", "type changed") or on_the_crd(change):
            continue  # the rows above: what the new storage version cannot hold
        if any(diff.at_or_under(change.path, top) for top, _ in differing):
            # Below a field the rows above name (an array at the old version, an object at
            # the new: upjet's v1beta1 -> v1beta2): no object at the old version holds this
            # path, and every one holding its field is that row's.
            continue
        if change.kind == schema_rules.SAME_MEANING:
            continue
        change.detail = f"at {after}, the new storage version: {change.detail}"
        found.append(change)
    return found


def _parts(path: str) -> tuple[str, ...]:
    parts: list[str] = []
    for piece in path.split("."):
        while piece.endswith("[]"):
            piece = piece[:-2]
            if piece:
                parts.append(piece)
            parts.append("[]")
            piece = ""
        if piece:
            parts.append(piece)
    return tuple(parts)


def _node_at(root: dict, parts: tuple[str, ...]) -> dict:
    node = root
    for part in parts:
        if part == "[]":
            node = node.get("items") or {}
        elif part == "*":
            node = node.get("additionalProperties") or {}
        else:
            node = (node.get("properties") or {}).get(part) or {}
    return node


def node_at(entry: dict, parts: tuple[str, ...]) -> dict:
    """The schema node of a ``spec.versions`` entry at ``parts``."""
    return _node_at(_root(entry), parts)
