"""What kube-controller-manager is started with, per release (it runs in the e2e suite's
``controllers`` fixture; these pin the flags that make it work against the local API server)."""

from pathlib import Path

from crdharness import certs
from crdharness.backends.controlplane import controller_manager
from crdharness.binaries import versions


def args_for(minor: str, tmp_path: Path) -> list[str]:
    ca = certs.CertificateAuthority(tmp_path)
    serving = ca.issue_server("serving")
    kubeconfig = controller_manager.write_credentials(ca, "https://127.0.0.1:6443", tmp_path)
    return controller_manager.args(
        Path("/bin/kcm"), versions.resolve(minor), kubeconfig, serving, 10257
    )


def test_only_the_controllers_the_suite_needs_each_with_its_own_service_account(tmp_path):
    args = args_for("1.37", tmp_path)
    assert (
        "--controllers=namespace-controller,garbage-collector-controller,"
        "storage-version-migrator-controller" in args
    )
    assert "--use-service-account-credentials=true" in args
    assert "--leader-elect=false" in args
    assert "--bind-address=127.0.0.1" in args and "--secure-port=10257" in args
    assert not [a for a in args if a.startswith("--feature-gates")]  # GA in 1.37


def test_the_migrator_is_switched_on_where_it_is_beta(tmp_path):
    assert "--feature-gates=StorageVersionMigrator=true" in args_for("1.35", tmp_path)


def test_its_client_certificate_names_the_user_the_bootstrap_policy_binds(tmp_path):
    from cryptography import x509

    args_for("1.37", tmp_path)
    cert = x509.load_pem_x509_certificate((tmp_path / "controller-manager-client.crt").read_bytes())
    common_name = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value
    assert common_name == "system:kube-controller-manager"


def test_ready_means_every_controller_reports_its_own_health_check():
    from types import SimpleNamespace

    listed = "".join(f"[+]{name} ok\n" for name in controller_manager.CONTROLLERS)
    assert controller_manager.all_started(SimpleNamespace(status_code=200, text=listed))
    partial = listed.replace("[+]namespace-controller ok\n", "")
    assert not controller_manager.all_started(SimpleNamespace(status_code=200, text=partial))
    assert not controller_manager.all_started(SimpleNamespace(status_code=500, text=listed))
