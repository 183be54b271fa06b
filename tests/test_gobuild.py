import textwrap

import pytest

from crdharness.binaries import gobuild, versions
from crdharness.errors import HarnessError

UPSTREAM_GO_MOD = textwrap.dedent("""\
    module k8s.io/kubernetes

    go 1.26.0

    require (
    \tk8s.io/api v0.0.0
    \tk8s.io/client-go v0.0.0
    )

    replace (
    \tk8s.io/api => ./staging/src/k8s.io/api
    \tk8s.io/client-go => ./staging/src/k8s.io/client-go
    \tk8s.io/cri-api => ./staging/src/k8s.io/cri-api
    \tgithub.com/other/thing => github.com/fork/thing v1.0.0
    )
""")


def test_wrapper_replaces_every_staging_module_with_its_release_tag():
    release = versions.resolve("1.37")
    go_mod, tools_go = gobuild.kubernetes_wrapper(release, UPSTREAM_GO_MOD)
    assert "require k8s.io/kubernetes v1.37.2" in go_mod
    for module in ("k8s.io/api", "k8s.io/client-go", "k8s.io/cri-api"):
        assert f"\t{module} => {module} v0.37.2" in go_mod
    assert "github.com/other/thing" not in go_mod
    assert "go 1.26.0" in go_mod
    assert '_ "k8s.io/kubernetes/cmd/kube-apiserver"' in tools_go
    assert '_ "k8s.io/kubernetes/cmd/kubectl"' in tools_go
    assert tools_go.startswith("//go:build tools")


def test_wrapper_refuses_a_go_mod_without_staging_modules():
    with pytest.raises(HarnessError, match="no staging modules"):
        gobuild.kubernetes_wrapper(versions.resolve("1.37"), "module k8s.io/kubernetes\n")


def test_ldflags_stamp_the_real_version():
    flags = gobuild.kubernetes_ldflags(versions.resolve("1.36"))
    assert "-X k8s.io/component-base/version.gitVersion=v1.36.4" in flags
    assert "-X k8s.io/component-base/version.gitMinor=36" in flags


def test_etcd_wrapper_requires_the_pinned_server_module():
    go_mod, main_go = gobuild.etcd_wrapper("3.6.16")
    assert "require go.etcd.io/etcd/server/v3 v3.6.16" in go_mod
    assert "etcdmain.Main(os.Args)" in main_go


def test_missing_go_is_one_clear_line(monkeypatch):
    monkeypatch.setattr(gobuild.shutil, "which", lambda name: None)
    with pytest.raises(HarnessError) as info:
        gobuild.GoToolchain()
    message = str(info.value)
    assert "Go toolchain is missing" in message
    assert "KUBEBUILDER_ASSETS" in message
    assert "\n" not in message


def test_too_old_go_is_refused_before_building(tmp_path):
    fake_go = tmp_path / "go"
    fake_go.write_text("#!/bin/sh\necho go1.21.4\n")
    fake_go.chmod(0o755)
    with pytest.raises(HarnessError, match=r"needs Go 1\.26\.0 or newer but `go` is go1\.21\.4"):
        gobuild.GoToolchain(str(fake_go)).require("1.26.0", "Kubernetes v1.37.2")


def test_go_never_downloads_another_toolchain(tmp_path):
    fake_go = tmp_path / "go"
    fake_go.write_text("#!/bin/sh\necho go1.26.8\n")
    fake_go.chmod(0o755)
    assert gobuild.GoToolchain(str(fake_go)).env["GOTOOLCHAIN"] == "local"


def test_a_failing_go_command_names_the_log(tmp_path):
    fake_go = tmp_path / "go"
    fake_go.write_text("#!/bin/sh\necho 'go: module lookup disabled' >&2\nexit 1\n")
    fake_go.chmod(0o755)
    log = tmp_path / "build.log"
    with pytest.raises(HarnessError) as info:
        gobuild.GoToolchain(str(fake_go)).run(["mod", "tidy"], cwd=tmp_path, log=log)
    assert "module lookup disabled" in str(info.value)
    assert str(log) in str(info.value)
    assert "module lookup disabled" in log.read_text()
