"""The gate's garbage collector settings (``run.collector``): what is loaded is frozen out of
the collector's sight, and young collections are rarer."""

import gc
import weakref

import pytest

from crdharness.gate.run import collector


@pytest.fixture
def restored():
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_settle_freezes_what_is_alive_and_makes_young_collections_rarer(restored):
    loaded = [{"spec": {"n": i}} for i in range(1000)]
    gc.unfreeze()
    collector.settle()
    assert gc.get_freeze_count() >= len(loaded)
    assert gc.get_threshold()[0] == collector.YOUNG > 700


def test_a_finished_phase_leaves_what_it_found_frozen(restored):
    gc.unfreeze()
    before = gc.get_freeze_count()
    found = [[i] for i in range(500)]
    collector.phase_done()
    assert gc.get_freeze_count() >= before + len(found)


def test_a_phases_cyclic_garbage_is_collected_not_frozen(restored):
    gc.unfreeze()

    class Node:
        pass

    cycle = Node()
    cycle.me = cycle  # type: ignore[attr-defined]
    gone = weakref.ref(cycle)
    del cycle
    collector.phase_done()
    assert gone() is None
