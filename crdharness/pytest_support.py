"""What both pytest plugins (the suite's and the gate's) need from pytest itself."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

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


def live(config: pytest.Config, report: Callable[[str], None]) -> Callable[[str], None]:
    """``report`` with pytest's capture off around each line, so progress from inside a test
    (from any thread) shows as it happens, not in the captured output afterwards."""
    capture = config.pluginmanager.getplugin("capturemanager")
    lock = threading.Lock()  # capture is suspended and resumed by one thread at a time

    def say(line: str) -> None:
        with lock, capture.global_and_fixture_disabled():
            report(line)

    return say


def basetemp(config: pytest.Config) -> Path:
    """The session's base temporary directory (``tmp_path_factory``'s), from a hook, where no
    fixture can be asked: pytest offers no public way, so its own attribute, in one place."""
    return config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
