"""The gate's requests in flight at once (``gate.concurrency``): outcomes in the items'
order, no more than the limit at once, and the first failure raised."""

from __future__ import annotations

import threading

import pytest

from crdharness.gate import concurrency


def test_outcomes_come_in_the_items_order_whatever_finishes_first():
    released = threading.Event()

    def work(n: int) -> int:
        if n == 0:  # the first item finishes last
            assert released.wait(10), "the other items never ran beside the first"
        elif n == 5:
            released.set()
        return n * n

    assert concurrency.each(work, list(range(6)), limit=3) == [0, 1, 4, 9, 16, 25]


def test_no_more_than_the_limit_run_at_once():
    lock = threading.Lock()
    running, most = 0, 0
    all_in = threading.Barrier(3, timeout=10)

    def work(n: int) -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        if n < 3:
            all_in.wait()  # the first three are in flight together
        with lock:
            running -= 1

    concurrency.each(work, list(range(12)), limit=3)
    assert most == 3


def test_the_first_failure_in_the_items_order_is_raised():
    def work(n: int) -> int:
        if n in (1, 4):
            raise ValueError(f"item {n} failed")
        return n

    with pytest.raises(ValueError, match="item 1 failed"):
        concurrency.each(work, list(range(8)), limit=4)


def test_a_limit_of_one_runs_on_the_calling_thread():
    threads = concurrency.each(lambda _: threading.current_thread(), [1, 2, 3], limit=1)
    assert set(threads) == {threading.current_thread()}


def test_each_item_runs_in_the_callers_context():
    import contextvars

    belongs: contextvars.ContextVar[str] = contextvars.ContextVar("belongs", default="none")
    belongs.set("pair A")
    assert concurrency.each(lambda _: belongs.get(), list(range(6)), limit=3) == ["pair A"] * 6


def test_a_pairs_refusal_causes_are_its_own_while_another_crds_pair_runs_beside_it():
    # Two CRDs' pairs side by side (``CRDS_AT_ONCE``), each with its objects on threads of
    # its own: what a pair reports as its refusals' causes (``round_trips``) is what its own
    # objects were refused for, not the other's.
    from collections import Counter
    from pathlib import Path

    from crdharness.gate.given.config import GateConfig
    from crdharness.gate.run.context import PAIR_CAUSES, GateContext

    ctx = GateContext(None, GateConfig(Path("gate.yaml"), crds=[]), [], {}, lambda line: None)
    both = threading.Barrier(2, timeout=10)

    def pair(message: str) -> Counter:
        counted: Counter[str] = Counter()
        token = PAIR_CAUSES.set(counted)
        try:
            both.wait()  # the two pairs are in flight together

            def refuse(_: int) -> None:
                ctx.count("refused by the API server's validation (422)", message)

            concurrency.each(refuse, list(range(5)), limit=3)
        finally:
            PAIR_CAUSES.reset(token)
        return counted

    first, second = concurrency.each(pair, ["spec.a: Required value", "spec.b: Too long"], 2)
    assert sum(first.values()) == sum(second.values()) == 5
    assert set(first).isdisjoint(second), (first, second)
    assert sum(ctx.refused_causes.values()) == 10  # and the run's counts have both
