"""A status the webhook makes at B that B's schema refuses (issue 43): the round trip writes
it back on the object itself, where the API server ratchets unchanged values, and a create
ignores status, so only a status written anew on a new copy shows it (``object_round_trip``
``_status_anew``). Seen on api-gateway: a Go field without ``omitempty`` answers ``""`` where
v2alpha1's enum has no empty value. On a real control plane, through crdconvert."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import yaml

from tests.gate_cli import report_of, run_gate

SPRINKLER = Path(__file__).parent.parent / "examples" / "gate" / "sprinkler-webhook"
PHASE = {"type": "string", "enum": ["Idle", "Watering"]}
WEBHOOK = (
    "{python} -m crdconvert --host 127.0.0.1 --port {port} --tls-cert {tls_cert} "
    "--tls-key {tls_key} --path /crdconvert --identity Sprinkler"
)


def _history(tmp_path: Path, *faults: str) -> Path:
    """The sprinkler CRD (v1alpha1 and v1, v1 stored) with ``status.phase`` an enum at both
    versions, its own API group; the gate file running crdconvert with ``faults``."""
    crd = yaml.safe_load((SPRINKLER / "crd.yaml").read_text())
    group = "anew.gate.example.com"
    crd["metadata"]["name"] = f"{crd['spec']['names']['plural']}.{group}"
    crd["spec"]["group"] = group
    for version in crd["spec"]["versions"]:
        status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
        status["properties"]["phase"] = dict(PHASE)
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(crd))
    # A status without a phase, as a controller that has not set it yet leaves it.
    sample = {
        "apiVersion": f"{group}/v1",
        "kind": "Sprinkler",
        "metadata": {"name": "lawn"},
        "spec": {"zone": "lawn", "minutes": 5},
        "status": {"running": True, "runs": 3},
    }
    (tmp_path / "sample.yaml").write_text(yaml.safe_dump(sample))
    command = " ".join([WEBHOOK, *(f"--fault {shlex.quote(f)}" for f in faults)])
    gate = {"crds": ["crd.yaml"], "webhook": {"command": command, "path": "/crdconvert"}}
    gate |= {"samples": ["sample.yaml"], "generate": 10}
    (tmp_path / "gate.yaml").write_text(json.dumps(gate))
    return tmp_path / "gate.yaml"


def _rows(report: dict, check: str) -> dict[str, dict]:
    return {c["subject"].rsplit(" ", 1)[1]: c for c in report["checks"] if c["check"] == check}


def test_a_status_b_refuses_on_a_new_copy_fails_convertibility_naming_it(tmp_path):
    # Converting to v1alpha1 only, the webhook answers a missing phase as "" (which comes back
    # to v1 as a zero value: normalised, so every round trip passes).
    gate = _history(tmp_path, 'fill-field=v1alpha1:status.phase=""')
    done = run_gate(gate, tmp_path / "out", cwd=tmp_path)
    report = report_of(done, tmp_path / "out" / "report.json")
    assert done.returncode == 1, done.stdout[-3000:]
    convertible, round_trips = _rows(report, "convertibility"), _rows(report, "round-trip")
    down = convertible["v1->v1alpha1"]
    assert down["status"] == "FAIL", down
    assert "cannot have its status written anew at v1alpha1" in down["evidence"], down
    assert 'status.phase: Unsupported value: ""' in down["evidence"], down
    assert round_trips["v1->v1alpha1"]["status"] == "pass", round_trips
    # The other way, the webhook converting to v1 fills nothing: statuses written anew pass.
    up = convertible["v1alpha1->v1"]
    assert up["status"] == "pass" and "statuses also written anew" in up["evidence"], up


def test_without_the_fault_every_status_written_anew_passes(tmp_path):
    done = run_gate(_history(tmp_path), tmp_path / "out", cwd=tmp_path)
    report = report_of(done, tmp_path / "out" / "report.json")
    assert done.returncode == 0, done.stdout[-3000:]
    for row in _rows(report, "convertibility").values():
        assert row["status"] == "pass" and "statuses also written anew" in row["evidence"], row


def test_a_status_already_written_anew_gets_the_same_answer_and_one_past_the_budget_is_unknown(
    monkeypatch,
):
    # The same status on another object must not pass because it was written before (under
    # the earlier release that would say "the same write went through", and the candidate's
    # refusal of it would read as a regression: seen on api-gateway 3.1.0 -> 3.1.1).
    from types import SimpleNamespace

    from crdharness.gate.checks import status_anew, upgrade_writes
    from crdharness.gate.checks.pair_record import PairRecord

    manifest = {"spec": {"conversion": {"strategy": "Webhook"}}}
    release = SimpleNamespace(
        index=1, crds={"c": manifest}, entry=lambda crd, v: {"subresources": {"status": {}}}
    )

    def by_webhook(r, crd: str) -> bool:
        return (r.crds[crd]["spec"].get("conversion") or {}).get("strategy") == "Webhook"

    ctx = SimpleNamespace(candidate=release, statuses_anew={}, cluster=None, by_webhook=by_webhook)
    resource = SimpleNamespace(path=lambda version, namespace: f"/{version}/{namespace}")
    sent: list[dict] = []

    def anew(cluster, collection, obj, status):
        sent.append(status)
        return (422, 'status.state: Unsupported value: ""') if status.get("state") == "" else None

    monkeypatch.setattr(upgrade_writes, "status_written_anew", anew)

    def write(status: dict, seen: PairRecord):
        read = {"metadata": {"name": "x"}, "status": status}
        where = (resource, "ns")
        return status_anew.written(ctx, release, "c", where, ("v1", "v2"), read, seen, [])

    seen = PairRecord()
    assert write({"state": ""}, seen) is not None
    again = write({"state": ""}, seen)  # the same status, another object: the same answer
    assert again is not None and again.paths == frozenset({"status.state"})
    assert sent == [{"state": ""}] and seen.counts[status_anew.STATUS_ANEW] == 1
    for i in range(status_anew.STATUSES_ANEW - 1):
        assert write({"state": f"s{i}"}, seen) is None
    assert write({"state": "one more"}, seen) is None
    assert seen.counts[status_anew.NOT_ANEW] == 1  # not known: same_write notes nothing
    # An earlier release without a webhook, before a candidate with one, writes no status
    # anew: how that write would have ended is not known either.
    earlier = SimpleNamespace(
        index=0,
        crds={"c": {"spec": {}}},
        entry=lambda crd, v: {"subresources": {"status": {}}},
    )
    seen = PairRecord()
    where = (resource, "ns")
    read = {"metadata": {"name": "x"}, "status": {"state": ""}}
    assert status_anew.written(ctx, earlier, "c", where, ("v1", "v2"), read, seen, []) is None
    assert seen.counts[status_anew.NOT_ANEW] == 1
