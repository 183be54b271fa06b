"""Run ``python -m crdharness gate`` as a user does, in a child process, for the tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.children import dies_with_parent


def run_gate(
    gate_file: Path, artifacts: Path, *args: str, cwd: Path | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    """The gate on ``gate_file``, writing into ``artifacts``; no time limit of its own (the
    gate's ``timeout:`` bounds a run, and a slow machine is no failure)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "crdharness",
            "gate",
            str(gate_file),
            "--artifacts",
            str(artifacts),
            *args,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        check=False,
        preexec_fn=dies_with_parent,
    )


def gate_merge(tmp_path: Path, shards: int) -> subprocess.CompletedProcess:
    """``gate-merge`` of ``tmp_path/shard-1 .. shard-N`` into ``tmp_path/merged``."""
    return subprocess.run(
        [sys.executable, "-m", "crdharness", "gate-merge"]
        + [str(tmp_path / f"shard-{k}") for k in range(1, shards + 1)]
        + ["--artifacts", str(tmp_path / "merged")],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )


def report_of(done: subprocess.CompletedProcess, report_file: Path) -> dict:
    """The run's report.json; a failure quoting what the gate said when it wrote none."""
    assert report_file.exists(), (
        f"no report; the gate said:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return json.loads(report_file.read_text())


def gate_example(gate_file: Path, tmp_path: Path, *args: str) -> tuple[int, dict, str]:
    """An example's gate file run as a user runs it: (exit code, report.json, what it said)."""
    artifacts = tmp_path / "gate"
    done = run_gate(gate_file, artifacts, *args, cwd=tmp_path)
    return done.returncode, report_of(done, artifacts / "report.json"), done.stdout


def row(report: dict, check: str, subject: str) -> dict:
    """One check's row of a report."""
    return next(c for c in report["checks"] if (c["check"], c["subject"]) == (check, subject))


def two_version_crd(group: str, kind: str, schema: dict, status: bool = False) -> dict:
    """A CRD serving ``v1`` (stored) and ``v2`` with the same ``schema``, converted by a
    webhook (the gate points it at the one it runs)."""
    from crdharness.scenarios import crds

    versions = [crds.version("v1", schema), crds.version("v2", schema, storage=False)]
    if status:
        for entry in versions:
            entry["subresources"] = {"status": {}}
    manifest = crds.manifest(group, kind, versions)
    service = {"namespace": "default", "name": f"{kind.lower()}-conversion", "path": "/convert"}
    manifest["spec"]["conversion"] = {
        "strategy": "Webhook",
        "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"service": service}},
    }
    return manifest


def gate_crdconvert(
    directory: Path, crd: dict, *flags: str, generate: int
) -> tuple[subprocess.CompletedProcess, dict]:
    """The gate on ``crd`` with crdconvert (``flags``: its faults) as the webhook; the run
    and its report.json."""
    import yaml

    (directory / "crd.yaml").write_text(yaml.safe_dump(crd))
    kind = crd["spec"]["names"]["kind"]
    command = (
        "{python} -m crdconvert --host 127.0.0.1 --port {port} --tls-cert {tls_cert} "
        f"--tls-key {{tls_key}} --path /convert --identity {kind} {' '.join(flags)}"
    )
    gate_file = directory / "gate.yaml"
    gate_file.write_text(
        f"crds: [crd.yaml]\nwebhook:\n  command: {json.dumps(command)}\n  path: /convert\n"
        f"generate: {generate}\n"
    )
    artifacts = directory / "gate"
    done = run_gate(gate_file, artifacts, cwd=directory)
    return done, report_of(done, artifacts / "report.json")
