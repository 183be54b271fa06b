"""The install floor (issue 42): on a history of two releases, CRDs where nothing is judged
are not installed at all. Installing and waiting for some 2,000 unchanged
CRDs twice was most of a large provider's run before anything was judged; each still gets its
"unchanged: documentation only" row, and the install rows say what was not installed.

Nothing is judged of a CRD when, without ``--full``, it is listed only (``evidence.unchanged``:
identical but for documentation, under strategy None) and no check of the history sends it a
request. So a CRD is left out only when all of these hold:

- exactly two releases: with more, the releases before the last two write objects of every CRD
  and the upgrades between them judge those (``GateContext.writes_for``);
- not ``--full``, not ``--from-cluster`` (the cluster's release is judged whole), no
  ``kubernetes:`` upgrade (it LISTs every CRD of the candidate under each Kubernetes), no
  ``migrate:`` (a shipped migration runs over every CRD and counts its etcd keys);
- the CRD is unchanged, and so is every CRD of its group, or only in ways its group's CRDs
  cannot feel: under strategy None the API server stores, serves and converts each CRD on its
  own; what a group's CRDs share is their names (kind, plural, short names, list kind must
  not clash within a group, ``NamesAccepted``), so a group where a CRD is added or dropped,
  or changes its ``names``, is installed whole, and one where CRDs change otherwise keeps
  only those installed (upjet v2.6.0: 650 of 966 CRDs installed were unchanged neighbours);
- none converts through a webhook under either release: a webhook is shared beyond what the
  manifests show (``unchanged.group_changed`` writes objects of such CRDs when a neighbour
  changed, and one webhook may serve several groups): such groups are installed whole;
- none has a deprecated version (*deprecation* sends requests to it under release 1);
- no ``expect:`` entry is about one of them (it writes its object in the candidate phase);
- each is small beside the API server's limits (``SIZE``): documentation is the one thing
  that changed, and it adds bytes, the one thing of an unchanged CRD the API server could
  then refuse.

What the history reads of such a CRD without it installed, ``status.storedVersions``, is what
the API server keeps for a CRD created under release 1 and applied again unchanged: its
storage version alone (``stored_versions``).
"""

from __future__ import annotations

import json
from collections.abc import Collection

from crdharness.gate.evidence import unchanged
from crdharness.gate.given.config import GateConfig
from crdharness.gate.given.manifests import Release
from crdharness.gate.run import shards

# etcd refuses a write over 1.5 MiB (its --max-request-bytes default), the API server a body
# over 3 MiB: a CRD of more than 1 MiB is installed, whatever changed in it.
SIZE = 1024 * 1024


def not_installed(
    config: GateConfig,
    releases: list[Release],
    same: Collection[str],
    *,
    from_cluster: bool = False,
    kubernetes_upgrade: bool = False,
) -> dict[str, str]:
    """The CRDs the history does not install (-> their API group); ``same``: the candidate's
    unchanged CRDs (``unchanged.crds``)."""
    if (
        len(releases) != 2
        or config.full
        or from_cluster
        or kubernetes_upgrade
        or config.migrations
        or not same
    ):
        return {}
    members: dict[str, list[str]] = {}
    for name in shards.all_crds(releases):
        members.setdefault(shards.group_of(releases, name), []).append(name)
    left_out: dict[str, str] = {}
    for group, names in members.items():
        quiet = [
            n
            for n in names
            if _nothing_judged(config, releases, same, n)
            and not (config.expect and shards.expectations_of(config.expect, releases, [n]))
        ]
        if len(quiet) == len(names) or _names_settled(releases, names):
            left_out |= dict.fromkeys(quiet, group)
    return left_out


def _names_settled(releases: list[Release], names: list[str]) -> bool:
    """Whether every CRD of a group is in both releases with the same ``spec.names``: then
    no CRD of the group can clash with a neighbour's names that it did not clash with before."""
    previous, candidate = releases
    return all(
        n in previous.crds
        and n in candidate.crds
        and previous.crds[n]["spec"].get("names") == candidate.crds[n]["spec"].get("names")
        for n in names
    )


def _nothing_judged(
    config: GateConfig, releases: list[Release], same: Collection[str], name: str
) -> bool:
    previous, candidate = releases
    if name not in same or name not in previous.crds:
        return False
    if unchanged.webhook_converts(
        previous, name, previous.webhook or config.webhook
    ) or unchanged.webhook_converts(candidate, name, config.webhook):
        return False
    if previous.deprecated(name):
        return False
    return all(len(json.dumps(r.crds[name])) <= SIZE for r in releases)


def stored_versions(name: str, applied: Release | None) -> list[str]:
    """``status.storedVersions`` of a CRD left out, once ``applied`` is (None: before any
    release): the storage version alone, as the API server sets it when it creates the CRD
    and keeps it while the same storage version is applied again."""
    return [] if applied is None else [applied.storage(name)]


def changed_groups(left_out: dict[str, str], crds_changed: Collection[str]) -> dict[str, str]:
    """``left_out`` without the groups of ``crds_changed`` (CRDs the history found a change
    in, ``evidence.changes``): a guard, should the diff ever see a change the unchanged rule
    does not; such a group is installed whole."""
    groups = {left_out[n] for n in crds_changed if n in left_out}
    return {n: g for n, g in left_out.items() if g not in groups}


def clause(left_out: dict[str, str]) -> str:
    """What an install row says of the CRDs left out ("" when none): one clause, with no
    "; " in it and each count before its noun, so the merge of shards' rows adds them up."""
    if not left_out:
        return ""
    crds = len(left_out)
    return (
        f"{crds} CRD{'s' if crds != 1 else ''} not installed, as nothing of them is judged "
        "(each unchanged: documentation only, strategy None, not deprecated, its group's "
        "names unchanged, `--full` installs them): neither their install nor their "
        "storedVersions is checked (report.json's install details name their groups)"
    )


def by_group(left_out: dict[str, str]) -> list[str]:
    """One detail line per group left out."""
    counts: dict[str, int] = {}
    for group in left_out.values():
        counts[group] = counts.get(group, 0) + 1
    return [
        f"not installed: group {g}, {n} CRD{'s' if n != 1 else ''}, nothing of them judged"
        for g, n in counts.items()
    ]
