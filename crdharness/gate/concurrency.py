"""Requests in flight at once: the gate's wall time is not the webhook's latency times the
number of reviews.

Only independent work goes out together: each item is one object whose requests stay in
order on one thread (create, read, write back, read again). What the items find is judged
afterwards, in the items' order, so a report does not depend on which answer came first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

Item = TypeVar("Item")
Outcome = TypeVar("Outcome")


def each(work: Callable[[Item], Outcome], items: Sequence[Item], limit: int) -> list[Outcome]:
    """``work(item)`` for every item, at most ``limit`` at once; the outcomes in the items'
    order. The first exception (in the items' order) is raised once the others in flight
    have finished; items not yet started are not started."""
    if limit <= 1 or len(items) <= 1:
        return [work(item) for item in items]
    pool = ThreadPoolExecutor(max_workers=min(limit, len(items)), thread_name_prefix="gate")
    try:
        futures = [pool.submit(work, item) for item in items]
        return [future.result() for future in futures]
    finally:
        # After a failure (or Ctrl-C) nothing new starts; what is in flight ends within
        # the request timeout.
        pool.shutdown(wait=True, cancel_futures=True)
