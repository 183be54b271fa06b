"""Container images: the webhook image, and a locally built base where no registry answers.

``nox -s image`` (and the container tests) call ``ensure_webhook_image``. The Dockerfile keeps
``FROM ${BASE_IMAGE}`` with a public default; on a machine that cannot pull it, a minimal
Debian with Python is built from Debian's packages (debootstrap) and imported with
``docker import``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from crdharness import paths
from crdharness.errors import HarnessError
from crdharness.progress import Reporter, phase
from crdharness.untimed import untimed

ROOT = paths.REPO
WEBHOOK_CONTEXT = ROOT / "webhook_image"
WEBHOOK_IMAGE = "crdharness/crdconvert:dev"
WEBHOOK_IMAGE_UID = 10001  # the Dockerfile's USER
PUBLIC_BASE = "python:3.12-slim"
LOCAL_BASE = "crdharness/debian-python:bookworm"
BASE_ENV_VAR = "CRDHARNESS_BASE_IMAGE"
DEBIAN_MIRROR = os.environ.get("CRDHARNESS_DEBIAN_MIRROR", "http://deb.debian.org/debian")
DEBIAN_SUITE = "bookworm"
BASE_PACKAGES = "python3,python3-venv,ca-certificates"


def docker(*args: str, check: bool = True, timeout: float | None = None, **kwargs):
    """``docker ARGS``: unbounded unless ``timeout`` (a build or import takes as long as the
    machine takes; only quick queries of the engine are bounded, by their callers)."""
    if shutil.which("docker") is None:
        raise HarnessError(
            "docker is not installed: install Docker (Debian: apt-get install docker.io)"
        )
    result = subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False, **kwargs
    )
    if check and result.returncode != 0:
        last = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise HarnessError(f"`docker {' '.join(args[:2])}` failed: {last[0]}")
    return result


def require_engine() -> None:
    if docker("info", check=False, timeout=30).returncode != 0:
        raise HarnessError(
            "the Docker engine is not running: start it (`sudo systemctl start docker`, "
            "or `dockerd &`) and try again"
        )


def image_exists(tag: str) -> bool:
    return docker("image", "inspect", tag, check=False, timeout=30).returncode == 0


def image_size(tag: str) -> int:
    return int(docker("image", "inspect", "--format", "{{.Size}}", tag).stdout.strip())


def build_local_base(report: Reporter, tag: str = LOCAL_BASE) -> str:
    """A minimal Debian with Python 3 and venv, from Debian's packages only."""
    if image_exists(tag):
        return tag
    if shutil.which("debootstrap") is None:
        raise HarnessError(
            f"no registry answers for {PUBLIC_BASE} and debootstrap is missing: "
            "apt-get install debootstrap, or set CRDHARNESS_BASE_IMAGE to an image you have"
        )
    rootfs = Path(tempfile.mkdtemp(prefix="crdharness-rootfs-", dir="/var/tmp"))
    try:
        with phase(report, f"base image {tag}: debootstrap {DEBIAN_SUITE} ({BASE_PACKAGES})"):
            result = subprocess.run(
                [
                    "debootstrap",
                    "--variant=minbase",
                    f"--include={BASE_PACKAGES}",
                    DEBIAN_SUITE,
                    str(rootfs),
                    DEBIAN_MIRROR,
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if result.returncode != 0:
                tail = (result.stderr or result.stdout).strip().splitlines()[-1:]
                raise HarnessError(f"debootstrap failed: {tail[0] if tail else '(no output)'}")
        # Trim what a container never needs; the image stays small.
        for cache in (
            "var/cache/apt/archives",
            "var/lib/apt/lists",
            "usr/share/doc",
            "usr/share/man",
            "usr/share/locale",
        ):
            shutil.rmtree(rootfs / cache, ignore_errors=True)
        with phase(report, f"base image {tag}: docker import"):
            tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
            docker("import", "--change", 'CMD ["/bin/bash"]', "-", tag, stdin=tar.stdout)
            tar.wait()
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)
    return tag


def choose_base(report: Reporter) -> str:
    """The base image to build on: given, public and pullable, or built here."""
    if os.environ.get(BASE_ENV_VAR):
        return os.environ[BASE_ENV_VAR]
    if image_exists(PUBLIC_BASE):
        return PUBLIC_BASE
    pulled = docker("pull", PUBLIC_BASE, check=False, timeout=300)
    if pulled.returncode == 0:
        return PUBLIC_BASE
    report(f"cannot pull {PUBLIC_BASE} (no registry reachable); building a local Debian base")
    return build_local_base(report)


def python_version(image: str) -> str:
    script = 'import sys; print("%d.%d" % sys.version_info[:2])'
    return docker("run", "--rm", "--network=none", image, "python3", "-c", script).stdout.strip()


def download_wheels(python: str, report: Reporter) -> Path:
    """Fetch the webhook's wheels on the host, for the image's Python.

    The host's pip trusts the host's CA bundle and proxy settings; a build container would
    not (behind a TLS-intercepting proxy, pip inside ``docker build`` fails verification).
    """
    wheels = WEBHOOK_CONTEXT / "wheels"
    for old in wheels.glob("*.whl"):
        old.unlink()
    platforms = ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "any"]
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--dest",
        str(wheels),
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        python,
        *(arg for platform in platforms for arg in ("--platform", platform)),
        "-r",
        str(WEBHOOK_CONTEXT / "requirements.txt"),
    ]
    with phase(report, f"downloading the webhook's wheels for Python {python}"):
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = result.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise HarnessError(f"pip download of the webhook's wheels failed: {tail[0]}")
    return wheels


def build_webhook_image(report: Reporter, tag: str = WEBHOOK_IMAGE) -> str:
    with untimed(f"building the image {tag}"):  # debootstrap and docker build: minutes
        return _build_webhook_image(report, tag)


def _build_webhook_image(report: Reporter, tag: str) -> str:
    require_engine()
    base = choose_base(report)
    download_wheels(python_version(base), report)
    with phase(report, f"image {tag} on {base}: docker build"):
        # The wheels are in the context, so the build needs no network at all.
        docker(
            "build",
            "--force-rm",  # no stopped build containers left behind when a step fails
            "--network=none",
            "--build-arg",
            f"BASE_IMAGE={base}",
            "-t",
            tag,
            str(WEBHOOK_CONTEXT),
        )
    report(f"image {tag}: {image_size(tag) / 1e6:.0f} MB")
    return tag
