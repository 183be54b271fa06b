"""Requests in flight at once: the gate's wall time is not the webhook's latency times the
number of reviews.

Only independent work goes out together: each item is one object whose requests stay in
order on one thread (create, read, write back, read again). What the items find is judged
afterwards, in the items' order, so a report does not depend on which answer came first.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from random import Random
from typing import TypeVar

import hypothesis.core

# CRDs whose round trips are judged side by side (each its version pairs in order, each pair
# its objects ``concurrency`` at once): one CRD's pairs left the machine a quarter idle between
# the gate's drawing and the API server's answers.
CRDS_AT_ONCE = 2

Item = TypeVar("Item")
Outcome = TypeVar("Outcome")


def each(work: Callable[[Item], Outcome], items: Sequence[Item], limit: int) -> list[Outcome]:
    """``work(item)`` for every item, at most ``limit`` at once; the outcomes in the items'
    order. The first exception (in the items' order) is raised once the others in flight
    have finished; items not yet started are not started. Each item runs in a copy of the
    caller's context (``contextvars``: what is counted for the pair it belongs to)."""
    if limit <= 1 or len(items) <= 1:
        return [work(item) for item in items]
    pool = ThreadPoolExecutor(
        max_workers=min(limit, len(items)),
        thread_name_prefix="gate",
        initializer=_give_hypothesis_its_random,
    )
    try:
        futures = [pool.submit(contextvars.copy_context().run, work, item) for item in items]
        return [future.result() for future in futures]
    finally:
        # After a failure (or Ctrl-C) nothing new starts; what is in flight ends within
        # the request timeout.
        pool.shutdown(wait=True, cancel_futures=True)


def _give_hypothesis_its_random() -> None:
    """Hypothesis gives each new thread a Random of its own on its first search and registers
    it, and registering runs a full ``gc.collect()`` (0.15 s on a gate's small heap, more with
    thousands of schemas loaded) in every pool thread. The gate's searches are derandomized,
    so that Random is never drawn from: a plain one, unregistered, is enough. (A private
    attribute of hypothesis: where it is gone, hypothesis makes its own as before.)"""
    local = getattr(hypothesis.core, "threadlocal", None)
    if local is not None and getattr(local, "_hypothesis_global_random", None) is None:
        local._hypothesis_global_random = Random()
