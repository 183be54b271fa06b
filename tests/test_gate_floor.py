"""The install floor (``run.floor``): on a history of two releases, the CRDs nothing is judged
of are not installed; decided from the manifests alone, no cluster."""

from __future__ import annotations

import copy
from pathlib import Path

from crdharness.gate.evidence import unchanged
from crdharness.gate.given.config import GateConfig, Migration, WebhookSpec
from crdharness.gate.given.manifests import Release
from crdharness.gate.reporting import merge
from crdharness.gate.run import floor, shards
from crdharness.scenarios import crds


def crd(plural: str, group: str, *, deprecated: bool = False, max_length: int = 8) -> dict:
    schema = {
        "type": "object",
        "description": f"A {plural}.",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"unit": {"type": "string", "maxLength": max_length}},
            }
        },
    }
    versions = [
        {
            "name": v,
            "served": True,
            "storage": v == "v1",
            "deprecated": deprecated and v == "v1beta1",
            "schema": {"openAPIV3Schema": copy.deepcopy(schema)},
        }
        for v in ("v1", "v1beta1")
    ]
    return crds.manifest(group, plural.title(), versions, plural=plural)


def reworded(manifest: dict) -> dict:
    """The same CRD, its descriptions rewritten: documentation only."""
    new = copy.deepcopy(manifest)
    for version in new["spec"]["versions"]:
        version["schema"]["openAPIV3Schema"]["description"] = "Reworded."
    return new


QUIET = "quiet.floor.example.com"  # a group the release did not change
BUSY = "busy.floor.example.com"  # a group with one changed CRD
NEIGHBOUR = {f"meters.{BUSY}": BUSY}  # BUSY's unchanged CRD: nothing of it judged


def two_groups(**old_extra) -> list[Release]:
    old = [
        crd("dials", QUIET, **old_extra),
        crd("knobs", QUIET),
        crd("gauges", BUSY),
        crd("meters", BUSY),
    ]
    new = [reworded(m) for m in old]
    new[2] = crd("gauges", BUSY, max_length=4)  # a schema change
    return [
        Release(0, "r1", {m["metadata"]["name"]: m for m in old}),
        Release(1, "r2", {m["metadata"]["name"]: m for m in new}),
    ]


def config_of(**keys) -> GateConfig:
    return GateConfig(Path("gate.yaml"), [[Path("r1")], [Path("r2")]], **keys)


def left_out(releases: list[Release], config: GateConfig | None = None, **how) -> dict[str, str]:
    config = config or config_of()
    same = unchanged.crds(releases, config.webhook)
    return floor.not_installed(config, releases, same, **how)


def test_a_group_with_nothing_judged_is_not_installed():
    found = left_out(two_groups())
    assert found == {f"dials.{QUIET}": QUIET, f"knobs.{QUIET}": QUIET, f"meters.{BUSY}": BUSY}
    # what the history reads of them instead: the storage version alone, once created
    assert floor.stored_versions(f"dials.{QUIET}", None) == []
    assert floor.stored_versions(f"dials.{QUIET}", two_groups()[1]) == ["v1"]


def test_in_a_group_with_a_changed_crd_only_the_changed_one_is_installed():
    # Under strategy None the API server serves each CRD on its own: an unchanged neighbour
    # of a changed CRD is left out, as long as no CRD of the group changes its names.
    releases = two_groups()
    assert f"meters.{BUSY}" in unchanged.crds(releases, None)
    assert left_out(releases)[f"meters.{BUSY}"] == BUSY
    assert f"gauges.{BUSY}" not in left_out(releases)


def test_a_group_where_a_crd_changes_its_names_is_installed_whole():
    # A new short name may clash with a neighbour's names (NamesAccepted): the group's CRDs
    # are installed together, so the API server says.
    releases = two_groups()
    releases[1].crds[f"gauges.{BUSY}"]["spec"]["names"]["shortNames"] = ["mt"]
    assert not {n for n in left_out(releases) if n.endswith(BUSY)}
    assert set(left_out(releases)) == {f"dials.{QUIET}", f"knobs.{QUIET}"}


def test_a_group_with_a_crd_added_or_dropped_is_installed_whole():
    added = two_groups()
    new = crd("switches", QUIET)
    added[1].crds[new["metadata"]["name"]] = new
    assert left_out(added) == NEIGHBOUR  # a new CRD's names may clash with its group's
    dropped = two_groups()
    del dropped[1].crds[f"knobs.{QUIET}"]
    assert left_out(dropped) == NEIGHBOUR


def test_a_crd_converted_through_a_webhook_is_installed():
    # Unchanged behind the same webhook: listed only, yet installed: a webhook is shared
    # beyond what the manifests show. Its neighbour under strategy None is not.
    hook = WebhookSpec(command=["{binary}", "--port={port}"], convert=[f"dials.{QUIET}"])
    releases = two_groups()
    releases[0] = Release(0, "r1", releases[0].crds, hook)
    config = config_of(webhook=hook)
    assert f"dials.{QUIET}" in unchanged.crds(releases, hook)
    assert f"knobs.{QUIET}" in unchanged.crds(releases, hook)
    assert left_out(releases, config) == {f"knobs.{QUIET}": QUIET} | NEIGHBOUR


def test_full_installs_everything():
    assert left_out(two_groups(), config_of(full=True)) == {}


def test_only_a_history_of_two_releases_without_a_cluster_upgrade_or_migration():
    releases = two_groups()
    third = Release(2, "r3", {n: reworded(m) for n, m in releases[1].crds.items()})
    assert left_out([*releases, third]) == {}  # release 1's objects are upgraded twice
    assert left_out(releases, from_cluster=True) == {}
    assert left_out(releases, kubernetes_upgrade=True) == {}
    shipped = config_of(migrations={1: Migration("rewrite")})
    assert left_out(releases, shipped) == {}


def test_a_deprecated_version_keeps_its_crd_installed():
    # deprecation sends it requests
    assert left_out(two_groups(deprecated=True)) == {f"knobs.{QUIET}": QUIET} | NEIGHBOUR


def test_a_change_the_diff_finds_puts_its_group_back():
    found = left_out(two_groups())
    assert floor.changed_groups(found, {f"knobs.{QUIET}"}) == NEIGHBOUR
    assert floor.changed_groups(found, {f"gauges.{BUSY}"}) == found
    assert f"dials.{QUIET}" in floor.changed_groups(found, {f"meters.{BUSY}"})


def test_a_crd_near_the_api_servers_limits_is_installed():
    releases = two_groups()
    big = releases[1].crds[f"knobs.{QUIET}"]
    big["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = "x" * floor.SIZE
    assert left_out(releases) == {f"dials.{QUIET}": QUIET} | NEIGHBOUR


def test_a_shard_leaves_out_what_the_whole_run_leaves_out_of_its_share():
    releases = two_groups()
    whole = left_out(releases)
    for share in shards.assign(releases, 2):
        part = shards.restrict(releases, share)
        assert left_out(part) == {n: g for n, g in whole.items() if n in share}


def test_the_install_rows_say_what_was_not_installed_and_shards_add_up():
    found = {n: g for n, g in left_out(two_groups()).items() if g == QUIET}
    line = f"2 CRDs created; Established, names accepted; {floor.clause(found)}"
    assert "; 2 CRDs not installed, as nothing of them is judged" in line
    assert "; " not in floor.clause(found)  # one clause: the merge splits rows at "; "
    assert floor.by_group(found) == [
        f"not installed: group {QUIET}, 2 CRDs, nothing of them judged"
    ]
    other = line.replace("2 CRDs not", "1 CRD not")
    merged = merge._merged_evidence([line, other], merge.Order([]))
    assert merged.startswith("4 CRDs created; Established, names accepted; 3 CRDs not installed")
    assert floor.clause({}) == ""
