"""What both pytest plugins (the suite's and the gate's) need from pytest itself."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from crdharness.errors import HarnessError


@contextlib.contextmanager
def harness_work(config: pytest.Config, prefix: str = "crdharness") -> Iterator[None]:
    """Long work of the harness's own inside a test or fixture: its progress lines show live
    (capture off), and a ``HarnessError`` fails the test with its one line, no traceback."""
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        try:
            yield
        except HarnessError as exc:
            pytest.fail(f"{prefix}: {exc}", pytrace=False)
