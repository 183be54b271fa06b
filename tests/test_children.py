"""A gate a test started stops when the test's process dies (an xdist worker killed
mid-test once left one holding its kube-apiserver and webhook for an hour)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest
import yaml

from crdharness.polling import wait_for
from tests.gate_cli import two_version_crd

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent

# Stands for an xdist worker: runs the gate through the tests' own helper.
WORKER = textwrap.dedent("""\
    import sys
    from pathlib import Path
    from tests.gate_cli import run_gate
    run_gate(Path(sys.argv[1]), Path(sys.argv[2]))
""")

# A webhook that never answers: the gate waits for it quietly (no output that would fail on
# the dead worker's closed pipe and end the gate by accident).
SILENT_WEBHOOK = "{python} -c 'import time; time.sleep(3600)  # silent-webhook-for-test_children'"


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _silent_webhook(under: psutil.Process) -> bool:
    try:
        children = under.children(recursive=True)
        return any("silent-webhook-for-test_children" in " ".join(p.cmdline()) for p in children)
    except psutil.NoSuchProcess:
        return False


def test_a_gate_started_by_a_test_stops_when_the_test_process_is_killed(tmp_path):
    crd = two_version_crd("children.gate.example.com", "Child", {"type": "object"})
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(crd))
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text(
        f"crds: [crd.yaml]\nwebhook:\n  command: {json.dumps(SILENT_WEBHOOK)}\n"
        "  path: /convert\n  ready_timeout: 3600\n"
    )
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(gate_file), str(tmp_path / "gate")],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        parent = psutil.Process(worker.pid)
        wait_for(
            lambda: worker.poll() is None and _silent_webhook(parent),
            600,
            "the gate started by the stand-in worker to start its webhook",
        )
        started = parent.children(recursive=True)
        assert any(p.name() == "kube-apiserver" for p in started), started
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        # The gate stops its children on SIGTERM, each with a grace period (longer on a loaded
        # machine). A gate that never stops fails here: one did on a loaded CI run, its proxy's
        # accept loop held by a connection that never sent its TLS hello (test_gate_proxy).
        wait_for(
            lambda: not [p for p in started if _alive(p)],
            300,
            "the gate and everything it started to stop after its parent was killed",
            last_seen=lambda: str([(p.pid, p.name()) for p in started if _alive(p)]),
        )
    finally:
        if worker.poll() is None:
            worker.kill()
