"""The built index is shared across threads: same results everywhere, GIL released during work."""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import toolsift as ts

WORDS = [f"w{i}" for i in range(400)]


@pytest.fixture(scope="module")
def big() -> ts.Index:
    tools = [
        ts.Tool(
            f"t{i}", " ".join(WORDS[(i * j * 7) % 400] for j in range(1, 30)), permissions=[f"p{i % 5}"], cost_tokens=50
        )
        for i in range(20_000)
    ]
    return ts.Index(tools)


QUERIES = [" ".join(WORDS[(q * k) % 400] for k in range(1, 9)) for q in range(40)]
CALLER = ["p0", "p2", "p3"]


def run(idx: ts.Index, q: str) -> tuple:
    return (
        tuple((h.position, h.score) for h in idx.search(q, k=10, caller=CALLER)),
        tuple(idx.select(q, caller=CALLER, budget_tokens=2000)),
    )


def test_results_are_identical_thread_to_thread(big: ts.Index) -> None:
    serial = [run(big, q) for q in QUERIES]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            assert list(pool.map(lambda q: run(big, q), QUERIES)) == serial


def test_another_thread_runs_while_the_core_works(big: ts.Index) -> None:
    """With a huge switch interval the GIL changes hands only when a thread releases it on purpose.
    The counter thread sleeps (without the GIL) between increments, then waits for the GIL; while
    the main thread runs the query loop it can only get it if the core releases the GIL."""
    counter = [0]
    stop = threading.Event()

    def count() -> None:
        while not stop.is_set():
            counter[0] += 1
            time.sleep(0.0001)

    old = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        t = threading.Thread(target=count)
        t.start()
        start = counter[0]
        # on a loaded machine the counter thread may not be scheduled within a few queries:
        # keep querying (each call releases the GIL) until it has run, for at most 200 rounds
        for _ in range(200):
            for q in QUERIES:
                big.search(q, k=10, caller=CALLER)
            if counter[0] > start:
                break
        progressed = counter[0] - start
    finally:
        stop.set()
        sys.setswitchinterval(old)
        t.join()
    assert progressed > 0


def test_batch_calls_equal_one_call_per_query(big: ts.Index) -> None:
    singles = [big.select(q, caller=CALLER, budget_tokens=2000) for q in QUERIES]
    assert [list(s) for s in big.select_many(QUERIES, caller=CALLER, budget_tokens=2000)] == [list(s) for s in singles]
    assert big.search_many(QUERIES, k=7, caller=CALLER) == [big.search(q, k=7, caller=CALLER) for q in QUERIES]
    assert big.select_many([], caller=CALLER, budget_tokens=10) == []
