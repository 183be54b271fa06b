"""Run a small pytest session of its own in a child process, with the harness plugin."""

import os
import subprocess
import sys
from pathlib import Path

from crdharness import paths
from tests.children import dies_with_parent


def inner_pytest(tmp_path: Path, test_source: str, *extra: str) -> list[str]:
    """Write ``test_inner.py`` into ``tmp_path``; return the command that runs it."""
    (tmp_path / "test_inner.py").write_text(test_source)
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "crdharness.pytest_plugin",
        "-q",
        "-p",
        "no:cacheprovider",
        "test_inner.py",
        *extra,
    ]


def inner_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The inner session's environment: its failure bundle and transcripts go under
    ``tmp_path``, never into the checkout's artifacts/."""
    return {**os.environ, paths.ARTIFACTS_ENV: str(tmp_path / "artifacts"), **extra}


def run_inner_pytest(
    tmp_path: Path, test_source: str, *extra: str, **env: str
) -> subprocess.CompletedProcess:
    """Run ``test_source`` as an inner session in ``tmp_path``, to its end (no limit of its
    own: how long it takes depends on the machine; the outer test's timeout, paused around
    builds, still ends a hang)."""
    return subprocess.run(
        inner_pytest(tmp_path, test_source, *extra),
        cwd=tmp_path,
        env=inner_env(tmp_path, **env),
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=dies_with_parent,
    )
