"""A gate that could not start says so in one line and exits 3 ("could not run"), never 1
(a finding): a missing kind binary or Go toolchain, a busy port, a cluster it cannot reach,
a webhook that exits at start or refuses the gate's connections. report.md says "not run"
once; no check is reported as failed."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import textwrap
from pathlib import Path

import psutil
import pytest
import yaml

from crdharness.gate.webhook import startup
from tests import gate_cli

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "gate"
CRD = EXAMPLES / "crontab-webhook" / "crd.yaml"


def run_gate(tmp_path: Path, gate_file: Path, *args: str, env: dict | None = None):
    artifacts = tmp_path / "gate"
    return gate_cli.run_gate(gate_file, artifacts, *args, cwd=tmp_path, env=env), artifacts


def assert_could_not_run(done, artifacts: Path, *cause: str) -> str:
    """Exit 3, one line naming the cause, "not run" once in the report; returns that line."""
    output = done.stdout + done.stderr
    assert done.returncode == 3, output[-3000:]
    lines = [line for line in done.stdout.splitlines() if "could not run:" in line]
    assert len(lines) == 1, output[-3000:]
    for words in cause:
        assert words in lines[0], lines[0]
    assert "EE" not in done.stdout and "Traceback" not in output, output[-3000:]
    report = json.loads((artifacts / "report.json").read_text())
    assert report["verdict"] == "NOT RUN" and report["planned"], report
    assert "FAIL" not in (artifacts / "report.md").read_text()
    return lines[0]


def webhook_gate(tmp_path: Path, command: str, ready_timeout: int = 60) -> Path:
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text(
        f"crds: [{CRD}]\nwebhook:\n  command: {json.dumps(command)}\n"
        f"  ready_timeout: {ready_timeout}\ngenerate: 2\n"
    )
    return gate_file


def test_kind_without_its_binary(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "docker").symlink_to("/bin/true")  # a Docker client, but no kind
    env = {"PATH": f"{bare}:{Path(sys.executable).parent}", "KIND": ""}
    done, artifacts = run_gate(
        tmp_path, EXAMPLES / "crontab-webhook" / "gate.yaml", "--cluster=kind", env=env
    )
    assert_could_not_run(done, artifacts, "--cluster=kind needs the kind binary")


def test_an_existing_cluster_nobody_answers(tmp_path):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: connections are refused
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(
            textwrap.dedent(f"""\
            apiVersion: v1
            kind: Config
            clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:{port}",
                         insecure-skip-tls-verify: true}}}}]
            users: [{{name: u, user: {{token: t}}}}]
            contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
            current-context: x
            """)
        )
        done, artifacts = run_gate(
            tmp_path,
            EXAMPLES / "thin" / "gate.yaml",
            "--cluster=existing",
            env={"KUBECONFIG": str(kubeconfig)},
        )
    assert_could_not_run(done, artifacts, str(port))


@pytest.mark.e2e
def test_a_busy_api_server_port(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done, artifacts = run_gate(
            tmp_path, EXAMPLES / "thin" / "gate.yaml", "--", f"--apiserver-port={port}"
        )
    assert_could_not_run(done, artifacts, str(port))


def test_no_go_toolchain_to_build_the_binaries(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    env = {
        "PATH": f"{bare}:{Path(sys.executable).parent}",
        "CRDHARNESS_CACHE": str(tmp_path / "empty-cache"),
        "CRDHARNESS_ENVTEST_INDEX": "http://127.0.0.1:9/index.yaml",  # no archive either
    }
    done, artifacts = run_gate(tmp_path, EXAMPLES / "thin" / "gate.yaml", env=env)
    assert_could_not_run(done, artifacts, "Go toolchain is missing")


@pytest.mark.e2e
def test_a_webhook_that_exits_at_start_shows_its_last_lines_and_the_fix(tmp_path):
    command = (
        "{python} -c \"import sys; print('starting manager'); "
        "print('flag provided but not defined: -metrics-bind-address'); sys.exit(2)\""
    )
    done, artifacts = run_gate(tmp_path, webhook_gate(tmp_path, command))
    line = assert_could_not_run(done, artifacts, "exited before it was ready", "`command:`")
    assert line.endswith("{port}, {ca}, {kubeconfig})"), line
    assert "    flag provided but not defined: -metrics-bind-address" in done.stdout


def build_gate(tmp_path: Path, main_go: str) -> Path:
    """A gate file whose webhook the gate builds from a Go module of one main package."""
    module = tmp_path / "webhook"
    module.mkdir()
    (module / "go.mod").write_text("module example.com/webhook\n\ngo 1.22\n")
    (module / "main.go").write_text(main_go)
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text(
        f"crds: [{CRD}]\nwebhook:\n  build: {{go: webhook}}\n"
        "  command: '{binary} --port={port}'\ngenerate: 2\n"
    )
    return gate_file


@pytest.mark.e2e
def test_a_webhook_build_without_a_go_toolchain(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    env = {"PATH": f"{bare}:{Path(sys.executable).parent}"}  # the cluster's binaries are cached
    gate_file = build_gate(tmp_path, "package main\n\nfunc main() {}\n")
    done, artifacts = run_gate(tmp_path, gate_file, env=env)
    assert_could_not_run(done, artifacts, "webhook.build: the Go toolchain is missing")


@pytest.mark.e2e
def test_a_webhook_that_does_not_build_shows_gos_error(tmp_path):
    gate_file = build_gate(tmp_path, "package main\n\nfunc main() { notDeclared() }\n")
    done, artifacts = run_gate(tmp_path, gate_file)
    assert_could_not_run(done, artifacts, "webhook.build: `go build .`", "failed (exit 1)")
    assert "undefined: notDeclared" in done.stdout, done.stdout[-3000:]


# go build's tool runner with the linker made slower than the webhook's ready_timeout, as on
# a loaded machine (a build is machine-dependent work: never under a time limit).
# A `go` that takes 8 s more than the real one (a build longer than ready_timeout), then
# builds as it does: Go's build cache stays valid, so the build costs its 8 s and a link
# (a -toolexec wrapper changed every package's cache key: a full rebuild, ~70 CPU-s).
SLOW_GO = """#!/bin/sh
if [ "$1" = build ]; then echo built >> "$0.ran"; sleep 8; fi
exec "{go}" "$@"
"""


@pytest.mark.e2e
def test_a_webhook_build_is_not_part_of_its_ready_timeout(tmp_path):
    real_go = shutil.which("go")
    assert real_go, "the Go toolchain is a prerequisite of this test (and of CI)"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    slow = bin_dir / "go"
    slow.write_text(SLOW_GO.format(go=str(Path(real_go).resolve())))
    slow.chmod(0o755)
    greenhouse = EXAMPLES / "greenhouse-go"
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text(
        f"crds: [{greenhouse / 'crd.yaml'}]\nwebhook:\n"
        f"  build: {{go: {greenhouse / 'webhook' / 'cmd' / 'release-2'}}}\n"
        "  command: '{binary} --tls-cert={tls_cert} --tls-key={tls_key} --port={port}'\n"
        "  ready_timeout: 5\ngenerate: 2\n"
    )
    # Only `install` (the rest deselected: "not proven", exit 2), after the webhook is ready.
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done, artifacts = run_gate(tmp_path, gate_file, "--", "-k", "install", env=env)
    assert done.returncode == 2 and "could not run" not in done.stdout, done.stdout[-3000:]
    assert (bin_dir / "go.ran").read_text() == "built\n"  # 8 s, ready_timeout 5
    report = json.loads((artifacts / "report.json").read_text())
    assert [c["status"] for c in report["checks"] if c["check"] == "install"] == ["pass"]


CLIENT_CERT_SERVER = """
import http.server, ssl, sys
cert, key, ca, port = sys.argv[1:]
server = http.server.HTTPServer(("127.0.0.1", int(port)), http.server.BaseHTTPRequestHandler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
context.load_verify_locations(ca)
context.verify_mode = ssl.CERT_REQUIRED  # as a webhook server that demands client certificates
server.socket = context.wrap_socket(server.socket, server_side=True)
print("serving with client certificates required", flush=True)
server.serve_forever()
"""


@pytest.mark.e2e
def test_a_webhook_that_demands_client_certificates_is_named_at_once(tmp_path):
    (tmp_path / "server.py").write_text(CLIENT_CERT_SERVER)
    command = f"{{python}} {tmp_path / 'server.py'} {{tls_cert}} {{tls_key}} {{ca}} {{port}}"
    # A ready timeout far beyond the test's: it must not be waited out.
    done, artifacts = run_gate(tmp_path, webhook_gate(tmp_path, command, ready_timeout=3600))
    assert_could_not_run(done, artifacts, "refused the gate's TLS", "client certificates")


def test_hints_name_the_usual_causes():
    seen = startup.ProbeSeen()
    assert "`command:`" in startup.hint("Error: unknown flag: --cert-dir", seen, "/convert")
    assert "port is taken" in startup.hint(
        "listen tcp :9443: bind: address already in use", seen, "/convert"
    )
    assert "not at /convert" in startup.hint("", startup.ProbeSeen(status=404), "/convert")
    refused = startup.ProbeSeen(error="gate proxy: ... [Errno 111] Connection refused")
    assert "nothing listens" in startup.hint("", refused, "/convert")
    demanded = startup.ProbeSeen(error="SSLError(... tlsv13 alert certificate required)")
    assert startup.hopeless(demanded) and not startup.hopeless(refused)
    assert "client certificates" in startup.hint("", demanded, "/convert")
    assert "ready_timeout" in startup.hint("still loading caches", startup.ProbeSeen(), None)


def test_an_allow_path_that_names_no_field_is_refused_before_anything_starts(tmp_path):
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text(f"crds: [{CRD}]\nallow:\n  - path: spec.cronSpecc\n    reason: a typo\n")
    done, _ = run_gate(tmp_path, gate_file)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "allow[0].path: spec.cronSpecc is no field of any version" in done.stderr
    assert len((done.stdout + done.stderr).strip().splitlines()) == 1, done.stdout + done.stderr


def test_a_webhook_no_crd_would_call_is_refused_naming_the_crds(tmp_path):
    # The CRD as controller-gen writes it: no conversion stanza (kustomize adds it later).
    crd = yaml.safe_load(CRD.read_text())
    del crd["spec"]["conversion"]
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(crd))
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text(f"crds: [{tmp_path / 'crd.yaml'}]\nwebhook:\n  command: 'true'\n")
    done, _ = run_gate(tmp_path, gate_file)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "no CRD would call it: crontabs.gate.example.com" in done.stderr
    assert "webhook.convert" in done.stderr


def test_a_release_webhook_for_a_release_that_converts_nothing_is_refused(tmp_path):
    crd = yaml.safe_load(CRD.read_text())
    crd["spec"]["conversion"] = {"strategy": "None"}
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(crd))
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text(
        f"crds:\n  - path: {tmp_path / 'crd.yaml'}\n    webhook: {{command: 'true'}}\n"
        f"  - {CRD}\nwebhook:\n  command: 'true'\n"
    )
    done, _ = run_gate(tmp_path, gate_file)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "crds[0].webhook: release 1 (" in done.stderr
    assert "converts nothing through a webhook" in done.stderr
    assert len((done.stdout + done.stderr).strip().splitlines()) == 1, done.stdout + done.stderr


def test_a_candidate_that_dropped_its_webhook_is_told_to_give_the_earlier_release_its_own(
    tmp_path,
):
    # Release 1 converted through a webhook; the candidate serves one version, strategy None.
    crd = yaml.safe_load(CRD.read_text())
    crd["spec"]["conversion"] = {"strategy": "None"}
    crd["spec"]["versions"] = [v for v in crd["spec"]["versions"] if v["storage"]]
    (tmp_path / "candidate.yaml").write_text(yaml.safe_dump(crd))
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text(f"crds:\n  - {CRD}\n  - {tmp_path / 'candidate.yaml'}\n")
    done, _ = run_gate(tmp_path, gate_file)
    output = done.stdout + done.stderr
    assert done.returncode == 3, output
    assert "release 1 (" in done.stderr and "converts through a webhook" in done.stderr, output
    assert len(output.strip().splitlines()) == 1, output  # before anything starts
    assert "the candidate needs none" in done.stderr and "webhook: {command:" in done.stderr
    assert "A webhook per release" in done.stderr, output


@pytest.mark.e2e
def test_a_release_webhook_that_exits_at_start_is_named_and_every_webhook_stopped(tmp_path):
    marker = tmp_path / "top-level-records"  # in the top-level webhook's command line only
    top = (
        "{python} -m crdconvert --host 127.0.0.1 --port {port} --tls-cert {tls_cert} "
        f"--tls-key {{tls_key}} --path /crdconvert --record-file {marker}"
    )
    exits = (
        "{python} -c \"import sys; print('flag provided but not defined: -old-flag'); sys.exit(2)\""
    )
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text(
        f"crds:\n  - path: {CRD}\n    webhook:\n      command: {json.dumps(exits)}\n"
        f"  - {CRD}\nwebhook:\n  command: {json.dumps(top)}\ngenerate: 2\n"
    )
    done, artifacts = run_gate(tmp_path, gate_file)
    line = assert_could_not_run(
        done, artifacts, "crds[0].webhook (release 1's own)", "exited before it was ready"
    )
    assert "`command:`" in line, line
    assert "    flag provided but not defined: -old-flag" in done.stdout
    # The top-level webhook had started (it answered reviews) and was stopped with the run.
    assert marker.exists(), "the top-level webhook was started first"
    left = [
        p.info["pid"]
        for p in psutil.process_iter(["pid", "cmdline"])
        if str(marker) in " ".join(p.info["cmdline"] or [])
    ]
    assert left == [], left


def test_a_release_webhook_on_a_cluster_that_cannot_reach_this_machine_is_refused(tmp_path):
    from crdharness.errors import HarnessError
    from crdharness.gate.given.config import GateConfig, WebhookSpec
    from crdharness.gate.given.manifests import Release
    from crdharness.gate.webhook import launch

    class Kind:  # what the gate asks of a kind cluster: no loopback to this machine
        backend = "kind"

        def can(self, capability) -> bool:
            return False

    releases = [Release(0, "r1", webhook=WebhookSpec(command=["x"])), Release(1, "r2")]
    started: dict = {}
    with pytest.raises(HarnessError) as raised:
        launch.start_releases(
            GateConfig(tmp_path / "gate.yaml", [[], []]),
            releases,
            Kind(),
            tmp_path.joinpath,
            started,
        )
    assert str(raised.value) == (
        "crds[0].webhook: a release's own webhook needs the local backend (the kind cluster "
        "runs only the top-level webhook)"
    )
    assert started == {}


def test_a_webhook_whose_port_was_taken_before_it_bound_it_is_started_again_on_another(
    tmp_path,
):
    """The port the gate picks is free when picked, not when the webhook binds it (on a busy
    machine another process's connection can take it meanwhile, seen beside a test run):
    the gate starts the webhook again on another port, rather than giving up."""
    from crdharness.gate.given.config import WebhookSpec
    from crdharness.gate.webhook.user_webhook import UserWebhook

    marker = tmp_path / "first-launch-done"
    script = tmp_path / "webhook.sh"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ ! -e "{marker}" ]; then touch "{marker}"; '
        'echo "listen tcp 127.0.0.1:$2: bind: address already in use" >&2; exit 1; fi\n'
        f'exec "{sys.executable}" -m crdconvert --host 127.0.0.1 --port "$2" '
        '--tls-cert "$4" --tls-key "$6" --path /crdconvert\n'
    )
    script.chmod(0o755)
    spec = WebhookSpec(
        command=[str(script), "--port", "{port}", "--cert", "{tls_cert}", "--key", "{tls_key}"],
        path="/crdconvert",
    )
    (tmp_path / "w").mkdir()
    webhook = UserWebhook(
        spec, tmp_path / "w", tmp_path / "kubeconfig", tmp_path, "/crdconvert", "x.io/v1"
    )
    try:
        webhook.start()
        assert marker.exists() and webhook.running()
    finally:
        webhook.stop()
    assert not webhook.running()
