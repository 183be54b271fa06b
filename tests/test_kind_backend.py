"""The kind backend, checked by the exact commands and manifests it would use.

kind cannot run on the harness's CI machines (no privileged containers, no registry), so
these unit tests pin down what `--cluster=kind` does; users run it with
`nox -s e2e -- --cluster=kind`.
"""

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509

from crdharness import certs
from crdharness.backends import kind_cluster
from crdharness.binaries import versions
from crdharness.cluster import HOST_LOOPBACK
from crdharness.errors import HarnessError

RELEASE = versions.resolve("1.37")


@pytest.mark.parametrize("release", versions.SUPPORTED, ids=lambda r: r.minor)
def test_every_release_pins_a_kind_node_image_by_digest(release):
    assert re.fullmatch(
        rf"kindest/node:v{release.minor}\.\d+@sha256:[0-9a-f]{{64}}", release.kind_node_image
    )


def test_cluster_names_are_unique_per_run():
    names = {kind_cluster.cluster_name() for _ in range(50)}
    assert len(names) == 50 and all(n.startswith("crdharness-") for n in names)


def test_cluster_config_is_one_control_plane_node():
    assert kind_cluster.cluster_config(versions.resolve("1.37")) == {
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "nodes": [{"role": "control-plane"}],
    }


def test_kind_turns_on_the_storage_migration_where_it_is_beta_or_alpha():
    beta = kind_cluster.cluster_config(versions.resolve("1.36"))
    assert beta["featureGates"] == {"StorageVersionMigrator": True}
    assert beta["runtimeConfig"] == {"storagemigration.k8s.io/v1beta1": "true"}
    alpha = kind_cluster.cluster_config(versions.resolve("1.34"))
    assert alpha["runtimeConfig"] == {"storagemigration.k8s.io/v1alpha1": "true"}
    assert alpha["featureGates"] == {
        "StorageVersionMigrator": True,
        "InformerResourceVersion": True,
    }


def test_logs_command(tmp_path):
    assert kind_cluster.export_logs_command("kind", "c", tmp_path) == [
        "kind",
        "export",
        "logs",
        str(tmp_path),
        "--name",
        "c",
    ]


class FakeRun:
    def __init__(self, codes):
        self.codes, self.calls = list(codes), []

    def __call__(self, command, **kwargs):
        self.calls.append(command)
        return subprocess.CompletedProcess(command, self.codes.pop(0), "", "boom")


def test_image_load_uses_docker_image_when_it_works(tmp_path):
    run = FakeRun([0])
    assert kind_cluster.load_image("kind", "c", "img:dev", tmp_path, run=run) == "docker-image"
    assert run.calls == [["kind", "load", "docker-image", "--name", "c", "img:dev"]]


def test_image_load_falls_back_to_an_archive(tmp_path):
    run = FakeRun([1, 0, 0])
    assert kind_cluster.load_image("kind", "c", "img:dev", tmp_path, run=run) == "image-archive"
    archive = str(tmp_path / "webhook-image.tar")
    assert run.calls[1:] == [
        ["docker", "save", "-o", archive, "img:dev"],
        ["kind", "load", "image-archive", "--name", "c", archive],
    ]


def test_image_load_failure_is_one_clear_error(tmp_path):
    with pytest.raises(HarnessError, match="could not load img:dev into kind cluster c"):
        kind_cluster.load_image("kind", "c", "img:dev", tmp_path, run=FakeRun([1, 1]))


def test_webhook_manifests(tmp_path):
    ca = certs.CertificateAuthority(tmp_path)
    secret, deployment, service = kind_cluster.webhook_manifests(ca, "crdharness/crdconvert:dev")
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [
        "example-conversion-webhook-server.default.svc"
    ]
    assert base64.b64decode(secret["data"]["tls.key"]).startswith(b"-----BEGIN")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "crdharness/crdconvert:dev"
    assert container["imagePullPolicy"] == "Never"
    assert container["readinessProbe"]["httpGet"] == {
        "path": "/readyz",
        "port": "https",
        "scheme": "HTTPS",
    }
    assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    assert service["spec"]["ports"] == [{"name": "https", "port": 443, "targetPort": "https"}]


def test_crd_reaches_the_webhook_through_its_service(tmp_path):
    ca = certs.CertificateAuthority(tmp_path)
    config = kind_cluster.service_client_config(ca)
    assert config == {
        "service": {
            "namespace": "default",
            "name": "example-conversion-webhook-server",
            "path": "/crdconvert",
        },
        "caBundle": ca.bundle_b64,
    }


def test_etcdctl_runs_in_the_nodes_etcd_container_with_its_certificates():
    command = kind_cluster.etcdctl_command("c-control-plane", "/registry/g/crontabs/", prefix=True)
    assert command[:5] == ["docker", "exec", "c-control-plane", "sh", "-c"]
    script = command[5]
    assert script.startswith('exec crictl exec "$(crictl ps -q --name etcd)" ')
    for part in (
        "'etcdctl'",
        "'--endpoints=https://127.0.0.1:2379'",
        "'--cacert=/etc/kubernetes/pki/etcd/ca.crt'",
        "'--cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt'",
        "'/registry/g/crontabs/'",
        "'json'",
        "'--prefix'",
    ):
        assert part in script


def test_kind_etcd_reads_what_etcdctl_prints():
    stored = {"apiVersion": "g.io/v1beta1", "kind": "CronTab"}
    answer = {
        "kvs": [
            {
                "key": base64.b64encode(b"/registry/g.io/crontabs/ns/x").decode(),
                "value": base64.b64encode(json.dumps(stored).encode()).decode(),
                "mod_revision": 7,
                "create_revision": 5,
                "version": 2,
            }
        ]
    }

    def run(command, **kwargs):
        return subprocess.CompletedProcess(command, 0, json.dumps(answer), "")

    found = kind_cluster.KindEtcd("c-control-plane", run=run).custom_resource(
        "g.io", "crontabs", "x", "ns"
    )
    assert (found.api_version, found.mod_revision, found.key) == (
        "g.io/v1beta1",
        7,
        "/registry/g.io/crontabs/ns/x",
    )


def test_export_logs_runs_the_pinned_command_and_notes_a_failure(tmp_path):
    run = FakeRun([1])
    kind_cluster.export_logs("kind", "c", tmp_path / "logs", run=run)
    assert run.calls == [kind_cluster.export_logs_command("kind", "c", tmp_path / "logs")]
    assert (tmp_path / "logs" / "export-logs.error.txt").read_text() == "boom"


KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: k, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: k, user: {}}]
contexts: [{name: k, context: {cluster: k, user: k}}]
current-context: k
"""


class FakeKindCommands:
    """Stands in for the subprocess module pytest-kind-ng runs kind with: records every
    command, and writes the kubeconfig ``kind create cluster`` would."""

    def __init__(self):
        self.calls = []

    def check_output(self, command, **kwargs):
        self.calls.append(command)
        return ""  # `kind get clusters`: none yet

    def run(self, command, **kwargs):
        self.calls.append(command)
        if command[1:3] == ["create", "cluster"]:
            kubeconfig = next(a for a in command if a.startswith("--kubeconfig="))
            Path(kubeconfig.split("=", 1)[1]).write_text(KUBECONFIG)
        return subprocess.CompletedProcess(command, 0, "", "")


def test_what_the_kind_backend_runs_and_what_its_cluster_can_do(monkeypatch, tmp_path):
    """pytest-kind-ng drives kind (create, delete): these are the commands it really runs.
    The cluster declares what the fixtures, the gate and the bundle ask of it: etcd in the
    node, images loaded into the nodes, webhooks behind a Service, its logs; not host
    loopback. Nothing is left behind after stop, also not pytest-kind's ./.pytest-kind."""
    import pytest_kind.cluster

    from crdharness import backends, cluster
    from crdharness.backends import kind as kind_backend
    from crdharness.webhooks import images

    commands = FakeKindCommands()
    monkeypatch.setattr(pytest_kind.cluster, "subprocess", commands)
    binary = tmp_path / "kind"  # pytest-kind downloads kind unless its path exists
    binary.write_text("")
    monkeypatch.setattr(kind_cluster, "kind_binary", lambda: str(binary))
    monkeypatch.setattr(images, "require_engine", lambda: None)
    monkeypatch.setattr(kind_backend.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.chdir(tmp_path)
    running = backends.start(backends.Settings(backend="kind", k8s_version="1.37"), print)
    got = running.cluster
    workdir = got.workspace
    assert commands.calls == [
        [str(binary), "get", "clusters"],
        [
            str(binary),
            "create",
            "cluster",
            f"--name={got.name}",
            f"--kubeconfig={workdir / 'kubeconfig'}",
            f"--image={RELEASE.kind_node_image}",
            "--config",
            str(workdir / "kind.yaml"),
        ],
    ]
    assert got.capabilities == {cluster.ETCD, cluster.IMAGE_LOADER, cluster.SERVICE_ROUTING}
    assert not got.can(HOST_LOOPBACK)
    # The node image's release (kind publishes some patches only), not the local one's.
    assert RELEASE.kind_node_image.startswith(f"kindest/node:v{got.kubernetes}@")

    calls = []
    monkeypatch.setattr(kind_cluster, "load_image", lambda *args: calls.append(("load", *args)))
    monkeypatch.setattr(kind_cluster, "export_logs", lambda *args: calls.append(("export", *args)))
    got.load_image("img:dev", tmp_path)
    got.export_logs(tmp_path / "logs")
    assert calls == [
        ("load", str(binary), got.name, "img:dev", tmp_path),
        ("export", str(binary), got.name, tmp_path / "logs"),
    ]

    assert isinstance(
        got.deploy_webhook(certs.CertificateAuthority(tmp_path), "img"), kind_cluster.KindWebhook
    )

    running.stop()
    assert commands.calls[-1] == [
        str(binary),
        "delete",
        "cluster",
        f"--name={got.name}",
        f"--kubeconfig={workdir / 'kubeconfig'}",
    ]
    assert not workdir.exists()
    assert not (tmp_path / ".pytest-kind").exists()


def test_missing_kind_binary_is_one_clear_error(monkeypatch):
    monkeypatch.delenv("KIND", raising=False)
    monkeypatch.setattr(kind_cluster.shutil, "which", lambda name: None)
    with pytest.raises(HarnessError, match="--cluster=kind needs the kind binary"):
        kind_cluster.kind_binary()


def test_kind_without_its_extra_names_the_install_command(monkeypatch):
    """Without pytest-kind-ng (the ``kind`` extra), one line says what to install."""
    from crdharness import backends

    monkeypatch.setitem(sys.modules, "pytest_kind", None)  # importing it raises ImportError
    with pytest.raises(HarnessError, match=r"pip install 'crdharness\[kind\]'"):
        backends.start(backends.Settings(backend="kind", k8s_version="1.37"), print)


def _collect_e2e(*options: str) -> subprocess.CompletedProcess:
    """``pytest e2e --collect-only`` with ``options``, as a user runs it."""
    root = Path(__file__).resolve().parent.parent
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "e2e",
            "--collect-only",
            "-q",
            *options,
            "-p",
            "no:cacheprovider",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_other_backends_deselect_local_only_tests_and_say_so():
    result = _collect_e2e("--cluster=kind")
    assert "tests deselected: they need --cluster=local" in result.stdout
    assert "test_webhook_failures.py" not in result.stdout
    assert "test_hs_series.py" in result.stdout


def test_webhook_tests_only_keeps_the_tests_that_start_the_webhook_and_says_so():
    result = _collect_e2e("--webhook-tests-only")
    assert "deselected by --webhook-tests-only" in result.stdout
    assert "test_webhook_failures.py" in result.stdout  # the webhook's own tests stay
    assert "test_version_priority.py" not in result.stdout  # no webhook in these
