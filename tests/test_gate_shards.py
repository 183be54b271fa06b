"""``gate --shard K/N`` and ``gate-merge``, without a cluster: which CRDs each share gets
(deterministic, a group together, balanced by work), and the merge of shard reports
(verdicts, exit statuses 0/1/2/3, bad input in one line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crdharness.errors import HarnessError
from crdharness.gate.given.manifests import Release
from crdharness.gate.reporting import merge, report, stored
from crdharness.gate.results import CheckResult
from crdharness.gate.run import shards
from crdharness.scenarios import crds


def crd(group: str, plural: str, versions: int = 1, fields: int = 1) -> dict:
    props = {f"f{i}": {"type": "string"} for i in range(fields)}
    schema = {"type": "object", "properties": props}
    served = [crds.version(f"v{i + 1}", schema, storage=i == 0) for i in range(versions)]
    return crds.manifest(group, plural.title(), served, plural=plural)


def history(*crds: dict) -> list[Release]:
    by_name = {c["metadata"]["name"]: c for c in crds}
    return [Release(0, "release 1", dict(by_name)), Release(1, "release 2", dict(by_name))]


def changed(manifest: dict, description: str | None = None) -> dict:
    """``manifest`` as a next release ships it: a new optional field, or (``description``)
    only a new description."""
    new = json.loads(json.dumps(manifest))
    schema = new["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    if description is None:
        schema["properties"]["added"] = {"type": "string"}
    else:
        schema["description"] = description
    return new


def test_shard_arguments_are_checked_in_one_line():
    assert shards.parse("2/4") == shards.Shard(2, 4)
    for bad in ("3/2", "0/4", "1/0", "x", "1-2"):
        with pytest.raises(HarnessError) as raised:
            shards.parse(bad)
        assert "\n" not in str(raised.value) and "--shard" in str(raised.value)


def test_a_group_stays_together_and_the_split_is_deterministic():
    releases = history(
        crd("a.example.com", "apples"),
        crd("a.example.com", "apricots"),
        crd("b.example.com", "bananas"),
        crd("c.example.com", "cherries"),
    )
    split = shards.assign(releases, 2)
    assert split == shards.assign(releases, 2)  # every matrix job computes the same split
    assert sorted(n for share in split for n in share) == sorted(releases[0].crds)
    together = next(share for share in split if "apples.a.example.com" in share)
    assert "apricots.a.example.com" in together
    # More shards than groups: some are empty, none gets a CRD twice.
    wide = shards.assign(releases, 5)
    assert sum(len(s) for s in wide) == 4 and sum(1 for s in wide if not s) == 2


def test_shares_are_balanced_by_work_not_by_count():
    # One heavy CRD (three versions, a large schema) against many light ones.
    heavy = crd("heavy.example.com", "whales", versions=3, fields=60)
    light = [crd(f"g{i}.example.com", f"ants{i}") for i in range(12)]
    releases = history(heavy, *light)
    first, second = shards.assign(releases, 2)
    alone = first if "whales.heavy.example.com" in first else second
    assert alone == ["whales.heavy.example.com"]  # the light ones all go to the other
    # Many equal CRDs: shares differ by at most one CRD.
    even = shards.assign(history(*light), 4)
    assert max(map(len, even)) - min(map(len, even)) <= 1


def test_a_crd_the_release_did_not_change_weighs_only_its_install():
    # Ten documentation-only CRDs in one group, two changed CRDs of the same size in two
    # others: by schema size alone the ten would fill one share and leave both changed ones
    # (all the objects, writes and round trips) to the other.
    docs = [crd("docs.example.com", f"notes{i}", fields=20) for i in range(10)]
    apples, bananas = (
        crd("a.example.com", "apples", fields=20),
        crd("b.example.com", "bananas", fields=20),
    )
    old = {c["metadata"]["name"]: c for c in [*docs, apples, bananas]}
    new = {n: changed(c, description="now documented") for n, c in old.items()}
    new["apples.a.example.com"] = changed(apples)
    new["bananas.b.example.com"] = changed(bananas)
    releases = [Release(0, "release 1", old), Release(1, "release 2", new)]
    first, second = shards.assign(releases, 2)
    assert ("apples.a.example.com" in first) != ("bananas.b.example.com" in first)
    # The same CRDs all changed: the ten outweigh the two again, as their work says.
    for name in old:
        new[name] = changed(old[name])
    first, second = shards.assign(releases, 2)
    together = first if "apples.a.example.com" in first else second
    assert "bananas.b.example.com" in together and not any("notes" in n for n in together)


def test_a_shards_history_keeps_only_its_crds():
    releases = history(crd("a.example.com", "apples"), crd("b.example.com", "bananas"))
    kept = shards.restrict(releases, ["bananas.b.example.com"])
    assert [list(r.crds) for r in kept] == [["bananas.b.example.com"]] * 2


def test_a_shard_plans_no_release_checks_it_holds_nothing_of():
    from crdharness.gate.given.config import GateConfig
    from crdharness.gate.run import plan

    old, new = crd("a.example.com", "apples"), crd("b.example.com", "bananas")
    releases = [
        Release(0, "release 1", {old["metadata"]["name"]: old}),
        Release(1, "release 2", {n["metadata"]["name"]: n for n in (old, new)}),
    ]
    # The share holding only the CRD release 2 adds: release 1 and the upgrade from it are
    # the other share's to decide (here they could only be "not proven").
    mine = shards.restrict(releases, ["bananas.b.example.com"])
    planned = shards.planned_here(plan.plan(GateConfig(Path("g.yaml"), crds=[]), mine), mine)
    subjects = {(p.check, p.subject) for p in planned}
    assert ("install", "release 2") in subjects
    assert ("install", "release 1") not in subjects
    assert ("upgrade", "release 1->2") not in subjects


# --- the merge -----------------------------------------------------------------------------

ORDER = ["apples.a.example.com", "bananas.b.example.com"]


def shard_dir(
    tmp_path: Path, index: int, results: list[CheckResult], count: int = 2, digest: str = "d1"
) -> Path:
    run = report.Report(results, "1.37")
    run.shard = {
        "index": index,
        "count": count,
        "gate_file": "gate.yaml",
        "digest": digest,
        "crds": [ORDER[index - 1]] if index <= len(ORDER) else [],
        "order": ORDER,
        "data": stored.as_data(run),
    }
    directory = tmp_path / f"shard-{index}-{digest}-{count}"
    report.write(directory, run)
    return directory


def result(check: str, subject: str, passed: bool | None = True, evidence: str = "ok"):
    return CheckResult(check, subject, passed, evidence)


def merged(tmp_path: Path, directories: list[Path]) -> tuple[int, dict, str]:
    shard_reports = merge.load(directories)
    status = merge.write(tmp_path / "merged", merge.merge(shard_reports), shard_reports)
    out = tmp_path / "merged"
    return status, json.loads((out / "report.json").read_text()), (out / "report.md").read_text()


def pair(name: str, passed: bool | None = True, evidence: str = "ok") -> CheckResult:
    return result("round-trip", f"{name} v1->v2", passed, evidence)


def test_passing_shards_merge_to_pass_with_release_rows_added_up(tmp_path):
    one = shard_dir(
        tmp_path,
        1,
        [result("install", "release 1", True, "1 CRDs created; Established"), pair(ORDER[0])],
    )
    two = shard_dir(
        tmp_path,
        2,
        [result("install", "release 1", True, "2 CRDs created; Established"), pair(ORDER[1])],
    )
    status, data, md = merged(tmp_path, [one, two])
    assert status == 0 and data["verdict"] == "PASS"
    rows = {(c["check"], c["subject"]): c for c in data["checks"]}
    assert rows[("install", "release 1")]["evidence"] == "3 CRDs created; Established"
    assert {s for _, s in rows} == {"release 1", f"{ORDER[0]} v1->v2", f"{ORDER[1]} v1->v2"}
    assert [s["shard"] for s in data["shard"]["merged"]] == ["shard 1/2", "shard 2/2"]
    assert md.startswith("# Upgrade gate: PASS")


@pytest.mark.parametrize(
    ("first", "second", "code", "verdict"),
    [
        (True, None, 2, "NOT PROVEN"),
        (None, False, 1, "FAIL"),
        (False, True, 1, "FAIL"),
    ],
)
def test_the_worst_shard_decides(tmp_path, first, second, code, verdict):
    one = shard_dir(tmp_path, 1, [pair(ORDER[0], first, "first")])
    two = shard_dir(tmp_path, 2, [pair(ORDER[1], second, "second")])
    status, data, _ = merged(tmp_path, [one, two])
    assert (status, data["verdict"]) == (code, verdict)


def test_a_release_check_failing_in_one_shard_fails_merged_with_its_headline(tmp_path):
    one = shard_dir(tmp_path, 1, [result("install", "release 2", True, "1 CRDs applied")])
    two = shard_dir(
        tmp_path,
        2,
        [result("install", "release 2", False, f"the API server refused {ORDER[1]}: 422")],
    )
    status, data, _ = merged(tmp_path, [one, two])
    install = data["checks"][0]
    assert status == 1 and install["status"] == "FAIL"
    assert install["evidence"] == f"the API server refused {ORDER[1]}: 422"


def test_a_shard_that_could_not_run_makes_the_whole_not_run_naming_it(tmp_path, capsys):
    one = shard_dir(tmp_path, 1, [pair(ORDER[0])])
    two = tmp_path / "two"
    report.write_not_run(
        two, "kube-apiserver did not start", [], {"index": 2, "count": 2, "digest": "d1"}
    )
    status, data, _ = merged(tmp_path, [one, two])
    assert status == 3 and data["verdict"] == "NOT RUN"
    assert "shard 2/2 could not run: kube-apiserver did not start" in data["not_run"]
    # A missing report: the directory is named, and the share no report stands for.
    status, data, _ = merged(tmp_path, [one, tmp_path / "nothing"])
    assert status == 3
    assert "no report.json in" in data["not_run"] and "shard 2/2" in data["not_run"]


def test_a_finding_stands_beside_a_shard_that_could_not_run(tmp_path):
    one = shard_dir(tmp_path, 1, [pair(ORDER[0], False, "lost spec.f0")])
    two = tmp_path / "two"
    report.write_not_run(two, "no binaries", [], {"index": 2, "count": 2, "digest": "d1"})
    status, data, _ = merged(tmp_path, [one, two])
    assert status == 1 and data["verdict"] == "FAIL"
    assert "shard 2/2 could not run: no binaries" in data["notes"]


def test_reports_of_other_gate_files_or_splits_are_refused_in_one_line(tmp_path):
    one = shard_dir(tmp_path, 1, [pair(ORDER[0])])
    for other, what in (
        (shard_dir(tmp_path, 2, [pair(ORDER[1])], digest="d2"), "different gate files"),
        (shard_dir(tmp_path, 2, [pair(ORDER[1])], count=3), "a shard of 2"),
        (one, "both shard 1/2"),
    ):
        with pytest.raises(HarnessError) as raised:
            merge.load([one, other])
        assert what in str(raised.value) and "\n" not in str(raised.value)
    plain = tmp_path / "plain"
    report.write(plain, report.Report([pair(ORDER[0])], "1.37"))
    with pytest.raises(HarnessError, match="not a shard's report: run the gate with --shard"):
        merge.load([one, plain])


def test_a_share_with_no_crd_says_so_and_starts_nothing(tmp_path, capsys):
    from crdharness.gate import cli

    release = tmp_path / "crd.yaml"
    release.write_text(json.dumps(crd("a.example.com", "apples")))
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text(f"crds: [{release}, {release}]\n")
    artifacts = tmp_path / "empty"
    assert cli.main([str(gate_file), "--shard", "2/2", "--artifacts", str(artifacts)]) == 0
    assert "shard 2/2: no CRD falls to this share" in capsys.readouterr().out
    written = json.loads((artifacts / "report.json").read_text())
    assert written["shard"]["crds"] == [] and written["checks"] == []
    # Merged with nothing else, it is no verdict of its own: shard 1/2 is missing (3).
    status, data, _ = merged(tmp_path, [artifacts])
    assert status == 3 and "shard 1/2" in data["not_run"]


def test_a_bad_shard_is_one_line_before_anything_starts(tmp_path, capsys):
    from crdharness.gate import cli

    release = tmp_path / "crd.yaml"
    release.write_text(json.dumps(crd("a.example.com", "apples")))
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text(f"crds: [{release}]\n")
    assert cli.main([str(gate_file), "--shard", "3/2"]) == 3
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [
        "crdharness gate: error: --shard 3/2: K must be 1 to N (N at least 1), e.g. --shard 1/2"
    ]


def test_a_shard_reads_the_history_once(tmp_path, monkeypatch):
    # The command line reads the history to find its share and hands it to the session
    # (a provider's 4,000 files took minutes to read, twice per shard).
    from crdharness.gate import cli
    from crdharness.gate.given import manifests

    release = tmp_path / "crd.yaml"
    release.write_text(json.dumps(crd("a.example.com", "apples")))
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text(f"crds: [{release}, {release}]\n")
    reads, handed = [], []
    original = manifests.load_history
    monkeypatch.setattr(
        manifests, "load_history", lambda *a, **k: reads.append(a) or original(*a, **k)
    )
    monkeypatch.setattr(cli, "_run", lambda args, config, read=None: handed.append(read) or 0)
    assert cli.main([str(gate_file), "--shard", "1/2", "--artifacts", str(tmp_path / "a")]) == 0
    assert len(reads) == 1
    (read,) = handed
    assert list(read.releases[1].crds) == ["apples.a.example.com"]


def test_a_release_checks_clauses_about_one_crd_each_are_joined_in_run_order():
    # migration's "nothing migrates" line as two shards write it, three CRDs between them.
    order = merge.Order(["a.example.com", "b.example.com", "c.example.com"])
    said = "nothing migrates (no `migrate:` on this release): "
    first = said + "a.example.com: storedVersions ['v1']; c.example.com: storedVersions ['v1']"
    second = said + "b.example.com: storedVersions ['v1', 'v2']"
    assert merge._merged_evidence([first, second], order) == (
        said + "a.example.com: storedVersions ['v1']; b.example.com: storedVersions ['v1', "
        "'v2']; c.example.com: storedVersions ['v1']"
    )
    # Clauses that are not each about a CRD are kept as they are, shard by shard.
    assert merge._merged_evidence(["x: one; two", "x: three"], order) == "x: one; two; x: three"


def test_the_deprecation_lists_of_shards_are_one_list_and_a_shard_without_any_says_nothing():
    order = merge.Order(["queues.a.example.com", "queues.m.a.example.com", "users.b.example.com"])
    one = "Warning header on queues.a.example.com v1 (custom text: list/create/get/update)"
    two = "Warning header on users.b.example.com v1 (default text: list)"
    three = "Warning header on queues.m.a.example.com v1 (custom text: list/create/get/update)"
    merged = merge._merged_evidence([two, "no deprecated served version", one, three], order)
    assert merged == (
        "Warning header on queues.a.example.com v1 (custom text: list/create/get/update), "
        "queues.m.a.example.com v1 (custom text: list/create/get/update), "
        "users.b.example.com v1 (default text: list)"
    )
    none = "no deprecated served version"
    assert merge._merged_evidence([none, none], order) == none
