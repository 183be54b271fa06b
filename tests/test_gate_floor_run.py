"""The install floor (``run.floor``) on the real gate: a real API server and etcd, run as a
user runs it, on the repo's own ``examples/gate/unchanged`` CRDs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.gate_cli import gate_merge, report_of, run_gate

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gate" / "unchanged"
QUIET = "unchanged.gate.example.com"  # the checkup's group: documentation only
CHECKUP = f"checkups.{QUIET}"
BUSY = "floor.gate.example.com"  # the rota moved to a group of its own: changed
ROTA = f"rotas.{BUSY}"
pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def regrouped(source: str, target: Path) -> str:
    """The example's rota in a group of its own (this test's), written to ``target``."""
    manifest = yaml.safe_load((EXAMPLE / source).read_text())
    manifest["spec"]["group"] = BUSY
    manifest["metadata"]["name"] = ROTA
    target.write_text(yaml.safe_dump(manifest))
    return str(target)


def test_a_group_with_nothing_judged_is_not_installed_and_the_install_rows_say_so(tmp_path):
    gate_file = tmp_path / "gate.yaml"
    releases = [
        [str(EXAMPLE / "release-1.yaml"), regrouped("rota-1.yaml", tmp_path / "rota-1.yaml")],
        [
            str(EXAMPLE / "release-2-descriptions.yaml"),
            regrouped("rota-2.yaml", tmp_path / "rota-2.yaml"),
        ],
    ]
    gate_file.write_text(yaml.safe_dump({"crds": releases}))
    done = run_gate(gate_file, tmp_path / "gate", cwd=tmp_path)
    report = report_of(done, tmp_path / "gate" / "report.json")
    assert done.returncode == 0, done.stdout[-3000:]
    rows = {f"{c['check']}[{c['subject']}]": c for c in report["checks"]}
    for subject, verb in (("release 1", "created"), ("release 2", "applied on top")):
        install = rows[f"install[{subject}]"]
        assert install["status"] == "pass", install
        assert install["evidence"].startswith(f"1 CRDs {verb}"), install  # the rota alone
        assert "; 1 CRD not installed, as nothing of them is judged" in install["evidence"]
        assert f"not installed: group {QUIET}, 1 CRD, nothing of them judged" in install["details"]
    # The checkup keeps its one row; the rota's change is judged as ever.
    assert rows[f"unchanged[{CHECKUP}]"]["status"] == "pass"
    assert rows["upgrade[release 1->2]"]["status"] == "pass", rows["upgrade[release 1->2]"]
    assert [c["crd"] for c in report["changes"]] == [ROTA]
    # What the report shows of storedVersions: read for the rota, the storage version alone
    # (what the API server keeps) for the checkup never installed.
    stored = report["stored_versions_after_release"]
    for release in stored.values():
        assert release[CHECKUP] == ["v1"] and release[ROTA] == ["v1"], stored


def test_shards_merged_say_what_one_machine_says_of_the_crds_not_installed(tmp_path):
    # The checkup's group (documentation only) is left out; narrowed breaks, in a group of its
    # own: each shard leaves out what one machine leaves out of its share, and the merge
    # gives one machine's install rows.
    narrowed = EXAMPLE.parent / "narrowed"
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text(
        yaml.safe_dump(
            {
                "crds": [
                    [str(EXAMPLE / "release-1.yaml"), str(narrowed / "release-1.yaml")],
                    [
                        str(EXAMPLE / "release-2-descriptions.yaml"),
                        str(narrowed / "release-2-required.yaml"),
                    ],
                ]
            }
        )
    )
    whole = run_gate(gate_file, tmp_path / "one", cwd=tmp_path)
    one = report_of(whole, tmp_path / "one" / "report.json")
    assert whole.returncode == 1, whole.stdout[-3000:]
    installs = [c for c in one["checks"] if c["check"] == "install"]
    assert all("1 CRD not installed" in c["evidence"] for c in installs), installs
    for k in (1, 2):
        shard = run_gate(gate_file, tmp_path / f"shard-{k}", "--shard", f"{k}/2", cwd=tmp_path)
        report_of(shard, tmp_path / f"shard-{k}" / "report.json")
    merged = gate_merge(tmp_path, 2)
    assert merged.returncode == 1, merged.stdout + merged.stderr
    both = json.loads((tmp_path / "merged" / "report.json").read_text())
    assert {(c["check"], c["subject"]): (c["status"], c["evidence"]) for c in both["checks"]} == {
        (c["check"], c["subject"]): (c["status"], c["evidence"]) for c in one["checks"]
    }
    assert both["stored_versions_after_release"] == one["stored_versions_after_release"]
