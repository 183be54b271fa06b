"""The gate's shipped examples, run as a user runs them (``python -m crdharness gate``), each
on a control plane of its own: the verdict and the evidence the issue promises."""

import json
import re
from pathlib import Path

import psutil
import pytest

from crdharness.binaries import assets, versions
from tests.gate_cli import report_of, run_gate

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "gate"
pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def gate(
    tmp_path: Path, example: str, env: dict | None = None, report_in: str = ""
) -> tuple[int, dict, str]:
    """Run the gate on an example; return its exit code, its report (the one in
    ``report_in``, a sub-directory, for a gate over several Kubernetes versions) and output."""
    artifacts = tmp_path / "gate"
    tmp_path.mkdir(parents=True, exist_ok=True)
    result = run_gate(EXAMPLES / example, artifacts, cwd=tmp_path, env=env)
    return (
        result.returncode,
        report_of(result, artifacts / report_in / "report.json"),
        result.stdout,
    )


def checks(report: dict) -> dict[str, dict]:
    return {f"{c['check']}[{c['subject']}]": c for c in report["checks"]}


def failed(report: dict) -> set[str]:
    return {key for key, c in checks(report).items() if c["status"] == "FAIL"}


def passing_upgrade(tmp_path: Path, example: str) -> tuple[dict, str, dict]:
    """The gate on a two-release example that must exit 0 with its upgrade check passing:
    its report, its output and that check."""
    code, report, output = gate(tmp_path, example)
    assert code == 0, output[-3000:]
    upgrade = checks(report)["upgrade[release 1->2]"]
    assert upgrade["status"] == "pass", upgrade
    return report, output, upgrade


def test_the_documented_crontab_with_the_reference_webhook_passes(tmp_path):
    code, report, output = gate(tmp_path, "crontab-webhook/gate.yaml")
    assert code == 0, output[-3000:]
    assert report["verdict"] == "PASS" and failed(report) == set()
    found = checks(report)
    assert found["round-trip[crontabs.gate.example.com v1beta1->v1]"]["counts"]["compared"] > 0
    assert found["webhook-conduct[webhook]"]["counts"]["reviews"] > 0
    assert "crdharness upgrade gate" in output  # the terminal summary
    # The webhook carries each path the versions differ in: one object each, all kept.
    rows = {(c["version"], c["path"]): c["decision"] for c in report["version_pair_differences"]}
    assert rows == {
        ("v1beta1->v1", "hostPort"): "cleared",
        ("v1->v1beta1", "host"): "cleared",
        ("v1->v1beta1", "port"): "cleared",
    }


def test_objects_written_under_the_older_kubernetes_read_the_same_under_the_newer(tmp_path):
    code, report, output = gate(
        tmp_path, "crontab-webhook/gate-across-kubernetes.yaml", report_in="k8s-1.36"
    )
    assert code == 0, output[-3000:]
    upgrade = checks(report)["kubernetes-upgrade[1.36->1.37]"]
    assert upgrade["status"] == "pass", upgrade
    assert upgrade["counts"]["objects"] > 30 and upgrade["counts"]["reads"] > 60
    assert "v1.37.2 exactly as under v1.36.4; stored bytes untouched" in upgrade["evidence"]
    newer = json.loads((tmp_path / "gate" / "k8s-1.37" / "report.json").read_text())
    assert newer["verdict"] == "PASS"
    assert not [c for c in newer["checks"] if c["check"] == "kubernetes-upgrade"]


def test_a_lossy_converter_fails_and_names_the_path(tmp_path):
    code, report, _ = gate(tmp_path, "crontab-lossy/gate.yaml")
    assert code != 0
    assert failed(report) == {
        "round-trip[crontabs.gate.example.com v1->v1beta1]",
        "round-trip[crontabs.gate.example.com v1beta1->v1]",
    }
    for key in failed(report):
        assert "image" in checks(report)[key]["evidence"]
    shown = list((tmp_path / "gate" / "objects").glob("*.round-trip*.yaml"))
    assert shown, "the failing objects are written as YAML"
    assert any("image:" in path.read_text() for path in shown)


def test_a_loss_the_project_allows_passes_and_is_listed_with_its_reason(tmp_path):
    code, report, output = gate(tmp_path, "crontab-lossy/gate-allowed.yaml")
    assert code == 0, output[-3000:]
    for pair in ("v1->v1beta1", "v1beta1->v1"):
        round_trip = checks(report)[f"round-trip[crontabs.gate.example.com {pair}]"]
        assert "allowed differences" in round_trip["evidence"]
        assert any(n.startswith("image (image moved") for n in round_trip["allowed"])


def test_strategy_none_with_a_renamed_field_fails_the_schema_check(tmp_path):
    code, report, _ = gate(tmp_path, "rename-none/gate.yaml")
    assert code != 0
    strategy = checks(report)["schemas-vs-strategy[widgets.gate.example.com]"]
    assert strategy["status"] == "FAIL"
    assert "spec.colour exists at v1 but not at v2" in "\n".join(strategy["details"])
    # ... and the sample shows it on data: its colour does not survive v1 -> v2 -> v1.
    assert (
        "spec.colour" in checks(report)["round-trip[widgets.gate.example.com v1->v2]"]["evidence"]
    )
    # Each path the versions differ in has its own object and its own row.
    rows = {(c["version"], c["path"]): c["decision"] for c in report["version_pair_differences"]}
    assert rows == {("v1->v2", "spec.colour"): "proven", ("v2->v1", "spec.color"): "proven"}


def test_status_written_through_the_subresource_survives_a_faithful_webhook(tmp_path):
    code, report, output = gate(tmp_path, "backup-webhook/gate.yaml")
    assert code == 0, output[-3000:]
    assert (
        checks(report)["round-trip[backups.gate.example.com v1->v1alpha1]"]["counts"]["compared"]
        > 0
    )


def test_a_webhook_that_drops_status_conditions_fails_and_names_them(tmp_path):
    code, report, _ = gate(tmp_path, "backup-webhook/gate-drops-conditions.yaml")
    assert code != 0
    assert failed(report) == {
        "round-trip[backups.gate.example.com v1->v1alpha1]",
        "round-trip[backups.gate.example.com v1alpha1->v1]",
    }
    # v1 is stored: a spec update at v1alpha1 loses the conditions written at v1.
    spec_update = checks(report)["round-trip[backups.gate.example.com v1->v1alpha1]"]
    assert "status.conditions" in spec_update["evidence"]
    # The user's sample is shown by the name the user gave it (the gate names its copy anew).
    back = checks(report)["round-trip[backups.gate.example.com v1alpha1->v1]"]
    assert "your sample nightly: sent at v1alpha1" in back["objects"], back["objects"]


def test_objects_refused_by_the_users_admission_webhook_are_counted_not_findings(tmp_path):
    code, report, output = gate(tmp_path, "admission/gate.yaml")
    assert code == 0, output[-3000:]
    refused = report["refused_objects"].get("refused by an admission webhook", 0)
    assert refused > 0
    assert "spec.size" in report["refused_examples"]["refused by an admission webhook"]


def test_mutated_samples_reach_the_round_trips_past_an_admission_webhook(tmp_path):
    code, report, output = gate(tmp_path, "admission/gate-two-versions.yaml")
    assert code == 0, output[-3000:]
    for pair in ("v1->v2", "v2->v1"):
        round_trip = checks(report)[f"round-trip[widgets.gate.example.com {pair}]"]
        assert round_trip["status"] == "pass" and round_trip["counts"]["compared"] >= 10
    # Without samples nothing drawn from the schema alone gets past the webhook: never a pass.
    (tmp_path / "alone").mkdir()
    code, report, _ = gate(tmp_path / "alone", "admission/gate-two-versions-no-samples.yaml")
    assert code == 2  # the gate's own want of objects: not proven, never a finding
    for pair in ("v1->v2", "v2->v1"):
        round_trip = checks(report)[f"round-trip[widgets.gate.example.com {pair}]"]
        assert round_trip["status"] == "not proven"
        assert round_trip["evidence"].startswith("not proven: no object could be created")
        assert "objects refused (100 %), by: " in round_trip["evidence"]


@pytest.fixture(scope="module")
def agnhost_binary() -> Path:
    # Built from the same Kubernetes module as kube-apiserver (seconds with a warm module cache).
    return assets.agnhost(versions.resolve(None))


def test_agnhost_as_the_users_webhook_passes(tmp_path, agnhost_binary):
    code, report, output = gate(
        tmp_path, "crontab-agnhost/gate.yaml", {"AGNHOST": str(agnhost_binary)}
    )
    assert code == 0, output[-3000:]
    assert report["verdict"] == "PASS"
    assert checks(report)["webhook-conduct[webhook]"]["counts"]["reviews"] > 0
    # Started through sh -> unshare -> sh: the whole process group went with the gate.
    leftovers = [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if str(agnhost_binary) in " ".join(p.info["cmdline"] or [])
    ]
    assert leftovers == []


def test_a_three_release_history_passes_when_release_2_ships_a_migration(tmp_path):
    code, report, output = gate(tmp_path, "backup-history/gate.yaml")
    assert code == 0, output[-3000:]
    found = checks(report)
    migration = found["migration[release 2]"]["evidence"]
    assert migration.startswith("Kubernetes' StorageVersionMigration")
    assert "etcd keys at v1, storedVersions ['v1']" in migration
    assert report["stored_versions_after_release"] == {
        "release 1": {"backups.gate.example.com": ["v1alpha1"]},
        "release 2": {"backups.gate.example.com": ["v1"]},
        "release 3": {"backups.gate.example.com": ["v1"]},
    }
    assert found["deprecation[release 2->3]"]["status"] == "pass"  # unserved after deprecation
    upgrade = found["upgrade[release 1->2]"]["evidence"]
    assert "etcd keys untouched" in upgrade and "written again" in upgrade
    assert found["deprecation[release 2]"]["evidence"].startswith(
        "Warning header on backups.gate.example.com v1alpha1"
    )


def test_without_a_shipped_migration_the_still_stored_version_blocks_its_removal(tmp_path):
    # What clusters really do: nothing migrates, storedVersions keeps v1alpha1, and the
    # release that removes it is refused. (The gate used to migrate on its own and pass.)
    code, report, _ = gate(tmp_path, "backup-history/gate-no-migration.yaml")
    assert code != 0
    assert failed(report) == {"migration[release 2->3]", "install[release 3]"}
    migration = checks(report)["migration[release 2->3]"]
    assert (
        "clusters that still store v1alpha1 reject this revision with 422"
        in (migration["evidence"])
    )
    details = "\n".join(migration["details"])
    assert "v1alpha1 has been in status.storedVersions since release 1 stored it" in details
    assert "a conversion path to v1 exists" in details and "migrate: rewrite" in details
    assert "must remain in spec.versions" in details  # the API server's own words
    assert report["stored_versions_after_release"]["release 2"] == {
        "backups.gate.example.com": ["v1alpha1", "v1"]
    }
    # Every planned check is in the report, decided: none left showing pass without evidence.
    assert all(c["status"] != "pass" or c["evidence"] for c in report["checks"])
    # Contained: the failure bundle is under --artifacts, not in the harness's checkout.
    assert list((tmp_path / "gate").glob("failure-bundle-*/kube-apiserver.log"))


def test_removing_a_migrated_version_breaks_server_side_apply_of_old_objects(tmp_path):
    # kubernetes/kubernetes#111937, as knative/operator#1184 shipped it: storage migrated and
    # storedVersions trimmed, the removal is accepted, yet managedFields still name the version.
    code, report, _ = gate(tmp_path, "backup-history/gate-removed-after-migration.yaml")
    assert code != 0
    assert failed(report) == {"upgrade[release 2->3]"}
    upgrade = checks(report)["upgrade[release 2->3]"]
    assert "server-side apply of the same content at v1: 500" in upgrade["evidence"]
    assert any(
        "keep that version in spec.versions with served: false" in line
        for line in (upgrade["details"])
    )
    assert checks(report)["migration[release 2->3]"]["status"] == "pass"


def test_the_projects_own_migration_command_runs_after_its_release(tmp_path):
    code, report, output = gate(tmp_path, "backup-history/gate-migrate-command.yaml")
    assert code == 0, output[-3000:]
    migration = checks(report)["migration[release 2]"]["evidence"]
    assert migration.startswith("the project's command")
    assert "storedVersions ['v1']" in migration


def test_a_bundle_of_two_crds_in_one_group_is_gated_crd_by_crd(tmp_path):
    code, report, output = gate(tmp_path, "bundle/gate.yaml")
    assert code != 0
    assert failed(report) == {"migration[release 2->3]", "install[release 3]"}, output[-3000:]
    found = checks(report)
    assert (
        "snapshots.bundle.gate.example.com: clusters that still store v1alpha1"
        in (found["migration[release 2->3]"]["evidence"])
    )
    # Schedules, which keeps v1alpha1 listed, went on: its objects were read and written;
    # snapshots' objects were never upgraded, so the row is no pass (outside trial, 43).
    upgrade = found["upgrade[release 2->3]"]
    assert upgrade["status"] == "not proven" and "written again" in upgrade["evidence"]
    assert "snapshots.bundle.gate.example.com refused at install" in upgrade["evidence"]
    # A deprecated version whose schema requires spec: checked on objects it accepts.
    assert found["deprecation[release 2]"]["status"] == "pass"


def test_a_release_refused_for_several_crds_names_them_all_in_its_headline(tmp_path):
    code, report, output = gate(tmp_path, "bundle/gate-both-removed.yaml")
    assert code != 0
    assert failed(report) == {"migration[release 2->3]", "install[release 3]"}, output[-3000:]
    found = checks(report)
    both = "schedules.bundle.gate.example.com, snapshots.bundle.gate.example.com"
    assert found["install[release 3]"]["evidence"] == (
        f"the API server refused or does not serve 2 CRDs: {both} (each one's message below)"
    )
    assert found["migration[release 2->3]"]["evidence"] == (
        f"{both}: clusters that still store v1alpha1 reject this revision with 422: ship a "
        "release that migrates first"
    )
    (tmp_path / "migrated").mkdir()
    code, report, output = gate(tmp_path / "migrated", "bundle/gate-migrated.yaml")
    assert code == 0, output[-3000:]
    assert "a rewrite of every object" in checks(report)["migration[release 2]"]["evidence"]


def test_old_objects_written_again_read_back_unchanged(tmp_path):
    code, report, output = gate(tmp_path, "crontab-webhook/gate-history.yaml")
    assert code == 0, output[-3000:]
    upgrade = checks(report)["upgrade[release 1->2]"]
    assert upgrade["status"] == "pass"
    assert "all accepted and read back unchanged" in upgrade["evidence"]


def test_a_webhook_loss_is_round_trips_finding_once_never_debt_nor_the_upgrades(tmp_path):
    # The same CRD twice, with a webhook that drops `image`: the webhook's doing, so the
    # round trips fail naming it (not release 1's debt: the gate runs the candidate's webhook
    # under both), and `upgrade` (nothing the CRD changed) passes, noting the loss.
    code, report, output = gate(tmp_path, "crontab-lossy/gate-history.yaml")
    assert code == 1, output[-3000:]
    assert report["debt"] == [], report["debt"]
    assert "candidate's webhook under both releases" in report["debt_not_evaluated"]
    round_trip = checks(report)["round-trip[crontabs.gate.example.com v1beta1->v1]"]
    assert round_trip["status"] == "FAIL" and "image" in round_trip["evidence"]
    upgrade = checks(report)["upgrade[release 1->2]"]
    assert upgrade["status"] == "pass", upgrade
    assert any(
        "not a change of this release" in line and "image" in line for line in upgrade["details"]
    ), upgrade["details"]


def test_a_webhook_that_breaks_in_the_candidate_fails_the_upgrade_naming_the_field(tmp_path):
    # Release 1 ran its own faithful webhook; the candidate's drops `image`. The CRD is the
    # same: the loss is the webhook change's, so `upgrade` fails naming it, and the round
    # trips (the candidate's own webhook) too; release 1's round trips lost nothing: no debt.
    code, report, output = gate(tmp_path, "release-webhook/gate-breaks.yaml")
    assert code == 1, output[-3000:]
    upgrade = checks(report)["upgrade[release 1->2]"]
    assert upgrade["status"] == "FAIL", upgrade
    assert "image: lost" in upgrade["evidence"], upgrade["evidence"]
    assert not any("not a change of this release" in d for d in upgrade["details"])
    assert {
        "upgrade[release 1->2]",
        "round-trip[crontabs.gate.example.com v1beta1->v1]",
    } <= failed(report)
    round_trip = checks(report)["round-trip[crontabs.gate.example.com v1beta1->v1]"]
    assert "image" in round_trip["evidence"]
    assert report["debt"] == [] and "webhook under both" not in report["debt_not_evaluated"]
    assert report["hazards"] == [], report["hazards"]


def test_a_webhook_fixed_in_the_candidate_passes_the_upgrade_with_old_losses_as_hazards(
    tmp_path,
):
    # Release 1's own webhook dropped `image`; the candidate's is fixed. What release 1's
    # writes lost under its own webhook is its hazard; nothing more is lost under release 2.
    report, output, upgrade = passing_upgrade(tmp_path, "release-webhook/gate-fixes.yaml")
    assert not any("not a change of this release" in d for d in upgrade["details"])
    assert report["hazards"], "release 1's losses are listed as its hazards"
    assert all(
        h.startswith("release 1: crontabs.gate.example.com written again at ")
        and "through release 1's own webhook" in h
        and "loses image" in h
        for h in report["hazards"]
    ), report["hazards"]
    assert "hazards of earlier releases (not findings)" in output
    assert failed(report) == set(), failed(report)


def test_objects_a_fix_does_not_reach_are_said_apart_and_a_write_storing_what_they_read_is_none(
    tmp_path,
):
    # Release 1's webhook kept `image` in an annotation at v1beta1 (storage); the candidate's
    # keeps the field and still reads that annotation back at v1 (where it now shows).
    report, _output, upgrade = passing_upgrade(tmp_path, "release-webhook/gate-stored.yaml")
    # Old objects read no worse, but not as new ones do: release 1's hazard, with the field.
    stored = [
        h
        for h in report["hazards"]
        if "without what the same object(s) written under release 2 hold" in h
    ]
    assert len(stored) == 1 and "read at v1beta1" in stored[0], report["hazards"]
    assert ": image (e.g. " in stored[0], stored
    # A write at v1 stores the image the object read there: no loss (it reads the same at v1).
    assert any(
        d.startswith("stored as it reads:") and "image now stored as it reads at v1" in d
        for d in upgrade["details"]
    ), upgrade["details"]
    # The webhook's annotation now shows at v1: its own, listed apart.
    assert any("crontab.example.com/image" in n for n in upgrade["own_annotations"]), upgrade
    assert failed(report) == set(), failed(report)


def test_a_loss_a_releases_own_webhook_already_made_is_its_debt(tmp_path):
    # Both webhooks drop `image`: release 1 ran its own, so its round trips' losses are known
    # (not "the candidate's webhook under both releases"): the candidate's same losses are
    # release 1's debt, listed apart; the upgrade loses nothing release 1 had not lost.
    code, report, output = gate(tmp_path, "release-webhook/gate-still-lossy.yaml")
    assert code == 0, output[-3000:]
    assert "webhook under both" not in report["debt_not_evaluated"]
    owed = {(d["release"], d["check"], d["subject"], tuple(d["paths"])) for d in report["debt"]}
    assert owed == {
        (1, "round-trip", "crontabs.gate.example.com v1beta1->v1", ("image",)),
        (1, "round-trip", "crontabs.gate.example.com v1->v1beta1", ("image",)),
    }, report["debt"]
    assert checks(report)["upgrade[release 1->2]"]["status"] == "pass"
    assert any("through release 1's own webhook" in h for h in report["hazards"])


def test_an_object_grown_by_the_gates_own_writes_is_release_1s_hazard_not_release_2s(tmp_path):
    # The same CRD twice under a webhook that doubles an annotation on every conversion: the
    # gate's own writes under release 1 grow some objects until release 1 itself can no longer
    # read them. They are set apart (release 1's hazard), so release 2 is not blamed for
    # them: install passes, and the upgrade is no finding (too few objects left: not proven).
    code, report, output = gate(tmp_path, "crontab-webhook/gate-grows.yaml")
    assert code == 1, output[-3000:]
    assert checks(report)["install[release 2]"]["status"] == "pass", output[-3000:]
    upgrade = checks(report)["upgrade[release 1->2]"]
    assert upgrade["status"] != "FAIL", upgrade
    set_apart = [h for h in report["hazards"] if "set apart (deleted)" in h]
    assert set_apart and all(h.startswith("release 1: crontabs.") for h in set_apart)
    # The webhook's own doing is said where it belongs: its answers, and the annotation it
    # changes on the objects carrying it (in both directions: the webhook's own annotation, as
    # a user applies again what they read, comes back changed).
    assert failed(report) == {
        "webhook-conduct[webhook]",
        "round-trip[crontabs.gate.example.com v1beta1->v1]",
        "round-trip[crontabs.gate.example.com v1->v1beta1]",
    }, failed(report)
    assert (tmp_path / "gate" / "report.md").stat().st_size < 200_000


def test_misconduct_release_1s_own_webhook_already_shows_is_its_debt(tmp_path):
    # Both releases' webhooks double an annotation: the oversized answers release 1's own
    # webhook gave on the same kind of review are its debt, listed apart, not a finding.
    code, report, output = gate(tmp_path, "release-webhook/gate-grows.yaml")
    assert code != 1, output[-3000:]
    conduct = checks(report)["webhook-conduct[webhook]"]
    assert conduct["status"] == "pass", conduct
    # One kind per version the oversized answers went to (the objects kept as stored are
    # read at v1 too).
    assert re.match(
        r"release 1's debt, not a finding: [12] kinds? of misbehaving", conduct["evidence"]
    ), conduct
    owed = [d for d in report["debt"] if d["check"] == "webhook-conduct"]
    assert owed and any("more reviews alike" in d["evidence"] for d in owed), owed
    assert all("metadata.annotations: " in d["evidence"] for d in owed), owed
    assert checks(report)["install[release 2]"]["status"] == "pass"


def test_an_added_optional_field_keeps_old_objects_writable(tmp_path):
    code, report, output = gate(tmp_path, "narrowed/gate.yaml")
    assert code == 0, output[-3000:]
    assert "all accepted" in checks(report)["upgrade[release 1->2]"]["evidence"]


def test_a_new_required_field_fails_the_upgrade_on_every_write_of_old_objects(tmp_path):
    code, report, _ = gate(tmp_path, "narrowed/gate-required.yaml")
    assert code != 0
    assert failed(report) == {"upgrade[release 1->2]"}
    upgrade = checks(report)["upgrade[release 1->2]"]
    assert "cannot be written under release 2" in upgrade["evidence"]
    details = "\n".join(upgrade["details"])
    assert "spec.owner: Required value" in details
    # 1.37 ratchets validation: unchanged old objects are still accepted; re-creating the same
    # content (a restore, a re-apply) is what the server refuses, and the finding says so.
    assert "created again (dry run, as a restore or re-apply would) at v1: 422" in details
    assert "sample printer-jam at v1:" in details


def test_a_sample_the_release_before_refused_too_is_its_hazard_not_the_upgrades(tmp_path):
    # (The outside trial on metallb: every BGPPeer sample was refused by both releases, for a
    # schema both share, and the upgrade was blamed.)
    code, report, output = gate(tmp_path, "narrowed/gate-sample-refused-before.yaml")
    assert code == 0, output[-3000:]
    assert failed(report) == set()
    hazards = "\n".join(report["hazards"])
    assert "refuses your sample server-room-flood already: 422" in hazards, hazards
    assert 'Unsupported value: "urgent"' in hazards
    # the sample both accept still counts, refused only by neither
    assert "printer-jam" not in hazards


def test_a_refusal_of_a_generated_object_is_a_finding_too(tmp_path):
    # An object release 1 accepted and release 2 refuses fails the upgrade, whatever made it.
    code, report, _ = gate(tmp_path, "narrowed/gate-required-generated-only.yaml")
    assert code == 1
    upgrade = checks(report)["upgrade[release 1->2]"]
    assert upgrade["status"] == "FAIL"
    assert "spec.owner: Required value" in upgrade["evidence"]
    # The new field is a row too: the refusal names its path, but adding a field refuses
    # nothing, so it is cleared (saying whose finding that is), never proven.
    assert changes(report) == {
        ("spec.owner", "required added"): "proven",
        ("spec.owner", "field added"): "cleared",
    }
    assert "another change's" in evidence(report, "spec.owner", "field added")


def changes(report: dict) -> dict[tuple[str, str], str]:
    """The report's "what changed" table: (path, class) -> decision."""
    return {(c["path"], c["change"]): c["decision"] for c in report["changes"]}


def evidence(report: dict, path: str, change: str) -> str:
    return next(
        c["evidence"] for c in report["changes"] if (c["path"], c["change"]) == (path, change)
    )


def test_changes_old_objects_already_satisfy_are_cleared_on_the_server(tmp_path):
    code, report, output = gate(tmp_path, "tightened/gate.yaml")
    assert code == 0, output[-3000:]
    # Every difference is a row: what only lets more in is decided on the old objects.
    assert changes(report) == {
        ("spec", "rule added"): "cleared",
        ("spec.owner", "field added"): "cleared",
        ("spec.size", "enum widened"): "cleared",
        ("spec.name", "bound loosened"): "cleared",
    }
    assert "all accepted and unchanged" in evidence(report, "spec", "rule added")
    assert "verdict: PASS" in output


def test_an_enum_value_removed_inside_status_conditions_fails_the_upgrade(tmp_path):
    code, report, _ = gate(tmp_path, "tightened/gate-status-enum.yaml")
    assert code == 1
    assert failed(report) == {"upgrade[release 1->2]"}
    assert changes(report) == {("status.conditions[].type", "enum value removed"): "proven"}
    proof = evidence(report, "status.conditions[].type", "enum value removed")
    # Ratcheting lets the unchanged status through on the object itself: the proof is the
    # same status written anew, as a controller setting its conditions would.
    assert "written through /status to a new copy" in proof
    assert 'Unsupported value: "Progressing"' in proof


def test_a_new_rule_forbidding_an_old_field_fails_and_an_allowance_excuses_it(tmp_path):
    code, report, _ = gate(tmp_path, "tightened/gate-rule.yaml")
    assert code == 1
    assert changes(report) == {("spec", "rule added"): "proven"}
    assert "legacyMode is no longer supported" in evidence(report, "spec", "rule added")
    code, report, output = gate(tmp_path / "allowed", "tightened/gate-rule-allowed.yaml")
    assert code == 0, output[-3000:]
    assert changes(report) == {("spec", "rule added"): "allowed"}
    upgrade = checks(report)["upgrade[release 1->2]"]
    assert any("our validating webhook has refused legacyMode" in a for a in upgrade["allowed"])


def test_a_new_rule_refusing_a_listed_literal_beside_others_fails(tmp_path):
    code, report, output = gate(tmp_path, "tightened/gate-list-rule.yaml")
    assert code == 1, output[-3000:]
    assert changes(report) == {("spec.tags", "rule added"): "proven"}
    assert 'a "*" tag stands alone' in evidence(report, "spec.tags", "rule added")


def test_tightened_bounds_and_pattern_are_each_proven_with_the_servers_message(tmp_path):
    code, report, _ = gate(tmp_path, "tightened/gate-bounds.yaml")
    assert code == 1
    assert changes(report) == {
        ("spec.name", "bound tightened"): "proven",
        ("spec.name", "pattern changed"): "proven",
        ("spec.replicas", "bound tightened"): "proven",
    }
    assert "may not be more than 20 bytes" in evidence(report, "spec.name", "bound tightened")
    assert "should match" in evidence(report, "spec.name", "pattern changed")
    assert "less than or equal to 10" in evidence(report, "spec.replicas", "bound tightened")


def test_a_field_required_at_a_new_storage_version_fails_for_old_objects(tmp_path):
    code, report, _ = gate(tmp_path, "tightened/gate-new-version.yaml")
    assert code == 1
    found = changes(report)
    assert found[("spec.size", "required added")] == "proven"
    assert {("", "version added"), ("", "storage version changed")} <= set(found)
    assert found[("", "version added")] == "cleared"  # a version added refuses nothing
    proof = evidence(report, "spec.size", "required added")
    assert "at v2: 422" in proof and "spec.size: Required value" in proof


def test_a_new_default_that_changes_stored_objects_fails_unless_allowed(tmp_path):
    code, report, _ = gate(tmp_path, "tightened/gate-default.yaml")
    assert code == 1
    upgrade = checks(report)["upgrade[release 1->2]"]
    assert 'with a value it did not have: spec.mode: appeared ("auto")' in upgrade["evidence"]
    assert changes(report) == {("spec.mode", "default added"): "proven"}
    code, report, output = gate(tmp_path / "allowed", "tightened/gate-default-allowed.yaml")
    assert code == 0, output[-3000:]
    assert changes(report) == {("spec.mode", "default added"): "allowed"}


def test_a_removed_default_a_value_never_stored_only_noted_unless_strict(tmp_path):
    # Release 3 takes back release 2's default: objects etcd holds without a mode read as
    # under release 1 again. Not data lost; a finding only under `strict: true`.
    code, report, output = gate(tmp_path, "default-removed/gate.yaml")
    assert code == 1, output[-3000:]
    assert failed(report) == {"upgrade[release 1->2]"}  # the default added
    later = checks(report)["upgrade[release 2->3]"]
    assert "which release 3 removed (never stored: noted, details)" in later["evidence"], later
    noted = [d for d in later["details"] if "etcd never held" in d]
    assert noted and all("spec.mode" in d for d in noted), later["details"]
    assert changes(report)[("spec.mode", "default removed")] == "cleared"
    assert "never stored it now come without it" in evidence(report, "spec.mode", "default removed")
    code, report, output = gate(tmp_path / "strict", "default-removed/gate-strict.yaml")
    assert code == 1, output[-3000:]
    later = checks(report)["upgrade[release 2->3]"]
    assert later["status"] == "FAIL" and "etcd never held" in later["evidence"], later
    assert changes(report)[("spec.mode", "default removed")] == "proven"


def test_a_removed_status_subresource_fails_on_a_status_written_through_it(tmp_path):
    code, report, output = gate(tmp_path, "lamps/gate-status-removed.yaml")
    assert code == 1, output[-3000:]
    assert failed(report) == {"upgrade[release 1->2]"}
    assert "status subresource removed" in checks(report)["upgrade[release 1->2]"]["evidence"]
    assert changes(report) == {("", "status subresource removed"): "proven"}
    proof = evidence(report, "", "status subresource removed")
    assert "status update through /status at v1: 404" in proof
    assert "a status sent through the main resource is stored" in proof


def test_an_added_status_subresource_fails_on_a_status_sent_with_the_object(tmp_path):
    code, report, output = gate(tmp_path, "lamps/gate-status-added.yaml")
    assert code == 1, output[-3000:]
    assert changes(report) == {("", "status subresource added"): "proven"}
    assert "sent through the main resource is now dropped" in evidence(
        report, "", "status subresource added"
    )


def test_a_rule_at_the_schema_root_is_a_row_proven_on_an_object_it_refuses(tmp_path):
    code, report, output = gate(tmp_path, "lamps/gate-root-rule.yaml")
    assert code == 1, output[-3000:]
    assert changes(report) == {("", "rule added"): "proven"}
    assert "red lamps are retired" in evidence(report, "", "rule added")


def test_a_removed_selectable_field_fails_the_field_selector_that_worked(tmp_path):
    code, report, output = gate(tmp_path, "lamps/gate-selectable-removed.yaml")
    assert code == 1, output[-3000:]
    assert changes(report) == {("", "selectable field removed"): "proven"}
    proof = evidence(report, "", "selectable field removed")
    assert "fieldSelector=spec.colour=green: 400" in proof


def test_documentation_is_counted_and_printer_columns_reported(tmp_path):
    code, report, output = gate(tmp_path, "lamps/gate.yaml")
    assert code == 0, output[-3000:]
    assert changes(report) == {("", "printer columns changed"): "reported"}
    assert report["documentation_ignored"] == {"release 1->2": {"description": 2}}
    md = (tmp_path / "gate" / "report.md").read_text()
    assert "2 description changes ignored (documentation only)" in md


def test_a_release_upgraded_to_itself_passes_and_its_own_hazard_is_reported_apart(tmp_path):
    code, report, output = gate(tmp_path, "tightened/gate-itself.yaml")
    assert code == 0, output[-3000:]
    assert checks(report)["upgrade[release 1->2]"]["status"] == "pass"
    assert report["changes"] == []
    # status.observed is a string with int-or-string: an integer is stored, and server-side
    # apply of that object fails under every release: release 1's hazard, not the upgrade's.
    assert any(h.startswith("release 1:") and "expected string" in h for h in report["hazards"]), (
        report["hazards"]
    )


def test_no_old_object_reaching_the_writes_is_not_proven_and_exits_2(tmp_path):
    code, report, output = gate(tmp_path, "thin/gate.yaml")
    assert code == 2, output[-3000:]
    assert report["verdict"] == "NOT PROVEN"
    upgrade = checks(report)["upgrade[release 1->2]"]
    assert upgrade["status"] == "not proven"
    assert "0 old objects reached the writes" in upgrade["evidence"]
    assert "checksum must be the serial followed by -ok" in upgrade["evidence"]
    assert changes(report) == {("spec", "rule added"): "not proven"}


def test_samples_give_the_evidence_and_the_new_rule_is_proven_on_an_old_value(tmp_path):
    code, report, _ = gate(tmp_path, "thin/gate-samples.yaml")
    assert code == 1
    assert changes(report) == {("spec", "rule added"): "proven"}
    assert "spec.tier: Invalid value: the legacy tier is retired" in evidence(
        report, "spec", "rule added"
    )
    code, report, output = gate(tmp_path / "ok", "thin/gate-samples-compatible.yaml")
    assert code == 0, output[-3000:]
    assert checks(report)["upgrade[release 1->2]"]["status"] == "pass"


def test_a_not_proven_check_the_project_accepts_exits_0_and_is_listed(tmp_path):
    code, report, output = gate(tmp_path, "thin/gate-accepted.yaml")
    assert code == 0, output[-3000:]
    assert checks(report)["upgrade[release 1->2]"]["status"] == "not proven"
    assert report["verdict"] == "PASS"
    assert report["accepted_not_proven"] == [
        {
            "check": "upgrade",
            "subject": "release 1->2",
            "reason": "gadgets are only made by our controller, whose own tests cover this upgrade",
        }
    ]


def test_a_webhook_that_swaps_two_fields_both_ways_fails_the_cross_version_oracle(tmp_path):
    code, report, _ = gate(tmp_path, "crontab-webhook/gate-swapped.yaml")
    assert code != 0
    assert failed(report) == {
        "round-trip[crontabs.gate.example.com v1->v1beta1]",
        "round-trip[crontabs.gate.example.com v1beta1->v1]",
    }
    for key in failed(report):
        evidence = checks(report)[key]["evidence"]
        assert "lost or changed at" in evidence
        assert "cronSpec" in evidence or "image" in evidence


def test_a_webhook_that_drops_annotations_fails_and_names_them(tmp_path):
    code, report, _ = gate(tmp_path, "backup-webhook/gate-drops-annotations.yaml")
    assert code != 0
    found = [checks(report)[k]["evidence"] for k in failed(report)]
    assert found and all("metadata.annotations" in e for e in found), found


def test_empty_values_a_webhook_omits_are_normalised_not_findings(tmp_path):
    code, report, output = gate(tmp_path, "backup-webhook/gate-omits-empties.yaml")
    assert code == 0, output[-3000:]
    noted = [n for c in report["checks"] for n in c["normalised"]]
    assert any("status.conditions" in n for n in noted), noted


def test_under_strict_the_empty_values_a_webhook_omits_are_findings(tmp_path):
    code, report, _ = gate(tmp_path, "backup-webhook/gate-omits-empties-strict.yaml")
    assert code != 0
    found = {k: checks(report)[k]["evidence"] for k in failed(report)}
    assert found and all(k.startswith("round-trip[") for k in found), found
    assert any("status.conditions" in e for e in found.values()), found


def test_a_go_webhooks_zero_values_and_null_creation_timestamp_are_not_findings(tmp_path):
    code, report, output = gate(tmp_path, "sprinkler-webhook/gate.yaml")
    assert code == 0, output[-3000:]
    noted = [n for c in report["checks"] for n in c["normalised"]]
    assert "spec.paused: lost (was false) (zero value)" in noted, noted
    assert "spec.minutes: lost (was 0) (zero value)" in noted, noted
    conduct = checks(report)["webhook-conduct[webhook]"]
    assert conduct["counts"]["metadata_restored"] == conduct["counts"]["reviews"] > 0
    assert "metadata the server restores" in conduct["evidence"]


def test_a_field_its_versions_schema_prunes_is_the_gates_own_request_never_the_webhooks(tmp_path):
    # Issue 33: sent as it was, the sample's spec.whistle was pruned at v2 before any
    # conversion, and the round trip blamed the webhook for it.
    code, report, output = gate(tmp_path, "kettle-stale-sample/gate.yaml")
    assert code == 0, output[-3000:]
    assert not failed(report)
    assert all("spec.whistle" not in c["evidence"] for c in report["checks"])
    pruned = checks(report)["round-trip[kettles.gate.example.com v2->v1]"]["pruned"]
    assert pruned == [
        "spec.whistle: not sent at v2: v2's schema does not declare it (the API server would "
        "prune it: a loss by the gate's own request, not the webhook's)"
    ]


def test_a_go_webhook_that_loses_a_true_fails_naming_the_field(tmp_path):
    code, report, _ = gate(tmp_path, "sprinkler-webhook/gate-drops-true.yaml")
    assert code == 1
    found = {k: checks(report)[k]["evidence"] for k in failed(report)}
    assert set(found) == {
        "round-trip[sprinklers.gate.example.com v1->v1alpha1]",
        "round-trip[sprinklers.gate.example.com v1alpha1->v1]",
    }
    assert all("spec.paused" in e for e in found.values()), found
    details = [d for k in found for d in checks(report)[k]["details"]]
    assert any("spec.paused: lost (was true)" in d for d in details), details


def test_the_projects_own_expectation_holds_both_ways_through_the_webhook(tmp_path):
    code, report, output = gate(tmp_path, "crontab-webhook/gate-expect.yaml")
    assert code == 0, output[-3000:]
    expectation = checks(report)["expected-conversion[nightly-v1beta1.yaml = nightly-v1.yaml]"]
    assert expectation["evidence"] == "written at v1beta1 it reads at v1 as expected, and back"


def test_a_lossy_converter_fails_the_projects_own_expectation(tmp_path):
    code, report, _ = gate(tmp_path, "crontab-lossy/gate-expect.yaml")
    assert code != 0
    expectation = checks(report)["expected-conversion[nightly-v1beta1.yaml = nightly-v1.yaml]"]
    assert expectation["status"] == "FAIL"
    assert expectation["evidence"] == (
        "written at v1beta1, it reads at v1 otherwise than expected: image"
    )


def test_three_versions_and_a_webhook_that_loses_a_field_fail_on_every_pair(tmp_path):
    code, report, output = gate(tmp_path, "backup-three-versions/gate-drops-conditions.yaml")
    assert code == 1
    # One screen: the table, then a short block per failure, never pytest's long sections,
    # server-written metadata or whole objects.
    lines = output.splitlines()
    assert len(lines) <= 80, output
    assert "managedFields" not in output and "resourceVersion" not in output
    assert "FAILURES" not in output
    assert any(line.startswith("check ") and line.endswith("evidence") for line in lines)
    blocks = [line for line in lines if line.startswith("FAIL round-trip [")]
    assert len(blocks) == 6  # each failure named; a repeat of the same paths in one line
    assert "  paths: status.conditions" in output
    assert lines.index(blocks[0]) > max(i for i, line in enumerate(lines) if "  pass  " in line)
    pairs = {k for k in checks(report) if k.startswith("round-trip[")}
    assert len(pairs) == 6 and failed(report) == pairs
    assert all("status.conditions" in checks(report)[k]["evidence"] for k in pairs)
    # Found on every pair by the coverage objects (every declared path), before any search.
    assert all(checks(report)[k]["objects"][0].startswith("coverage object") for k in pairs)


def test_a_latency_budget_is_judged_at_p99(tmp_path):
    code, report, _ = gate(tmp_path, "crontab-webhook/gate-latency-budget.yaml")
    assert code != 0
    assert failed(report) == {"webhook-conduct[webhook]"}
    assert "over the budget of 0.001 ms" in checks(report)["webhook-conduct[webhook]"]["evidence"]
    # Five generated objects per version are below `min_objects` (10): not proven, not pass.
    round_trip = checks(report)["round-trip[crontabs.gate.example.com v1beta1->v1]"]
    assert round_trip["status"] == "not proven"
    assert re.match(r"not proven: only \d objects reached this check", round_trip["evidence"])


def test_a_run_out_of_time_leaves_what_it_could_not_decide_not_proven_and_reports_every_check(
    tmp_path,
):
    code, report, _ = gate(tmp_path, "crontab-webhook/gate-timeout.yaml")
    assert code != 0
    statuses = {key: c["status"] for key, c in checks(report).items()}
    assert "round-trip[crontabs.gate.example.com v1->v1beta1]" in statuses
    assert "webhook-conduct[webhook]" in statuses
    timed_out = [c for c in report["checks"] if "time ran out" in c["evidence"]]
    # The gate's own time running out is no finding of the release: never pass, never FAIL.
    assert timed_out and all(c["status"] == "not proven" for c in timed_out), timed_out
    assert all(c["status"] != "pass" or c["evidence"] for c in report["checks"])


def test_removing_a_version_never_deprecated_fails_the_deprecation_check(tmp_path):
    code, report, _ = gate(tmp_path, "backup-history/gate-not-deprecated.yaml")
    assert code != 0
    assert failed(report) == {"deprecation[release 2->3]"}
    assert "never deprecated" in checks(report)["deprecation[release 2->3]"]["evidence"]


def test_removing_a_version_still_stored_shows_the_servers_422(tmp_path):
    code, report, _ = gate(tmp_path, "backup-history/gate-still-stored.yaml")
    assert code != 0
    found = checks(report)
    migration = found["migration[release 2->3]"]
    assert migration["status"] == "FAIL"
    assert (
        "reject this revision with 422: ship a release that migrates first" in migration["evidence"]
    )
    assert any("must remain in spec.versions" in line for line in migration["details"])
    assert "install[release 3]" in failed(report)


@pytest.mark.container
def test_the_reference_webhook_from_its_image_passes(tmp_path):
    from crdharness.webhooks import images

    code, report, output = gate(tmp_path, "crontab-image/gate.yaml")
    assert code == 0, output[-3000:]
    assert checks(report)["webhook-conduct[webhook]"]["counts"]["reviews"] > 0
    left = images.docker("ps", "-aq", "--filter", "label=crdharness=webhook").stdout.split()
    assert left == [], "the gate's webhook container outlived the run"


LAMP = "lamps.debt.example.com"


def debt_of(report: dict) -> set[tuple[str, str, str]]:
    """(check, subject, paths) of each debt the report lists."""
    return {(d["check"], d["subject"], ",".join(d["paths"])) for d in report["debt"]}


def test_a_descriptions_only_patch_release_passes_and_lists_release_1s_debt(tmp_path):
    code, report, output = gate(tmp_path, "debt/gate-patch.yaml")
    assert code == 0, output[-3000:]
    assert report["verdict"] == "PASS" and failed(report) == set()
    debt = debt_of(report)
    assert ("schemas-vs-strategy", LAMP, "spec.wattage") in debt
    assert ("round-trip", f"{LAMP} v1alpha1->v1", "spec.wattage") in debt
    assert all(d["release"] == 1 and not d["fails"] for d in report["debt"])
    strategy = checks(report)[f"schemas-vs-strategy[{LAMP}]"]
    assert strategy["status"] == "pass"
    assert strategy["evidence"].startswith("release 1's debt by construction (unchanged: ")
    assert f"debt of release 1 (not findings): {len(report['debt'])}, see report.md" in output
    md = (tmp_path / "gate" / "report.md").read_text()
    assert "## Debt of earlier releases (not findings)" in md


def test_debt_fail_fails_the_patch_release_as_before(tmp_path):
    code, report, _ = gate(tmp_path, "debt/gate-patch-debt-fail.yaml")
    assert code == 1
    assert f"schemas-vs-strategy[{LAMP}]" in failed(report)
    assert report["debt"] and all(d["fails"] for d in report["debt"])


def test_a_second_divergence_fails_on_its_own_path_and_the_first_stays_debt(tmp_path):
    code, report, output = gate(tmp_path, "debt/gate-second.yaml")
    assert code == 1, output[-3000:]
    assert failed(report) == {
        f"schemas-vs-strategy[{LAMP}]",
        f"round-trip[{LAMP} v1alpha1->v1]",
    }
    for key in failed(report):
        found = checks(report)[key]
        # The headline is the new loss; a coverage object holds both fields, so its details
        # may show the old one beside it (listed as debt, below).
        assert "spec.shade" in found["evidence"], found
        assert "spec.wattage" not in found["evidence"], found
    debt = debt_of(report)
    assert ("schemas-vs-strategy", LAMP, "spec.wattage") in debt
    assert not [d for d in report["debt"] if "spec.shade" in d["paths"]]


def test_a_crd_gated_against_itself_passes(tmp_path):
    code, report, output = gate(tmp_path, "debt/gate-self.yaml")
    assert code == 0, output[-3000:]
    assert report["verdict"] == "PASS" and report["debt"]


def test_a_field_lost_7_levels_down_fails_naming_it_with_no_samples(tmp_path):
    # Random draws stop adding optional fields 4 levels down; the coverage objects hold every
    # declared path, and the faithful twin reaches 100% of them on every pair.
    lost = "spec.stages[].steps[].notify.http.tls.serverName"
    code, report, output = gate(tmp_path, "deep-lossy/gate-lossy.yaml")
    assert code == 1, output[-3000:]
    pairs = {"round-trip[pipelines.gate.example.com v1->v1alpha1]"}
    pairs.add("round-trip[pipelines.gate.example.com v1alpha1->v1]")
    assert failed(report) == pairs
    for key in pairs:
        # The path is named for each item holding it (a coverage object's list holds two).
        named = re.findall(r"spec\.[\w.\[\]]+", checks(report)[key]["evidence"])
        assert named and {re.sub(r"\[\d+\]", "[]", p) for p in named} == {lost}, named
        # The paths the failing object stopped short of, tried one at a time: all held.
        assert checks(report)[key]["coverage"]["exercised"] == 11, checks(report)[key]
    (tmp_path / "faithful").mkdir()
    code, report, output = gate(tmp_path / "faithful", "deep-lossy/gate.yaml")
    assert code == 0, output[-3000:]
    for key in pairs:
        assert checks(report)[key]["coverage"] == {"exercised": 11, "declared": 11, "uncovered": {}}
        assert checks(report)[key]["evidence"].endswith("schema paths 11/11 held")


def test_an_object_losing_one_field_each_way_reports_both_on_that_object(tmp_path):
    # A loss met at B used to end the round trip: the other, made on the way back, showed
    # only once the first was fixed (and an earlier release's debt was known only in part).
    code, report, output = gate(tmp_path, "deep-lossy/gate-one-way.yaml")
    assert code == 1, output[-3000:]
    channel = "spec.stages[].steps[].notify.chat.channel"
    retries = "spec.stages[].steps[].retries"
    pair = checks(report)["round-trip[pipelines.gate.example.com v1->v1alpha1]"]
    assert pair["status"] == "FAIL", pair
    # The pair's first failure is one object's: both losses in its one headline.
    evidence = re.sub(r"\[\d+\]", "[]", pair["evidence"])
    assert f"read at v1alpha1: {channel}" in evidence, evidence  # lost at B
    assert f"v1->v1alpha1->v1 changed {retries}" in evidence, evidence  # lost on the way back


def test_a_release_adding_a_version_through_a_lossy_webhook_fails_round_trip_only(tmp_path):
    # An old object written again at the new version loses spec.colour, and so does a new
    # one: the webhook's loss, reported by round-trip, not again by upgrade.
    code, report, output = gate(tmp_path, "kettle-stale-sample/gate-adds-lossy-version.yaml")
    assert code == 1, output[-3000:]
    assert failed(report) == {
        "round-trip[kettles.gate.example.com v1->v2]",
        "round-trip[kettles.gate.example.com v2->v1]",
    }
    upgrade = checks(report)["upgrade[release 1->2]"]
    assert upgrade["status"] == "pass", upgrade
    noted = [d for d in upgrade["details"] if "not served by release 1" in d]
    assert noted and all("spec.colour" in d and "so does a new object" in d for d in noted)


def test_a_webhook_answering_a_value_the_schema_refuses_fails_convertibility(tmp_path):
    # retentionDays: 0 (a Go int without omitempty) passes every update of the object, which
    # ratcheting lets through; a re-create of the object as read, as a restore would, is
    # refused. No data is lost, so round-trip passes.
    code, report, output = gate(tmp_path, "backup-webhook/gate-zero-retention.yaml")
    assert code == 1, output[-3000:]
    pairs = {"backups.gate.example.com v1->v1alpha1", "backups.gate.example.com v1alpha1->v1"}
    assert failed(report) == {f"convertibility[{pair}]" for pair in pairs}
    for pair in pairs:
        evidence = checks(report)[f"convertibility[{pair}]"]["evidence"]
        assert "created again" in evidence and "spec.retentionDays: Invalid value: 0" in evidence


def test_a_write_as_read_refused_is_convertibility_s_even_where_data_is_lost_too(tmp_path):
    # The same webhook also losing status.conditions: every object's round trip fails for
    # the loss, and the refusal at B is still convertibility's finding, not a line under it.
    example = EXAMPLES / "backup-webhook"
    text = (example / "gate-zero-retention.yaml").read_text()
    text = text.replace("crd.yaml", str(example / "crd.yaml"))
    text = text.replace("../backup-history", str(EXAMPLES / "backup-history"))
    text = text.replace("retentionDays=0", "retentionDays=0 --fault drop-field=status.conditions")
    (tmp_path / "gate.yaml").write_text(text)
    code, report, output = gate(tmp_path, str(tmp_path / "gate.yaml"))
    assert code == 1, output[-3000:]
    pairs = {"backups.gate.example.com v1->v1alpha1", "backups.gate.example.com v1alpha1->v1"}
    assert failed(report) == {f"{c}[{p}]" for c in ("round-trip", "convertibility") for p in pairs}
    for pair in pairs:
        assert "status.conditions" in checks(report)[f"round-trip[{pair}]"]["evidence"]
        refused = checks(report)[f"convertibility[{pair}]"]["evidence"]
        assert "spec.retentionDays: Invalid value: 0" in refused, refused


def test_an_old_object_its_own_release_cannot_convert_is_not_the_upgrades_finding(tmp_path):
    # The couriers' webhook fails on `every: gate-value` under both releases: such an object
    # stored under release 1 cannot be read at its other version there either. It is set
    # apart (counted), not kept to fail the upgrade; convertibility reports the webhook.
    example = EXAMPLES / "couriers"
    text = (example / "gate.yaml").read_text()
    text = text.replace(
        "crds: [crd.yaml]", f"crds: [{example / 'crd.yaml'}, {example / 'crd.yaml'}]"
    )
    (tmp_path / "gate.yaml").write_text(text)
    code, report, output = gate(tmp_path, str(tmp_path / "gate.yaml"))
    assert code == 1, output[-3000:]
    assert checks(report)["upgrade[release 1->2]"]["status"] == "pass", output[-3000:]
    assert {k for k in failed(report) if not k.startswith("convertibility[")} == set()
    refused = report["refused_objects"]
    assert any("under its own release (its conversion failed)" in why for why in refused), refused


GREENHOUSE = "greenhouses.greenhouse.gate.example.com"
GREENHOUSE_PAIRS = {
    f"round-trip[{GREENHOUSE} v1->v1alpha1]",
    f"round-trip[{GREENHOUSE} v1alpha1->v1]",
}


def assert_no_conduct_failure_for_null_creation_timestamp(report: dict) -> None:
    """Our Go webhook's ObjectMeta answers `creationTimestamp: null` for an object sent
    without one (the upgrade's writes send such): restored by the server, not misconduct."""
    conduct = checks(report)["webhook-conduct[webhook]"]
    assert conduct["status"] == "pass", conduct
    assert conduct["counts"]["metadata_restored"] > 0, conduct
    assert "metadata.creationTimestamp: appeared (null)" in conduct["details"][1], conduct


def test_our_go_webhooks_fixed_release_passes_listing_the_zero_values_go_drops(tmp_path):
    # examples/gate/greenhouse-go/webhook: built by the gate from its Go module (`build:`).
    code, report, output = gate(tmp_path, "greenhouse-go/gate.yaml")
    assert code == 0, output[-3000:]
    assert report["verdict"] == "PASS" and failed(report) == set()
    noted = {n for key in GREENHOUSE_PAIRS for n in checks(report)[key]["normalised"]}
    for zero in (
        "spec.autoVent: lost (was false) (zero value)",
        "spec.targetTemperature: lost (was 0) (zero value)",
        "status.heating: lost (was false) (zero value)",
        "status.openVents: lost (was 0) (zero value)",
    ):
        assert zero in noted, sorted(noted)
    for key in GREENHOUSE_PAIRS:
        assert checks(report)[key]["coverage"] == {"exercised": 12, "declared": 12, "uncovered": {}}
    assert_no_conduct_failure_for_null_creation_timestamp(report)


def test_our_go_webhook_release_that_loses_a_true_fails_naming_the_field(tmp_path):
    code, report, output = gate(tmp_path, "greenhouse-go/gate-release-1.yaml")
    assert code == 1, output[-3000:]
    assert failed(report) == GREENHOUSE_PAIRS  # the round trips only: not the upgrade's too
    details = {key: checks(report)[key]["details"] for key in GREENHOUSE_PAIRS}
    assert details == {
        f"round-trip[{GREENHOUSE} v1->v1alpha1]": ["spec.climate.autoVent: lost (was true)"],
        f"round-trip[{GREENHOUSE} v1alpha1->v1]": ["spec.autoVent: lost (was true)"],
    }
    assert_no_conduct_failure_for_null_creation_timestamp(report)


def test_our_go_webhook_release_that_loses_a_field_7_levels_down_fails_without_samples(
    tmp_path,
):
    lost = "spec.zones[].beds[].irrigation.drip.emitter.pressureCompensating"
    code, report, output = gate(tmp_path, "greenhouse-go/gate-release-3.yaml")
    assert code == 1, output[-3000:]
    assert failed(report) == GREENHOUSE_PAIRS
    for key in GREENHOUSE_PAIRS:
        assert lost in re.sub(r"\[\d+\]", "[]", checks(report)[key]["evidence"])
        # The objects holding the deep paths stopped at the loss; the others of them were
        # then tried one at a time, so every path is held all the same.
        assert checks(report)[key]["coverage"] == {"exercised": 12, "declared": 12, "uncovered": {}}
    assert "coverage object: created at v1 (as the API server answered):" in output  # found by one
    assert_no_conduct_failure_for_null_creation_timestamp(report)


def test_a_crd_in_hostile_yaml_scalars_is_gated_as_kubectl_reads_it(tmp_path):
    # `- =`, yes/no/on/off/y/n, 0777, 1e3, 08, timestamps and ~: PyYAML would stop at `=`
    # (exit 3) or gate other values; read as kubectl reads them, the upgrade only widens two
    # enums, each with the string kubectl reads, and everything passes.
    code, report, output = gate(tmp_path, "hostile-scalars/gate.yaml")
    assert code == 0, output[-3000:]
    assert report["verdict"] == "PASS" and failed(report) == set()
    rows = {(c["version"], c["path"], c["change"], c["detail"]) for c in report["changes"]}
    assert rows == {
        (v, path, "enum widened", detail)
        for v in ("v1alpha1", "v1")
        for path, detail in (
            ("spec.operator", '["<"] allowed too'),
            ("spec.window", '["2001-12-14 21:59:43.10 -5"] allowed too'),
        )
    }
    assert {c["decision"] for c in report["changes"]} == {"cleared"}
    for pair in ("v1->v1alpha1", "v1alpha1->v1"):
        coverage = checks(report)[f"round-trip[switches.hostile.gate.example.com {pair}]"]
        assert coverage["coverage"]["exercised"] == coverage["coverage"]["declared"] == 8


def test_a_singleton_crds_upgrade_is_decided_one_object_at_a_time(tmp_path):
    # Release 1's root rule lets a Settings object be named `cluster` only: each object is
    # created under release 1, judged under release 2 and deleted before the next (before:
    # every object the gate named itself was refused, and the upgrade stayed undecided).
    code, report, output = gate(tmp_path, "singleton/gate.yaml")
    assert code == 0, output[-3000:]
    assert report["verdict"] == "PASS" and failed(report) == set()
    upgrade = checks(report)["upgrade[release 1->2]"]
    assert upgrade["status"] == "pass", upgrade
    objects = int(re.match(r"(\d+) objects read at every served version", upgrade["evidence"])[1])
    assert objects >= 10, upgrade["evidence"]  # min_objects, each judged on its own
    assert f"{objects} etcd keys untouched" in upgrade["evidence"]
    assert {(c["path"], c["change"], c["decision"]) for c in report["changes"]} == {
        ("spec.timeZone", "field added", "cleared")
    }
    assert report["hazards"] == [] and report["refused_objects"] == {}
    for pair in ("v1->v1beta1", "v1beta1->v1"):
        assert (
            checks(report)[f"round-trip[settings.singleton.gate.example.com {pair}]"]["status"]
            == "pass"
        )
    (tmp_path / "narrowed").mkdir()
    code, report, output = gate(tmp_path / "narrowed", "singleton/gate-narrowed.yaml")
    assert code == 1, output[-3000:]
    assert failed(report) == {"upgrade[release 1->2]"}
    rows = {(c["version"], c["path"], c["change"]): c for c in report["changes"]}
    assert set(rows) == {(v, "spec.logLevel", "enum value removed") for v in ("v1beta1", "v1")}
    for row in rows.values():
        assert row["decision"] == "proven"
        assert row["evidence"].startswith("cluster: the same content created again")
        assert 'Unsupported value: "debug"' in row["evidence"]


def test_a_singleton_whose_next_release_adds_a_stored_version_is_put_back_by_re_creating(tmp_path):
    # Release 2 stores at a new v2: release 1 cannot be applied over storedVersions [v1, v2],
    # so between two objects the CRD is re-created as release 1 had it (storedVersions [v1]).
    code, report, output = gate(tmp_path, "singleton/gate-new-version.yaml")
    assert code == 0, output[-3000:]
    assert report["verdict"] == "PASS" and failed(report) == set()
    upgrade = checks(report)["upgrade[release 1->2]"]
    objects = int(re.match(r"(\d+) objects read at every served version", upgrade["evidence"])[1])
    assert objects >= 4, upgrade["evidence"]
    recreated = [
        d for d in upgrade["details"] if d.startswith("singletons: the CRD was re-created")
    ]
    assert len(recreated) == 1, upgrade["details"]
    # Once before each object (none is left over from the last: all were singletons).
    assert int(re.search(r"re-created (\d+) times", recreated[0])[1]) == objects
    assert report["stored_versions_after_release"]["release 2"] == {
        "settings.singleton.gate.example.com": ["v1", "v2"]
    }


def test_strategy_none_to_webhook_runs_the_round_trips_under_each_releases_strategy(tmp_path):
    code, report, output = gate(tmp_path, "kettle-stale-sample/gate-none-to-webhook.yaml")
    assert code == 0, output[-3000:]
    row = next(c for c in report["changes"] if c["change"] == "conversion strategy changed")
    assert row["decision"] == "cleared", row
    assert "schemas-vs-strategy" in output and "strategy Webhook" in output
    # Release 1's own round trips ran under None: its debt is knowable (none here).
    assert report["debt_not_evaluated"] == "", report["debt_not_evaluated"]
    assert checks(report)["webhook-conduct[webhook]"]["status"] == "pass"


def test_couriers_every_path_is_held_one_carrier_at_a_time_and_past_a_go_duration(tmp_path):
    # minProperties/maxProperties 1 (one carrier, one auth at a time), an RE2 flag inside a
    # group, and a plain string the webhook decodes as a Go duration: the webhook's failure
    # on "gate-value" is a true finding, and "1h" still holds the path.
    code, report, output = gate(tmp_path, "couriers/gate.yaml")
    assert code == 1, output[-3000:]
    assert failed(report) == {
        "convertibility[couriers.gate.example.com v1alpha1->v1]",
        "convertibility[couriers.gate.example.com v1->v1alpha1]",
    }
    for key in failed(report):
        assert 'time: invalid duration "gate-value"' in checks(report)[key]["evidence"]
    for pair in ("v1alpha1->v1", "v1->v1alpha1"):
        coverage = checks(report)[f"round-trip[couriers.gate.example.com {pair}]"]["coverage"]
        assert coverage == {"exercised": 8, "declared": 8, "uncovered": {}}, coverage


def test_rule_heavy_voyages_are_made_and_a_default_beside_an_exactly_one_of_rule_is_proven(
    tmp_path,
):
    # Validity that lives in CEL rules and combinators (examples/gate/voyages): the gate's
    # drawn objects are repaired against the API server's own rules before they are sent.
    code, report, output = gate(tmp_path, "voyages/gate-same.yaml")
    assert code == 0, output[-3000:]
    made = report["objects_made"]["voyages.voyages.gate.example.com"]["v1"]
    assert made["generated"] > 0 and made["accepted"] >= 0.9 * made["generated"], made
    code, report, output = gate(tmp_path / "default", "voyages/gate.yaml")
    assert code == 1, output[-3000:]
    assert changes(report) == {("spec.route.harbour", "default added"): "proven"}
