"""Which checks a gate file asks for, known before any cluster starts: each becomes one pytest
test (so ``-k``, JUnit and the terminal summary name them), and says which phase decides it."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from crdharness.binaries import versions
from crdharness.gate import subjects
from crdharness.gate.given.config import GateConfig
from crdharness.gate.given.manifests import Release, uses_webhook


@dataclass(frozen=True)
class PlannedCheck:
    check: str
    subject: str

    @property
    def phase(self) -> str:
        return subjects.CHECKS[self.check]

    @property
    def key(self) -> str:
        return subjects.key(self.check, self.subject)


def kubernetes_path(listed: list[str], running: str | None) -> list[versions.Release]:
    """The Kubernetes releases to upgrade through, oldest first, when this run is on the
    oldest of two or more listed versions (the runs on the others gate them on their own)."""
    releases = sorted({versions.resolve(v) for v in listed}, key=lambda r: r.minor_number)
    if len(releases) < 2 or versions.resolve(running) != releases[0]:
        return []
    return releases


def plan(
    config: GateConfig,
    releases: list[Release],
    upgrade_through: Sequence[versions.Release] = (),
    unchanged: Collection[str] = (),
) -> list[PlannedCheck]:
    """``unchanged``: the candidate's CRDs the release did not change (``evidence.unchanged``):
    each one row, and without ``full`` none of its own checks."""
    planned = [PlannedCheck("install", subjects.release(r.index)) for r in releases]
    for previous, release in itertools.pairwise(releases):
        transition = subjects.transition(release.index)
        planned.append(PlannedCheck("upgrade", transition))
        ever_stored = {
            (name, r.storage(name)) for r in releases[: release.index] for name in r.crds
        }
        for name in release.crds:
            if previous.crds.get(name) and release.storage(name) != previous.storage(name):
                planned.append(PlannedCheck("migration", subjects.release(release.index)))
            dropped = [v for v in previous.names(name) if v not in release.names(name)]
            if any((name, v) in ever_stored for v in dropped):
                planned.append(PlannedCheck("migration", transition))
            if [v for v in previous.served(name) if v not in release.served(name)]:
                planned.append(PlannedCheck("deprecation", transition))
    for release in releases:
        if release.index in config.migrations:
            planned.append(PlannedCheck("migration", subjects.release(release.index)))
        if any(release.deprecated(name) for name in release.crds):
            planned.append(PlannedCheck("deprecation", subjects.release(release.index)))
    candidate = releases[-1]
    for name in candidate.crds:
        if name in unchanged:
            planned.append(PlannedCheck("unchanged", name))
            if not config.full:
                continue
        planned.append(PlannedCheck("schemas-vs-strategy", name))
        for a, b in itertools.permutations(candidate.served(name), 2):
            planned.append(PlannedCheck("round-trip", subjects.pair(name, a, b)))
            planned.append(PlannedCheck("convertibility", subjects.pair(name, a, b)))
    for expectation in config.expect:
        planned.append(PlannedCheck("expected-conversion", expectation.subject))
    if any(uses_webhook(r, config.webhook) for r in releases):
        planned.append(PlannedCheck("webhook-conduct", "webhook"))
    for older, newer in itertools.pairwise(upgrade_through):
        planned.append(
            PlannedCheck("kubernetes-upgrade", subjects.kubernetes_step(older.minor, newer.minor))
        )
    return list(dict.fromkeys(planned))  # once each, in order


# The candidate's own checks: its round trips and convertibility, of objects the gate makes
# up, and its schemas against its strategy judge the release, not a cluster's upgrade.
RELEASE_ONLY = {
    "round-trip",
    "convertibility",
    "schemas-vs-strategy",
    "expected-conversion",
    "unchanged",
}


def about_a_cluster(planned: list[PlannedCheck]) -> list[PlannedCheck]:
    """``--from-cluster``: the checks about that cluster's upgrade. Its objects are each
    written back at every served version and read at all of them by *upgrade*, against
    what the cluster's own release already does: a loss it has today is its hazard, not
    the upgrade's, which the candidate's round trips alone could not tell apart."""
    return [p for p in planned if p.check not in RELEASE_ONLY]
