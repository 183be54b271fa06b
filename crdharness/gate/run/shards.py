"""A CI matrix job's share of the CRDs (``gate --shard K/N``): deterministic, an API group
kept together (its CRDs may share a webhook, a storage change, a bundle's install), shares
balanced by a cheap estimate of the work each CRD needs.

The engine is the CI's own matrix: each job gates its share on its own control plane, and
``gate-merge`` (``reporting.merge``) turns the jobs' reports into one verdict.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from crdharness.errors import HarnessError
from crdharness.gate import subjects
from crdharness.gate.evidence import unchanged
from crdharness.gate.given.config import Expectation, GateConfig, WebhookSpec
from crdharness.gate.given.manifests import Release, documents
from crdharness.gate.run.plan import PlannedCheck


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, as a CI matrix counts
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse(text: str) -> Shard:
    """``K/N`` with 1 <= K <= N, or a HarnessError saying what to write."""
    found = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not found:
        raise HarnessError(f"--shard {text!r}: write K/N, e.g. --shard 1/4 (the 1st of 4 shares)")
    index, count = int(found[1]), int(found[2])
    if count < 1 or not 1 <= index <= count:
        raise HarnessError(
            f"--shard {text}: K must be 1 to N (N at least 1), e.g. --shard 1/{max(count, 1)}"
        )
    return Shard(index, count)


def work(releases: list[Release], crd: str) -> int:
    """What gating ``crd`` costs, roughly: every release's served versions times the size of
    their schemas (objects are drawn, written and read per version and per schema path),
    and the candidate's version pairs again for its round trips."""
    total = 0
    for release in releases:
        if crd not in release.crds:
            continue
        served = [v for v in release.versions(crd) if v.get("served")]
        size = sum(_schema_size(v) for v in served)
        total += len(served) * size
        if release is releases[-1]:
            total += max(len(served) - 1, 0) * size
    return max(total, 1)


# What installing a CRD costs beside judging it (objects drawn, written, read, round-tripped),
# measured on provider-upjet-aws: some 0.2 s an apply against some 30 s per judged
# two-version CRD. An unchanged CRD is only installed (``evidence.unchanged``), so its work is
# its manifests' size over this: without it, a share of 280 documentation-only CRDs got as
# few judged CRDs as one of 170 (8 shares: 33 to 62 judged CRDs).
INSTALL_SHARE = 30


def installed_only(releases: list[Release], crd: str) -> int:
    """The work of a CRD that is installed and never judged: its manifests' size."""
    size = sum(
        len(json.dumps(r.crds[crd]["spec"], sort_keys=True)) for r in releases if crd in r.crds
    )
    return max(size // INSTALL_SHARE, 1)


def _schema_size(version: dict) -> int:
    schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
    return len(json.dumps(schema, sort_keys=True))


def group_of(releases: list[Release], crd: str) -> str:
    """The CRD's API group, as the last release that ships it says."""
    manifest = next(r.crds[crd] for r in reversed(releases) if crd in r.crds)
    return str(manifest["spec"]["group"])


def all_crds(releases: list[Release]) -> list[str]:
    """Every CRD of the history, in the order a whole run meets them."""
    return list(dict.fromkeys(name for release in releases for name in release.crds))


def assign(
    releases: list[Release], count: int, webhook: WebhookSpec | None = None
) -> list[list[str]]:
    """The ``count`` shares: whole groups, heaviest first, each to the lightest share so far
    (ties to the lower share; groups of equal work by name), so every job computes the same
    split. Each share lists its CRDs in the whole run's order. A CRD the release did not
    change (``webhook``: the top-level one) weighs what installing it costs, with or without
    ``--full``: the split only balances, every job computes it alike."""
    crds = all_crds(releases)
    same = unchanged.crds(releases, webhook)
    groups: dict[str, int] = {}
    for name in crds:
        group = group_of(releases, name)
        cost = installed_only(releases, name) if name in same else work(releases, name)
        groups[group] = groups.get(group, 0) + cost
    loads = [0] * count
    owner: dict[str, int] = {}
    for group, cost in sorted(groups.items(), key=lambda item: (-item[1], item[0])):
        lightest = min(range(count), key=lambda i: (loads[i], i))
        owner[group] = lightest
        loads[lightest] += cost
    return [[n for n in crds if owner[group_of(releases, n)] == i] for i in range(count)]


def share(releases: list[Release], shard: Shard, webhook: WebhookSpec | None = None) -> list[str]:
    return assign(releases, shard.count, webhook)[shard.index - 1]


def restrict(releases: list[Release], names: list[str]) -> list[Release]:
    """The history with only the CRDs ``names`` (a release may be left with none)."""
    return [r.subset([n for n in r.crds if n in names]) for r in releases]


def nothing_of(releases: list[Release]) -> set[str]:
    """The release subjects a shard's history (``restrict``ed) holds nothing of: a release
    where it has none of the CRDs, the upgrade to a release from one where it has none. The
    shards that hold those CRDs decide these checks; here they could only say "not proven"."""
    empty = {subjects.release(r.index) for r in releases if not r.crds}
    return empty | {
        subjects.transition(r.index) for r in releases[1:] if not releases[r.index - 1].crds
    }


def planned_here(planned: list[PlannedCheck], releases: list[Release]) -> list[PlannedCheck]:
    """A shard's checks: none about what it holds nothing of (``nothing_of``)."""
    skipped = nothing_of(releases)
    return [p for p in planned if p.subject not in skipped]


def expectations_of(
    expect: list[Expectation], releases: list[Release], names: list[str]
) -> list[Expectation]:
    """The ``expect:`` entries about the CRDs ``names`` (found by the group and kind their
    ``at`` object is written as): the shard that gates a CRD checks its expectations."""
    by_kind = {
        (crd["spec"]["group"], crd["spec"]["names"]["kind"]): name
        for release in releases
        for name, crd in release.crds.items()
    }
    kept = []
    for expectation in expect:
        docs = documents([expectation.at])
        first = docs[0][1] if docs else {}
        group = str(first.get("apiVersion", "")).rpartition("/")[0]
        if by_kind.get((group, str(first.get("kind")))) in names:
            kept.append(expectation)
    return kept


def meta(config: GateConfig, releases: list[Release], shard: Shard) -> dict:
    """What a shard's report says of itself (``report.json``'s ``shard``): which share of
    which gate file (its bytes' SHA-256 tells one gate file's shards from another's), its
    CRDs, and every CRD of the run in the run's order (where the merge puts each one)."""
    return {
        "index": shard.index,
        "count": shard.count,
        "gate_file": str(config.source),
        "digest": hashlib.sha256(Path(config.source).read_bytes()).hexdigest(),
        "crds": share(releases, shard, config.webhook),
        "order": all_crds(releases),
    }
