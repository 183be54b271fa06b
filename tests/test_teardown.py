"""Nothing outlives a run: processes, ports and the workspace are gone however it ends.

Each test runs a small pytest session in a child process, against a real local control
plane, ends it one way (pass, fail, SIGINT, SIGTERM, SIGKILL) and then checks the machine.
"""

from __future__ import annotations

import base64
import json
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from crdharness.polling import wait_for
from crdharness.processes import is_alive
from tests.children import dies_with_parent
from tests.inner_session import inner_env, inner_pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

INNER_TEST = textwrap.dedent("""\
    import json, os
    from pathlib import Path
    from crdharness.polling import wait_for

    def test_inner(controllers):  # the session's cluster with kube-controller-manager too
        cluster = controllers
        p = cluster.processes
        info = {"workspace": str(cluster.workspace), "pids": list(p.pids.values()),
                "guardian": p.guardian_pid, "ports": p.ports,
                "kubeconfig": str(cluster.kubeconfig)}
        Path(os.environ["INFO"]).write_text(json.dumps(info))
        mode = os.environ["MODE"]
        assert mode != "fail", "failing on purpose"
        if mode == "wait":
            wait_for(lambda: False, 600, "the outer test to signal this process", interval=0.2)
""")


def inner_tmpdir(tmp_path: Path) -> Path:
    """The inner session's temporary directory: whatever it leaves there was left behind."""
    return tmp_path / "tmpdir"


def run_inner(tmp_path: Path, request, mode: str, *extra: str) -> tuple[subprocess.Popen, Path]:
    info = tmp_path / "info.json"
    args = inner_pytest(tmp_path, INNER_TEST, *extra)
    k8s_version = request.config.getoption("--k8s-version")
    if k8s_version:
        args += ["--k8s-version", k8s_version]
    inner_tmpdir(tmp_path).mkdir()
    proc = subprocess.Popen(
        args,
        cwd=tmp_path,
        env=inner_env(tmp_path, INFO=str(info), MODE=mode, TMPDIR=str(inner_tmpdir(tmp_path))),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # Interruptible like a session in a terminal: a shell without job control starts
        # background commands with SIGINT ignored, and the child would inherit that (seen when
        # CI itself was started with `&`: the inner pytest never noticed the SIGINT).
        preexec_fn=_interruptible_and_dies_with_parent,
    )
    return proc, info


def _interruptible_and_dies_with_parent() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    dies_with_parent()


def wait_for_cluster(proc: subprocess.Popen, info: Path) -> dict:
    def ready():
        if proc.poll() is not None:
            raise AssertionError(f"inner pytest ended early:\n{proc.stdout.read()}")
        return info.exists() and json.loads(info.read_text())

    return wait_for(ready, 300, "the inner session's cluster to start", retry=(ValueError,))


def port_is_free(port: int) -> bool:
    """Nothing listens on ``port`` (a server left behind would). Whether it can be bound is
    no test: another program's client connection may use the same number as its own
    ephemeral port meanwhile, which is no leftover of the run."""
    return not any(
        c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN
        for c in psutil.net_connections("tcp")
    )


def left_in_tmpdir(info: dict) -> list[str]:
    # pytest keeps its own basetemp (pytest-of-<user>) on purpose; anything else is a leftover,
    # such as the key files the Kubernetes client writes from a kubeconfig.
    tmpdir = Path(info["workspace"]).parent
    return sorted(p.name for p in tmpdir.iterdir() if not p.name.startswith("pytest-of-"))


def assert_nothing_left(info: dict) -> None:
    everything = [*info["pids"], info["guardian"]]
    wait_for(
        lambda: not any(is_alive(p) for p in everything),
        60,
        f"processes {everything} to exit",
        last_seen=lambda: str([p for p in everything if is_alive(p)]),
    )
    wait_for(
        lambda: not Path(info["workspace"]).exists(),
        30,
        f"workspace {info['workspace']} to be removed",
    )
    wait_for(
        lambda: all(port_is_free(p) for p in info["ports"]),
        30,
        f"ports {info['ports']} to be free",
        last_seen=lambda: str([p for p in info["ports"] if not port_is_free(p)]),
    )
    wait_for(
        lambda: not left_in_tmpdir(info),
        30,
        "the inner session's temporary directory to be empty",
        last_seen=lambda: str(left_in_tmpdir(info)),
        retry=(OSError,),  # an entry removed while it is listed
    )


@pytest.mark.parametrize(("mode", "exit_code"), [("pass", 0), ("fail", 1)])
def test_session_end_stops_everything(tmp_path, request, mode, exit_code):
    proc, info = run_inner(tmp_path, request, mode)
    output, _ = proc.communicate()
    assert proc.returncode == exit_code, output
    assert_nothing_left(json.loads(info.read_text()))


@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["SIGINT", "SIGTERM", "SIGKILL"]
)
def test_interrupted_session_stops_everything(tmp_path, request, signum):
    proc, info_path = run_inner(tmp_path, request, "wait")
    info = wait_for_cluster(proc, info_path)
    assert all(is_alive(p) for p in info["pids"])
    proc.send_signal(signum)
    proc.communicate()
    assert proc.returncode != 0
    assert_nothing_left(info)


def test_keep_cluster_leaves_it_running_until_down(tmp_path, request):
    proc, info_path = run_inner(tmp_path, request, "pass", "--keep-cluster")
    output, _ = proc.communicate()
    assert proc.returncode == 0, output
    assert "cluster kept running: KUBECONFIG=" in output
    info = json.loads(info_path.read_text())
    try:
        assert all(is_alive(p) for p in info["pids"])
        assert Path(info["kubeconfig"]).exists()
    finally:
        down = subprocess.run(
            [sys.executable, "-m", "crdharness", "down", info["workspace"]],
            capture_output=True,
            text=True,
            check=False,
        )
    assert down.returncode == 0, down.stderr
    assert_nothing_left(info)


def assert_no_private_key_in(texts: list[str], workspace: Path) -> None:
    """Neither a PEM key nor any line of the run's own keys (PEM or base64) was logged."""
    keys = [k.read_bytes() for k in workspace.rglob("*.key")]
    assert keys, f"no keys found under {workspace}"
    needles = ["PRIVATE KEY"]
    for key in keys:
        needles.append(base64.b64encode(key).decode()[:48])
        needles += [line for line in key.decode().splitlines() if "-----" not in line][:2]
    for text in texts:
        found = [n for n in needles if n in text]
        assert not found, f"private key material logged: {found[0][:20]}…"


def test_failure_writes_a_bundle_and_keeps_the_cluster_on_failure(tmp_path, request):
    proc, info_path = run_inner(tmp_path, request, "fail", "--keep-cluster=on-failure")
    output, _ = proc.communicate()
    assert proc.returncode == 1, output
    info = json.loads(info_path.read_text())
    try:
        assert "cluster kept running: KUBECONFIG=" in output
        assert all(is_alive(p) for p in info["pids"])
        (line,) = [x for x in output.splitlines() if "[crdharness] failure bundle: " in x]
        bundle = Path(line.split("failure bundle: ", 1)[1].strip())
        assert {
            "kube-apiserver.log",
            "etcd.log",
            "crds.yaml",
            "objects.yaml",
            "etcd-stored-versions.yaml",
        } <= {p.name for p in bundle.iterdir()}
        assert (bundle / "kube-apiserver.log").stat().st_size > 0
        assert_no_private_key_in(
            [output, *(p.read_text(errors="replace") for p in bundle.rglob("*") if p.is_file())],
            Path(info["workspace"]),
        )
    finally:
        subprocess.run(
            [sys.executable, "-m", "crdharness", "down", info["workspace"]],
            capture_output=True,
            text=True,
            check=False,
        )
    assert_nothing_left(info)
    shutil.rmtree(bundle)


def test_passing_run_writes_no_bundle(tmp_path, request):
    proc, _ = run_inner(tmp_path, request, "pass")
    output, _ = proc.communicate()
    assert proc.returncode == 0, output
    assert "failure bundle" not in output


XDIST = ("-n", "2", "--dist", "each")  # each worker runs the test: both need the cluster


@pytest.mark.parametrize(
    "signum", [None, signal.SIGINT, signal.SIGKILL], ids=["end", "SIGINT", "SIGKILL"]
)
def test_shared_control_plane_ends_with_the_run(tmp_path, request, signum):
    """Under xdist the workers share one control plane, owned by the run's controller: it
    is stopped when the run ends however it ends, also when the controller is killed and its
    workers outlive it for a moment."""
    proc, info_path = run_inner(tmp_path, request, "pass" if signum is None else "wait", *XDIST)
    if signum is None:
        output, _ = proc.communicate()
        assert proc.returncode == 0, output
        assert "attached to the run's shared control plane (session)" in output
        info = json.loads(info_path.read_text())
    else:
        info = wait_for_cluster(proc, info_path)
        proc.send_signal(signum)
        proc.communicate()
    assert_nothing_left(info)


def test_reuse_cluster_keeps_it_for_the_next_run_until_down(tmp_path, request):
    first, info_path = run_inner(tmp_path, request, "pass", "--reuse-cluster")
    output, _ = first.communicate()
    assert first.returncode == 0, output
    assert "no kept control plane to reuse" in output
    info = json.loads(info_path.read_text())
    try:
        second = subprocess.run(
            inner_pytest(tmp_path, INNER_TEST, "--reuse-cluster"),
            cwd=tmp_path,
            env=inner_env(
                tmp_path, INFO=str(info_path), MODE="pass", TMPDIR=str(inner_tmpdir(tmp_path))
            ),
            capture_output=True,
            text=True,
            check=False,
        )
        assert second.returncode == 0, second.stdout + second.stderr
        assert f"reusing the control plane kept in {info['workspace']}" in second.stderr
        assert json.loads(info_path.read_text())["pids"][:2] == info["pids"][:2]
    finally:
        subprocess.run(
            [sys.executable, "-m", "crdharness", "down", info["workspace"]],
            capture_output=True,
            text=True,
            check=False,
        )
    assert_nothing_left(info)
