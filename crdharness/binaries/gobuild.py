"""Build kube-apiserver, kubectl and etcd from Go modules, through the Go module proxy.

``k8s.io/kubernetes`` is not meant to be required as a module: its go.mod points every
staging module (k8s.io/api, client-go, ...) at ``./staging/src/...`` and requires them at
``v0.0.0``. A small wrapper module therefore requires ``k8s.io/kubernetes vX`` and replaces
each staging module with its published ``v0.Y.Z`` tag. The list comes from that release's own
go.mod, so a release that adds a staging module needs no change here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from crdharness.binaries import cache
from crdharness.binaries.versions import Release
from crdharness.errors import HarnessError
from crdharness.progress import Reporter, phase

KUBERNETES_COMMANDS = ("kube-apiserver", "kubectl")
# Everything the wrapper may build; agnhost carries the Go reference conversion webhook.
AGNHOST_PACKAGE = "k8s.io/kubernetes/test/images/agnhost"
CONTROLLER_MANAGER_PACKAGE = "k8s.io/kubernetes/cmd/kube-controller-manager"
KUBERNETES_PACKAGES = (
    *(f"k8s.io/kubernetes/cmd/{c}" for c in KUBERNETES_COMMANDS),
    CONTROLLER_MANAGER_PACKAGE,
    AGNHOST_PACKAGE,
)
_STAGING_REPLACE = re.compile(r"^\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/src/", re.MULTILINE)
_GO_DIRECTIVE = re.compile(r"^go\s+(\d+(?:\.\d+){1,2})\s*$", re.MULTILINE)


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


class GoToolchain:
    """The local ``go`` command, run so that it never downloads another toolchain."""

    def __init__(self, go: str | None = None):
        found = go or shutil.which("go")
        if not found:
            raise HarnessError(
                "the Go toolchain is missing (no `go` on PATH): install Go 1.26 or newer, "
                "or set KUBEBUILDER_ASSETS to a directory holding kube-apiserver, etcd and kubectl"
            )
        self.go = found
        self.env = {**os.environ, "GOTOOLCHAIN": "local", "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod"}

    def version(self) -> str:
        return self.run(["env", "GOVERSION"], cwd=Path.cwd()).strip()  # e.g. "go1.26.8"

    def require(self, minimum: str, what: str) -> None:
        found = self.version()
        if _version_tuple(found) < _version_tuple(minimum):
            raise HarnessError(
                f"{what} needs Go {minimum} or newer but `go` is {found}: install a newer Go, "
                "or set KUBEBUILDER_ASSETS to prebuilt binaries"
            )

    def run(self, args: list[str], cwd: Path, log: Path | None = None) -> str:
        result = subprocess.run(
            [self.go, *args], cwd=cwd, env=self.env, capture_output=True, text=True, check=False
        )
        if log is not None:
            with log.open("a") as out:
                out.write(f"$ go {' '.join(args)}\n{result.stdout}{result.stderr}\n")
        if result.returncode != 0:
            where = f"; full output in {log}" if log else ""
            raise HarnessError(f"`go {' '.join(args[:2])}` failed: {_last_error(result)}{where}")
        return result.stdout


def _last_error(result: subprocess.CompletedProcess) -> str:
    """The line of go's output that says what went wrong (``-json`` puts it in "Error")."""
    try:
        error = json.loads(result.stdout).get("Error")
    except ValueError:
        error = None
    lines = (result.stderr or result.stdout).strip().splitlines()
    return error or (lines[-1] if lines else "(no output)")


def _module_go_mod(go: GoToolchain, module: str, workdir: Path, log: Path) -> str:
    info = json.loads(go.run(["mod", "download", "-json", module], cwd=workdir, log=log))
    if info.get("Error"):
        raise HarnessError(f"cannot download {module} from the Go module proxy: {info['Error']}")
    return Path(info["GoMod"]).read_text()


def kubernetes_wrapper(release: Release, upstream_go_mod: str) -> tuple[str, str]:
    """The wrapper module's go.mod and its tools.go, for ``release``."""
    staging = sorted(set(_STAGING_REPLACE.findall(upstream_go_mod)))
    if not staging:
        raise HarnessError(
            f"k8s.io/kubernetes {release.git_version} go.mod lists no staging modules"
        )
    go_line = _GO_DIRECTIVE.search(upstream_go_mod)
    replaces = "\n".join(f"\t{m} => {m} {release.staging_version}" for m in staging)
    go_mod = (
        "module crdharness.local/kubernetes\n\n"
        f"go {go_line.group(1) if go_line else '1.22'}\n\n"
        f"require k8s.io/kubernetes {release.git_version}\n\n"
        f"replace (\n{replaces}\n)\n"
    )
    imports = "\n".join(f'\t_ "{p}"' for p in KUBERNETES_PACKAGES)
    tools_go = f"//go:build tools\n\npackage tools\n\nimport (\n{imports}\n)\n"
    return go_mod, tools_go


def kubernetes_ldflags(release: Release) -> str:
    """Stamp the real version, or the binaries report v0.0.0 and kubectl warns of skew."""
    major, minor, _ = release.kubernetes.split(".")
    stamps = {
        "gitVersion": release.git_version,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
    }
    flags = ["-s", "-w"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {package}.{key}={value}" for key, value in stamps.items()]
    return " ".join(flags)


def build_kubernetes(
    release: Release,
    out_dir: Path,
    report: Reporter,
    log: Path,
    packages: dict[str, str] | None = None,
) -> None:
    """Build kube-apiserver and kubectl for ``release`` into ``out_dir`` (or, with
    ``packages``, other commands of the same module: {binary name: import path})."""
    go = GoToolchain()
    work = out_dir.parent / "wrapper-kubernetes"
    work.mkdir()
    (work / "go.mod").write_text("module crdharness.local/probe\n\ngo 1.22\n")
    module = f"k8s.io/kubernetes@{release.git_version}"
    with phase(report, f"kubernetes {release.git_version}: downloading {module}"):
        upstream = _module_go_mod(go, module, work, log)
    minimum = _GO_DIRECTIVE.search(upstream)
    if minimum:
        go.require(minimum.group(1), f"Kubernetes {release.git_version}")
    go_mod, tools_go = kubernetes_wrapper(release, upstream)
    (work / "go.mod").write_text(go_mod)
    (work / "tools.go").write_text(tools_go)
    with phase(report, f"kubernetes {release.git_version}: resolving modules (go mod tidy)"):
        go.run(["mod", "tidy"], cwd=work, log=log)
    packages = packages or {c: f"k8s.io/kubernetes/cmd/{c}" for c in KUBERNETES_COMMANDS}
    for command, package in packages.items():
        with phase(report, f"kubernetes {release.git_version}: compiling {command}"):
            go.run(
                [
                    "build",
                    "-trimpath",
                    "-ldflags",
                    kubernetes_ldflags(release),
                    "-o",
                    str(out_dir / command),
                    package,
                ],
                cwd=work,
                log=log,
            )


def etcd_wrapper(version: str) -> tuple[str, str]:
    go_mod = (
        f"module crdharness.local/etcd\n\ngo 1.22\n\nrequire go.etcd.io/etcd/server/v3 v{version}\n"
    )
    main_go = (
        "// etcd's own main package lives in a module that is not meant to be required;\n"
        "// etcdmain.Main is what it calls.\n"
        "package main\n\n"
        'import (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\n'
        "func main() { etcdmain.Main(os.Args) }\n"
    )
    return go_mod, main_go


def build_etcd(version: str, out_dir: Path, report: Reporter, log: Path) -> None:
    go = GoToolchain()
    work = out_dir.parent / "wrapper-etcd"
    work.mkdir()
    go_mod, main_go = etcd_wrapper(version)
    (work / "go.mod").write_text(go_mod)
    (work / "main.go").write_text(main_go)
    with phase(report, f"etcd v{version}: resolving modules (go mod tidy)"):
        go.run(["mod", "tidy"], cwd=work, log=log)
    with phase(report, f"etcd v{version}: compiling etcd"):
        go.run(
            ["build", "-trimpath", "-ldflags", "-s -w", "-o", str(out_dir / "etcd"), "."],
            cwd=work,
            log=log,
        )


def build_log(name: str) -> Path:
    logs = cache.cache_root() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"build-{name}.log"
    log.write_text("")
    return log
