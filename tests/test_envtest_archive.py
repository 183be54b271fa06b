"""The envtest download path, against an HTTP server of the test's own on 127.0.0.1."""

import hashlib
import http.server
import io
import tarfile
import threading

import pytest
import yaml

from crdharness.binaries import assets, cache, envtest_archive, versions
from tests.fakes import SCRIPTS

RELEASE = versions.resolve("1.37")


def make_archive() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, body in SCRIPTS.items():
            data = ("#!/bin/sh\n" + body.format(k8s="1.37.2", etcd="3.5.21") + "\n").encode()
            info = tarfile.TarInfo(f"controller-tools/envtest/{name}")
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def release_server():
    """Serves /index.yaml and the archive; ``state['digest']`` is what the index claims."""
    archive = make_archive()
    state = {"digest": hashlib.sha512(archive).hexdigest(), "hits": []}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            state["hits"].append(self.path)
            base = f"http://127.0.0.1:{self.server.server_port}"
            if self.path == "/index.yaml":
                name = envtest_archive.archive_name(RELEASE)
                body = yaml.safe_dump(
                    {
                        "releases": {
                            RELEASE.git_version: {
                                name: {
                                    "hash": state["digest"],
                                    "selfLink": f"{base}/archive.tar.gz",
                                }
                            }
                        }
                    }
                ).encode()
            elif self.path == "/archive.tar.gz":
                body = archive
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state["index"] = f"http://127.0.0.1:{server.server_port}/index.yaml"
    yield state
    server.shutdown()
    server.server_close()


def test_matching_checksum_unpacks_the_three_binaries(release_server, tmp_path):
    envtest_archive.fetch(RELEASE, tmp_path, lambda line: None, release_server["index"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["etcd", "kube-apiserver", "kubectl"]
    assert assets.reported_version(tmp_path / "kube-apiserver") == "1.37.2"


def test_checksum_mismatch_is_refused_and_nothing_is_kept(release_server, tmp_path):
    release_server["digest"] = "0" * 128
    with pytest.raises(envtest_archive.ChecksumMismatch, match="SHA-512"):
        envtest_archive.fetch(RELEASE, tmp_path, lambda line: None, release_server["index"])
    assert list(tmp_path.iterdir()) == []


def test_unreachable_index_is_unavailable_not_fatal(tmp_path):
    with pytest.raises(envtest_archive.ArchiveUnavailable):
        envtest_archive.fetch(RELEASE, tmp_path, lambda line: None, "http://127.0.0.1:9/index.yaml")


def test_resolve_installs_a_verified_archive(release_server, isolated_cache, monkeypatch):
    monkeypatch.setenv(envtest_archive.INDEX_ENV_VAR, release_server["index"])
    monkeypatch.setattr(assets, "build", lambda *a: pytest.fail("must not build"))
    found = assets.resolve(RELEASE, report=lambda line: None)
    assert found.source == "envtest"
    assert found.etcd == cache.entry_dir("envtest-v1.37.2") / "etcd"


def test_resolve_falls_back_to_a_build_on_checksum_mismatch(
    release_server, isolated_cache, monkeypatch
):
    release_server["digest"] = "f" * 128
    monkeypatch.setenv(envtest_archive.INDEX_ENV_VAR, release_server["index"])
    built = []
    monkeypatch.setattr(assets, "build", lambda release, report: built.append(release) or "built")
    lines = []
    assert assets.resolve(RELEASE, report=lines.append) == "built"
    assert built == [RELEASE]
    assert any("SHA-512" in line and "building" in line for line in lines)
    assert not cache.entry_dir("envtest-v1.37.2").exists()
