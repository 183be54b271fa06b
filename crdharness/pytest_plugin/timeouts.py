"""pytest-timeout's per-test limit never counts work whose length depends on the machine.

A test or fixture that builds binaries, waits for another run's build or builds an image does
it inside ``crdharness.untimed.untimed``. This module is the pauser that block calls: it
stops the current test's timer through pytest-timeout's own hooks
(``pytest_timeout_cancel_timer``) and, when the work is done, starts it again with the same
settings (``pytest_timeout_set_timer``): the test's limit then counts from the moment its
binaries are ready. Without pytest-timeout, or off the main thread (its signal timer belongs
to the main thread), nothing is paused.
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from crdharness import untimed

# The timer settings of the test whose timer runs now (pytest-timeout passes them when it
# starts one); None while no timer runs.
TIMER = pytest.StashKey[Any]()
_current: list[pytest.Item] = []  # the test this process runs now (one at a time)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    _current.append(item)
    try:
        yield
    finally:
        _current.remove(item)


@pytest.hookimpl(hookwrapper=True, optionalhook=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> Generator[None, None, None]:
    item.stash[TIMER] = settings
    yield


@pytest.hookimpl(hookwrapper=True, optionalhook=True)
def pytest_timeout_cancel_timer(item: pytest.Item) -> Generator[None, None, None]:
    item.stash[TIMER] = None
    yield


@contextmanager
def pause_current_timer(what: str) -> Iterator[None]:
    """The current test's timer stopped while ``what`` runs, then started again, whole."""
    item = _current[-1] if _current else None
    settings = item.stash.get(TIMER, None) if item is not None else None
    if (
        item is None
        or settings is None
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return
    hooks = item.config.hook
    hooks.pytest_timeout_cancel_timer(item=item)
    try:
        yield
    finally:
        hooks.pytest_timeout_set_timer(item=item, settings=settings)


def pytest_configure(config: pytest.Config) -> None:
    untimed.register(pause_current_timer)


def pytest_unconfigure(config: pytest.Config) -> None:
    untimed.unregister(pause_current_timer)
