"""--cluster=existing: the suite runs against any cluster from KUBECONFIG, and says plainly
what it cannot offer there (etcd inspection)."""

import textwrap

import pytest

from tests.inner_session import run_inner_pytest

pytestmark = pytest.mark.e2e

INNER = textwrap.dedent("""\
    import pytest
    from crdharness.errors import HarnessError

    def test_inner(cluster):
        assert cluster.backend == "existing"
        assert cluster.http.get("/readyz").text == "ok"
        assert "yes" in cluster.kubectl("auth", "can-i", "get", "crd").stdout
        assert cluster.etcd is None
        with pytest.raises(HarnessError, match="etcd inspection is not available"):
            cluster.stored("example.com", "crontabs", "x", "default")
""")


def run_inner(tmp_path, kubeconfig):
    return run_inner_pytest(tmp_path, INNER, "--cluster=existing", KUBECONFIG=str(kubeconfig))


def test_existing_cluster_from_kubeconfig(cluster, tmp_path):
    result = run_inner(tmp_path, cluster.kubeconfig)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_missing_kubeconfig_is_one_clear_error(tmp_path):
    result = run_inner(tmp_path, tmp_path / "nope")
    assert result.returncode != 0
    assert "--cluster=existing needs a kubeconfig" in result.stdout + result.stderr
