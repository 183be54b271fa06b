"""Build the local CRD validator (``crdharness/gate/validator``, our own small Go module built
from the API server's validation code) on first use, into the per-user cache.

The cache entry is named by the k8s.io version it is pinned to and a digest of its source,
so a changed validator is built again and never mistaken for the old one.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from crdharness.binaries import cache, gobuild, versions
from crdharness.progress import Reporter, phase, to_stderr
from crdharness.untimed import untimed

SOURCE = Path(__file__).resolve().parent.parent / "gate" / "validator"
SOURCE_FILES = ("main.go", "go.mod", "go.sum")
BINARY = "crdvalidate"
# The k8s.io modules it is built from: those of the default Kubernetes release (versions.py).
K8S_MODULES = "v0.37.2"
GO_MINIMUM = "1.26.0"  # go.mod's go directive (that of the k8s.io modules)


def entry_name() -> str:
    digest = hashlib.sha256(gobuild.kubernetes_ldflags(versions.DEFAULT).encode())
    for name in SOURCE_FILES:
        digest.update((SOURCE / name).read_bytes())
    return f"crdvalidate-{K8S_MODULES}-{digest.hexdigest()[:12]}"


def validator_binary(report: Reporter = to_stderr) -> Path:
    """The validator's path, built first when the cache lacks it (a missing Go toolchain
    is one line from ``GoToolchain``)."""
    name = entry_name()
    binary = cache.entry_dir(name) / BINARY
    if binary.exists():
        cache.mark_used(name)
        return binary
    with (
        cache.locked(name, report),
        untimed(f"building {name}"),
        cache.staging_dir(name) as scratch,
    ):
        if binary.exists():  # another run built it while we waited for the lock
            return binary
        go = gobuild.GoToolchain()
        go.require(GO_MINIMUM, "the local CRD validator")
        work = scratch / "module"
        work.mkdir()
        for file in SOURCE_FILES:
            shutil.copy(SOURCE / file, work / file)
        built = scratch / "entry"
        built.mkdir()
        log = gobuild.build_log(name)
        with phase(report, f"local CRD validator ({K8S_MODULES}): compiling"):
            go.run(
                [
                    "build",
                    "-trimpath",
                    # stamped as kube-apiserver is: the API server's compatibility version
                    # (which formats and CEL libraries it knows) comes from this version
                    "-ldflags",
                    gobuild.kubernetes_ldflags(versions.DEFAULT),
                    "-o",
                    str(built / BINARY),
                    ".",
                ],
                cwd=work,
                log=log,
            )
        cache.install(name, built)
    cache.prune_unused("crdvalidate-", keep=name)
    return binary
