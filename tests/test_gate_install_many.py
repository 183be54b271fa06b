"""A release of many CRDs is installed and waited for side by side (``phases.install``),
and judged as one by one: every CRD served, the rows the same. On a real control plane."""

from __future__ import annotations

from benchmarks import many_crds
from tests.gate_cli import report_of, run_gate


def test_a_release_of_many_crds_is_installed_and_every_one_served(tmp_path):
    history = many_crds.generate(24, tmp_path / "history")
    artifacts = tmp_path / "out"
    # `--full`: every CRD installed, also the groups nothing would be judged of (``run.floor``)
    done = run_gate(history.gate_file, artifacts, "--full", "--", "-k", "install", cwd=tmp_path)
    report = report_of(done, artifacts / "report.json")
    rows = {(c["check"], c["subject"]): c for c in report["checks"]}
    first, second = rows[("install", "release 1")], rows[("install", "release 2")]
    assert first["status"] == "pass", first
    assert first["evidence"].startswith("24 CRDs created; Established, names accepted"), first
    assert second["status"] == "pass", second
    assert second["evidence"].startswith("24 CRDs applied on top of the previous release"), second
    # The break many_crds plants is the upgrade's finding, no install's.
    assert not [c for c in report["checks"] if c["check"] == "install" and c["status"] != "pass"]


def test_without_full_the_crds_nothing_is_judged_of_are_not_installed(tmp_path):
    history = many_crds.generate(24, tmp_path / "history")
    artifacts = tmp_path / "out"
    done = run_gate(history.gate_file, artifacts, "--", "-k", "install", cwd=tmp_path)
    report = report_of(done, artifacts / "report.json")
    rows = {(c["check"], c["subject"]): c for c in report["checks"]}
    # Each documentation-only CRD, also beside a changed one of its group: its history
    # changes no CRD's names.
    quiet = history.docs_only
    assert quiet, "the history has no documentation-only CRD to leave out"
    for subject in ("release 1", "release 2"):
        install = rows[("install", subject)]
        assert install["status"] == "pass", install
        assert install["evidence"].startswith(f"{24 - len(quiet)} CRDs "), install
        assert (
            f"; {len(quiet)} CRDs not installed, as nothing of them is judged"
            in (install["evidence"])
        ), install


def test_the_benchmarks_history_without_its_documentation_only_crds_keeps_the_rest(tmp_path):
    # bench_gate_many --docs-cost: the same history less its documentation-only CRDs, so the
    # difference is what they cost; the changed CRDs are the same files, byte for byte.
    history = many_crds.generate(10, tmp_path / "history")
    rest = many_crds.without_docs_only(history, tmp_path / "rest")
    kept = {*history.compatible, *history.broken}
    assert rest.as_json() == {**history.as_json(), "crds": len(kept), "docs_only": 0}
    for release in ("release-1", "release-2"):
        files = sorted((tmp_path / "rest" / release).glob("*.yaml"))
        assert len(files) == len(kept)
        for file in files:
            assert file.read_text() == (history.directory / release / file.name).read_text()
    assert rest.gate_file.read_text().endswith("crds:\n  - release-1\n  - release-2\n")


def test_the_benchmark_blames_the_crds_a_failing_row_accuses_not_those_it_notes_unjudged():
    from benchmarks.gate_many import blamed

    broken, quiet = "gadget0009s.g0004.example.com", "gadget0001s.g0000.example.com"
    row = {
        "status": "FAIL",
        "subject": "release 1->2",
        "evidence": f"{broken} r1-v1-0 cannot be written under release 2: 422 ...",
        "details": [
            f"r1-v1-0: 422 {broken} ...",
            f"{quiet}: no objects written for it (unchanged: documentation only (since release "
            "1; strategy None))",
        ],
    }
    assert blamed({"checks": [row]}, [broken, quiet]) == {broken}
    row["details"].append(f"{quiet} r1-v1-0 lost spec.title")  # a finding about it: blamed
    assert blamed({"checks": [row]}, [broken, quiet]) == {broken, quiet}


def test_the_local_kube_apiserver_runs_without_watch_cache_unless_asked():
    # The watch cache takes no part in conversion, validation or storage, and costs about a
    # quarter of kube-apiserver's CPU on a release of many CRDs.
    import argparse

    from crdharness.gate import cli

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    assert cli.watch_cache_options(parser.parse_args(["gate.yaml"])) == ["--no-watch-cache"]
    assert cli.watch_cache_options(parser.parse_args(["gate.yaml", "--watch-cache"])) == []
    # kind and existing clusters run their own kube-apiserver: nothing to say to it
    assert cli.watch_cache_options(parser.parse_args(["gate.yaml", "--cluster=kind"])) == []
