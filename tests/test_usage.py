"""UsageStore: decayed counts that stay exact when several processes record into one file."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest

import toolsift as ts
from toolsift.errors import InvalidParameterError

PROCESSES, RECORDS = 4, 300


def _record_many(path: str, start: Any) -> None:
    store = ts.UsageStore(path, half_life_s=3600.0)
    start.wait()  # every process records the same tool at the same time
    for _ in range(RECORDS):
        store.record("ann", "search")
    store.close()


def test_processes_recording_at_once_lose_no_update(tmp_path: Path) -> None:
    path = str(tmp_path / "usage.sqlite")
    ts.UsageStore(path).close()  # the file and its table exist before the race
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(PROCESSES)
    workers = [ctx.Process(target=_record_many, args=(path, start)) for _ in range(PROCESSES)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert [w.exitcode for w in workers] == [0] * PROCESSES
    store = ts.UsageStore(path, half_life_s=3600.0, warmup=0)
    assert store._db.execute("SELECT calls FROM usage WHERE user = 'ann' AND tool = 'search'").fetchall() == [
        (PROCESSES * RECORDS,)
    ]
    # the decayed score counts every call too (less only what the seconds of the run took off)
    assert PROCESSES * RECORDS * 0.99 < store.score("ann", "search") <= PROCESSES * RECORDS


def test_the_score_halves_every_half_life_and_counts_each_call() -> None:
    now = [1000.0]
    store = ts.UsageStore(half_life_s=10.0, warmup=0, clock=lambda: now[0])
    store.record("ann", "x")
    now[0] += 10.0
    store.record("ann", "x")  # 1 * 0.5 + 1
    assert store.score("ann", "x") == pytest.approx(1.5)
    now[0] += 20.0
    assert store.score("ann", "x") == pytest.approx(1.5 / 4)
    now[0] -= 100.0  # a clock that steps back adds nothing and takes nothing away
    store.record("ann", "x")
    assert store.score("ann", "x") == pytest.approx(2.5)


@pytest.mark.parametrize(
    "options",
    [{"half_life_s": "x"}, {"half_life_s": None}, {"half_life_s": 0}, {"half_life_s": float("nan")},
     {"half_life_s": True}, {"warmup": "3"}, {"warmup": -1}, {"warmup": 1.5}],
)  # fmt: skip
def test_bad_store_options_are_parameter_errors(options: dict[str, Any]) -> None:
    with pytest.raises(InvalidParameterError):
        ts.UsageStore(**options)


@pytest.mark.parametrize("user, tool", [(5, "x"), ("ann", None), ("\ud800", "x"), ("ann", "\udfff")])
def test_users_and_tools_that_are_not_text_are_parameter_errors(user: Any, tool: Any) -> None:
    store = ts.UsageStore()
    with pytest.raises(InvalidParameterError):
        store.record(user, tool)
    with pytest.raises(InvalidParameterError):
        store.score(user, tool)
