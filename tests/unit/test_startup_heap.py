"""A crawl process freezes what startup made, so that the garbage collector stops walking
it for every page; garbage made before or after still goes."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from sitesync.runs.processes import YOUNG_COLLECTION_AFTER, freeze_startup_heap


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> weakref.ref[Node]:
    """A reference cycle nothing else holds: only the cyclic collector frees it."""
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


@pytest.fixture
def frozen() -> Iterator[None]:
    gc.unfreeze()
    thresholds = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()  # the rest of the test session collects as usual
        gc.set_threshold(*thresholds)


@pytest.mark.usefixtures("frozen")
def test_the_objects_of_startup_are_frozen() -> None:
    kept = Node()  # alive at the freeze: startup's objects are like it
    freeze_startup_heap()
    assert gc.get_freeze_count() > 0
    assert not any(obj is kept for gen in range(3) for obj in gc.get_objects(gen))


@pytest.mark.usefixtures("frozen")
def test_garbage_made_before_the_freeze_is_collected_not_frozen() -> None:
    before = cycle()
    freeze_startup_heap()
    assert before() is None


@pytest.mark.usefixtures("frozen")
def test_garbage_made_after_the_freeze_is_still_collected() -> None:
    freeze_startup_heap()
    after = cycle()
    gc.collect()
    assert after() is None


@pytest.mark.usefixtures("frozen")
def test_the_youngest_generation_waits_for_more_allocations_and_cycles_still_go() -> None:
    _, older, oldest = gc.get_threshold()
    freeze_startup_heap()
    assert gc.get_threshold() == (YOUNG_COLLECTION_AFTER, older, oldest)
    cycles = [cycle() for _ in range(YOUNG_COLLECTION_AFTER)]  # enough for a collection
    assert sum(ref() is None for ref in cycles) > 0
