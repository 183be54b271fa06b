"""Run a small pytest session of its own in a child process, with the harness plugin."""

import sys
from pathlib import Path


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
