import pytest


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch):
    """A cache of the test's own, and no KUBEBUILDER_ASSETS from the caller's environment."""
    root = tmp_path / "cache"
    monkeypatch.setenv("CRDHARNESS_CACHE", str(root))
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    monkeypatch.delenv("CRDHARNESS_K8S_VERSION", raising=False)
    return root
