"""Work whose length depends on the machine — compiling Kubernetes from Go modules, waiting
for another run's build, building an image — is never under a per-test timeout: on a loaded
2-core runner one build can outlast any test's limit, and a run must not fail for being slow.

Code doing such work says so with ``untimed(what)``. Whoever keeps time registers a pauser:
the pytest plugin stops the current test's pytest-timeout timer for the duration and starts
it again, whole, afterwards (``pytest_plugin.timeouts``). Outside pytest nothing is paused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager

Pauser = Callable[[str], AbstractContextManager[None]]
_pausers: list[Pauser] = []


def register(pauser: Pauser) -> None:
    _pausers.append(pauser)


def unregister(pauser: Pauser) -> None:
    if pauser in _pausers:
        _pausers.remove(pauser)


@contextmanager
def untimed(what: str) -> Iterator[None]:
    """Run the block with every registered timer paused; ``what`` says what is waited for."""
    with ExitStack() as stack:
        for pauser in list(_pausers):
            stack.enter_context(pauser(what))
        yield
