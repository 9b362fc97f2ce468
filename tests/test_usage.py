"""Usage stores: decayed counts that stay exact when several processes record at once, the same
rules in the embedded SQLite store and in the Redis store (a real redis-server)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import toolsift as ts
from redis_support import RedisServer
from toolsift.errors import InvalidParameterError

PROCESSES, RECORDS = 4, 300

Store = Callable[..., Any]  # (**options) -> a usage store


@pytest.fixture(params=["sqlite", "redis"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A factory of stores of one backend, all of them on the same data."""
    if request.param == "sqlite":
        yield lambda **options: ts.UsageStore(tmp_path / "usage.sqlite", **options)
        return
    server = RedisServer(tmp_path / "redis").start()
    yield lambda **options: ts.RedisUsageStore(server.url, **options)
    server.stop()


def _record_many(make: Any, start: Any) -> None:
    store = make(half_life_s=3600.0)
    start.wait()  # every process records the same tool at the same time
    for _ in range(RECORDS):
        store.record("ann", "search")
    store.close()


def _sqlite(path: str, **options: Any) -> Any:
    return ts.UsageStore(path, **options)


def _redis(url: str, **options: Any) -> Any:
    return ts.RedisUsageStore(url, **options)


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_processes_recording_at_once_lose_no_update(backend: str, tmp_path: Path) -> None:
    import functools

    server = None
    if backend == "sqlite":
        make = functools.partial(_sqlite, str(tmp_path / "usage.sqlite"))
        make().close()  # the file and its table exist before the race
    else:
        server = RedisServer(tmp_path / "redis").start()
        make = functools.partial(_redis, server.url)
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(PROCESSES)
    workers = [ctx.Process(target=_record_many, args=(make, start)) for _ in range(PROCESSES)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert [w.exitcode for w in workers] == [0] * PROCESSES
    store = make(half_life_s=3600.0, warmup=PROCESSES * RECORDS)
    # the warm-up is exactly the number of calls: reached only if every call was counted
    assert store.score("ann", "search") > 0
    assert make(half_life_s=3600.0, warmup=PROCESSES * RECORDS + 1).score("ann", "search") == 0
    # the decayed score counts every call too (less only what the seconds of the run took off)
    assert PROCESSES * RECORDS * 0.99 < store.score("ann", "search") <= PROCESSES * RECORDS
    if server is not None:
        server.stop()


def _open_fresh(path: str, start: Any, errors: Any) -> None:
    start.wait()  # every process opens the new file at the same moment
    try:
        ts.UsageStore(path).close()
    except Exception as e:
        errors.put(f"{type(e).__module__}.{type(e).__name__}: {e}")


def test_processes_creating_one_store_file_at_once_all_open_it(tmp_path: Path) -> None:
    """Replicas starting together on a new usage path: switching the new file to WAL fails at
    once for all but one ("database is locked", no busy wait), and that raw sqlite3 error
    ended the others."""
    ctx = multiprocessing.get_context("fork")  # quick to start: the race is in the first milliseconds
    errors = ctx.Queue()
    for round in range(30):
        path = str(tmp_path / f"usage{round}.sqlite")
        start = ctx.Barrier(8)
        workers = [ctx.Process(target=_open_fresh, args=(path, start, errors)) for _ in range(8)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert [w.exitcode for w in workers] == [0] * 8
    failed = []
    while not errors.empty():
        failed.append(errors.get())
    assert failed == []


def test_the_score_halves_every_half_life_and_counts_each_call(make_store: Store) -> None:
    now = [1000.0]
    store = make_store(half_life_s=10.0, warmup=0, clock=lambda: now[0])
    store.record("ann", "x")
    now[0] += 10.0
    store.record("ann", "x")  # 1 * 0.5 + 1
    assert store.score("ann", "x") == pytest.approx(1.5)
    now[0] += 20.0
    assert store.score("ann", "x") == pytest.approx(1.5 / 4)
    now[0] -= 100.0  # a clock that steps back adds nothing and takes nothing away
    store.record("ann", "x")
    assert store.score("ann", "x") == pytest.approx(2.5)


def test_a_tool_counts_only_after_the_warm_up_and_per_user(make_store: Store) -> None:
    store = make_store(warmup=3)
    for _ in range(2):
        store.record("ann", "x")
    assert store.score("ann", "x") == 0 and store.usage_count("ann")("x") == 0
    store.record("ann", "x")
    assert store.score("ann", "x") == pytest.approx(3, rel=1e-3)
    assert store.usage_count("ann")("x") == pytest.approx(3000, abs=2)
    assert store.score("bob", "x") == 0 and store.score("ann", "y") == 0
    store.record("a:b", "c")  # users and tools holding the key separator stay apart
    store.record("a", "b:c")
    assert make_store(warmup=1).score("a:b", "c") == pytest.approx(1, rel=1e-3)
    assert make_store(warmup=2).score("a", "b:c") == 0


@pytest.mark.parametrize(
    "options",
    [{"half_life_s": "x"}, {"half_life_s": None}, {"half_life_s": 0}, {"half_life_s": float("nan")},
     {"half_life_s": True}, {"warmup": "3"}, {"warmup": -1}, {"warmup": 1.5}, {"clock": "x"}],
)  # fmt: skip
def test_bad_store_options_are_parameter_errors(make_store: Store, options: dict[str, Any]) -> None:
    with pytest.raises(InvalidParameterError):
        make_store(**options)


@pytest.mark.parametrize("user, tool", [(5, "x"), ("ann", None), ("\ud800", "x"), ("ann", "\udfff")])
def test_users_and_tools_that_are_not_text_are_parameter_errors(make_store: Store, user: Any, tool: Any) -> None:
    store = make_store()
    with pytest.raises(InvalidParameterError):
        store.record(user, tool)
    with pytest.raises(InvalidParameterError):
        store.score(user, tool)
    if user == "ann":
        with pytest.raises(InvalidParameterError):
            store.usage_count(user)(tool)


@pytest.mark.parametrize("url", ["http://127.0.0.1:6379", "", 5, "redis://127.0.0.1:notaport"])
def test_a_bad_redis_url_is_a_parameter_error(url: Any) -> None:
    pytest.importorskip("redis")
    with pytest.raises(InvalidParameterError, match="url"):
        ts.RedisUsageStore(url).score("ann", "x")


@pytest.mark.parametrize(
    "options, field",
    [({"timeout_s": "1"}, "timeout_s"), ({"timeout_s": -1}, "timeout_s"), ({"timeout_s": float("nan")}, "timeout_s"),
     ({"timeout_s": float("inf")}, "timeout_s"), ({"timeout_s": True}, "timeout_s"),
     ({"prefix": "acme:eu"}, "prefix")],
)  # fmt: skip
def test_bad_redis_store_options_are_parameter_errors(options: dict[str, Any], field: str) -> None:
    """A bad timeout used to fail every record after the store was made; a prefix holding the
    key separator could share keys with another prefix's users ("a:usage:b" + user "c" and "a"
    + user "b:usage:c")."""
    pytest.importorskip("redis")
    with pytest.raises(InvalidParameterError, match=field):
        ts.RedisUsageStore("redis://127.0.0.1:1/0", **options)


@pytest.mark.parametrize(
    "stored", ["nan 5 1", "inf 5 1", "1e400 5 1", "1 99999999999999999999 1", "1  5 1", "abc", "5 \u0663 1"]
)
def test_a_field_another_program_wrote_counts_as_no_use_and_the_next_call_replaces_it(
    redis_server: RedisServer, stored: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A field that is not a row as the store writes it (not finite, calls past 2**53, other
    spacing or digits) is read as no use, logged, as SQLite reads a row without numbers; a NaN
    used to make every plan of the user raise ValueError, and other fields made the record
    script fail, so that the user's calls of the tool were dropped for good."""
    import redis

    redis.Redis.from_url(redis_server.url).hset("toolsift:usage:ann", "search", stored)
    store = ts.RedisUsageStore(redis_server.url, warmup=0, half_life_s=1e9)
    try:
        with caplog.at_level("WARNING", logger="toolsift"):
            assert store.score("ann", "search") == 0 and store.usage_count("ann")("search") == 0
        assert "not a usage row" in caplog.text
        options = ts.ToolTierOptions(core=["search"], usage_count=store.usage_count("ann"))
        box = ts.Toolbox(ts.Catalog([ts.Tool("search", "Search the docs")]), tiers=options)
        assert "search" in [t["function"]["name"] for t in box.tools()]
        for _ in range(3):
            store.record("ann", "search")
        assert store.score("ann", "search") == pytest.approx(3) and store.queued == 0
    finally:
        store.close()


def test_a_score_no_call_could_make_is_held_to_a_count_rather_than_overflow(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    import sqlite3

    import redis

    sqlite = ts.UsageStore(tmp_path / "usage.sqlite", warmup=0)
    sqlite.record("ann", "search")
    with sqlite3.connect(tmp_path / "usage.sqlite") as db:
        db.execute("UPDATE usage SET score = 1e306")
    redis.Redis.from_url(redis_server.url).hset("toolsift:usage:ann", "search", "1e306 5 1")
    shared = ts.RedisUsageStore(redis_server.url, warmup=0, half_life_s=float("inf"))
    try:
        for store in (sqlite, shared):
            assert store.usage_count("ann")("search") == 2**62
    finally:
        shared.close()
        sqlite.close()


def test_a_client_that_decodes_responses_reads_bytes_it_cannot_decode_as_no_use(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    import redis

    redis.Redis.from_url(redis_server.url).hset("toolsift:usage:ann", b"\xff", b"\xfe 5 1")
    store = ts.RedisUsageStore(redis.Redis.from_url(redis_server.url, decode_responses=True), warmup=0)
    try:
        with caplog.at_level("WARNING", logger="toolsift"):
            assert store.scores("ann") == {} and store.score("ann", "search") == 0
            assert store.usage_count("ann")("search") == 0
        assert "not a usage hash" in caplog.text
        store.record("bob", "search")  # the connection that failed to decode is not left half read
        assert set(store.scores("bob")) == {"search"}
    finally:
        store.close()


def test_closing_a_store_that_cannot_reach_its_server_says_how_many_calls_are_lost(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pytest.importorskip("redis")
    from redis_support import free_port

    store = ts.RedisUsageStore(f"redis://127.0.0.1:{free_port()}/0", timeout_s=0.2)
    with caplog.at_level("WARNING", logger="toolsift"):
        for tool in ("a", "b", "a"):
            store.record("ann", tool)
        store.close()
    assert "closed with 3 call(s) the server did not take" in caplog.text


def test_calls_recorded_while_redis_is_down_are_written_once_it_is_back(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis", persist=True).start()
    store = ts.RedisUsageStore(server.url, warmup=0, half_life_s=1e9, timeout_s=0.5)
    other = ts.RedisUsageStore(server.url, warmup=0, half_life_s=1e9)
    for _ in range(5):
        store.record("ann", "x")
    server.stop()
    for _ in range(7):
        store.record("ann", "x")  # queued: no error, no call lost
    assert not store.available and store.queued == 7
    assert store.score("ann", "x") == pytest.approx(12)  # the last count read, plus the queued calls
    count = store.usage_count("ann")
    assert count("x") == pytest.approx(12_000, abs=2) and count("y") == 0
    store.record("ann", "y")  # while down: the counter reads it at once, from the queue
    assert count("y") == pytest.approx(1_000, abs=2) and count("x") == pytest.approx(12_000, abs=2)
    server.start()
    assert store.flush() and store.available and store.queued == 0
    assert other.score("ann", "x") == pytest.approx(12)  # every replica sees every call
    server.stop()


def _scores(store: ts.UsageStore, user: str, tools: str = "xyz") -> dict[str, float]:
    return {t: store.score(user, t) for t in tools if store.score(user, t)}


def test_an_outage_costs_memory_by_pairs_called_not_by_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Every call made while Redis was down was one record in memory: a busy gateway in a long
    outage grew without bound. Calls of one (user, tool) are now one record, aged as the server
    ages them; past MAX_QUEUED pairs the calls of new pairs are dropped, logged and counted,
    while the pairs already waiting keep every call."""
    import toolsift.usage

    now = [1000.0]
    server = RedisServer(tmp_path / "redis", persist=True).start()
    store = ts.RedisUsageStore(server.url, warmup=0, half_life_s=50.0, clock=lambda: now[0], timeout_s=0.5)
    local = ts.UsageStore(warmup=0, half_life_s=50.0, clock=lambda: now[0])  # the same calls, counted locally
    try:
        for user, tool in [("ann", "x"), ("bob", "x")]:
            store.record(user, tool)
            local.record(user, tool)
        server.stop()
        monkeypatch.setattr(toolsift.usage, "MAX_QUEUED", 6)
        with caplog.at_level("ERROR", logger="toolsift"):
            for step in range(3000):
                now[0] += 0.1
                user, tool = ("ann", "bob")[step % 2], ("x", "y", "z")[step % 3]
                store.record(user, tool)
                local.record(user, tool)
            assert not caplog.records  # six pairs: all kept
            store.record("cy", "x")  # a seventh pair: its call is the one dropped
            store.record("cy", "x")
            assert "calls of other pairs are dropped" in caplog.text and len(caplog.records) == 1
        # six pairs held, and the first call after the outage began, sent but unanswered: not 3,000 calls
        assert store.queued == 3000 and len(store._waiting()) == 7 and store.dropped == 2
        for user in ("ann", "bob"):
            assert store.scores(user) == pytest.approx(_scores(local, user), rel=1e-9)  # read while down
        server.start()
        assert store.flush() and store.queued == 0
        fresh = ts.RedisUsageStore(server.url, warmup=0, half_life_s=50.0, clock=lambda: now[0])
        for user in ("ann", "bob"):  # exact, as if sent one by one
            assert fresh.scores(user) == pytest.approx(_scores(local, user), rel=1e-9)
        assert fresh.scores("cy") == {}
        fresh.close()
    finally:
        store.close()
        server.stop()


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork on this platform")
def test_a_forked_worker_counts_its_own_calls_once_and_the_parents_not_at_all(tmp_path: Path) -> None:
    """A pre-forking server (gunicorn --preload) forks workers after the store is made: a child
    numbered its records under the parent's high-water mark, with the parent's numbers, so
    Redis skipped the parent's next calls as already sent. Each process now has a mark of its
    own; the calls waiting at the fork are sent by whichever process sends first, under the
    parent's mark, and counted once."""
    import os

    server = RedisServer(tmp_path / "redis", persist=True).start()
    store = ts.RedisUsageStore(server.url, warmup=0, half_life_s=1e9, timeout_s=0.5)
    try:
        for _ in range(5):
            store.record("ann", "x")  # sequence numbers 1-5, applied
        server.stop()
        store.record("ann", "x")  # queued in the parent
        server.start()
        pid = os.fork()
        if pid == 0:  # the worker: three calls of its own, nothing of the parent's
            code = 1
            try:
                for _ in range(3):
                    store.record("ann", "x")
                code = 0 if store.flush() and store.queued == 0 else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        fresh = ts.RedisUsageStore(server.url, warmup=0, half_life_s=1e9)
        # the worker sent the parent's queued call too (a parent that daemonizes never flushes
        # again), under the parent's mark and number, so the parent's own copy is skipped
        assert fresh.score("ann", "x") == pytest.approx(5 + 1 + 3)
        assert store.queued == 1
        store.record("ann", "x")  # the parent goes on: its numbers 7 and 8 were the worker's too
        store.record("ann", "x")
        assert store.flush() and store.queued == 0
        assert fresh.score("ann", "x") == pytest.approx(5 + 1 + 3 + 2)  # was 9: the parent's next two skipped
        fresh.close()
    finally:
        store.close()
        server.stop()


def test_a_batch_whose_reply_cannot_be_read_is_counted_once(redis_server: RedisServer) -> None:
    """An error other than a lost connection after the server applied a batch (an unreadable
    reply, a gevent Timeout) left the batch in the queue, where the next call merged into it
    with a new number: 3 calls were counted 4 times."""
    import redis

    store = ts.RedisUsageStore(redis_server.url, warmup=0, half_life_s=1e9)
    real, garble = store._redis.pipeline, [False]

    def pipeline(*args: Any, **kwargs: Any) -> Any:
        pipe = real(*args, **kwargs)
        if garble[0]:
            execute = pipe.execute

            def applied_then_unreadable(*a: Any, **k: Any) -> Any:
                execute(*a, **k)
                raise redis.exceptions.InvalidResponse("garbled reply (test)")

            pipe.execute = applied_then_unreadable
        return pipe

    store._redis.pipeline = pipeline
    try:
        store.record("ann", "search")
        garble[0] = True
        with pytest.raises(redis.exceptions.InvalidResponse):
            store.record("ann", "search")  # applied by the server
        garble[0] = False
        store.record("ann", "search")
        assert store.flush() and _calls(redis_server) == 3
    finally:
        store.close()


def test_calls_queued_while_the_clock_steps_back_count_as_sent_one_by_one(tmp_path: Path) -> None:
    """Calls of one pair queued during an outage are sent as one record; merged, a call timed
    before the one queued was aged forwards, which the server never does (2.0 sent one by one,
    1.71 merged, at a half-life of 100 s)."""
    now = [1100.0]
    server = RedisServer(tmp_path / "redis", persist=True).start()
    store = ts.RedisUsageStore(server.url, warmup=0, half_life_s=100.0, clock=lambda: now[0], timeout_s=0.5)
    local = ts.UsageStore(warmup=0, half_life_s=100.0, clock=lambda: now[0])
    try:
        store.record("ann", "seed")  # the server was reached once
        server.stop()
        store.record("ann", "seed")  # the first call after it went: sent, unanswered, kept apart
        for at in (1100.0, 1050.0, 1120.0):  # queued: one record
            now[0] = at
            store.record("ann", "x")
            local.record("ann", "x")
        server.start()
        assert store.flush()
        fresh = ts.RedisUsageStore(server.url, warmup=0, half_life_s=100.0, clock=lambda: now[0])
        assert fresh.score("ann", "x") == pytest.approx(local.score("ann", "x"), rel=1e-12)
        fresh.close()
    finally:
        store.close()
        server.stop()


def test_a_record_redis_refuses_costs_that_record_only(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A key of another type (another program's, an old version's): the batch holding its record
    used to stay queued, raising on every later call and adding the records Redis had applied
    again at every retry."""
    import redis

    server = RedisServer(tmp_path / "redis").start()
    try:
        raw = redis.Redis.from_url(server.url)
        raw.set("toolsift:usage:mallory", "not a hash")
        raw.hset("toolsift:usage:bob", mapping={"x": "garbage", "y": "2.0 2 1.0"})
        store = ts.RedisUsageStore(server.url, warmup=0, half_life_s=1e9)
        store.record("ann", "x")
        with caplog.at_level("WARNING", logger="toolsift"):
            store.record("mallory", "x")  # refused, logged, dropped
            for _ in range(3):
                store.record("ann", "x")
            assert store.queued == 0
            assert store.score("ann", "x") == pytest.approx(4)  # each call once
            assert store.scores("mallory") == {}
            assert set(store.scores("bob")) == {"y"}  # the field that is not a row is left out
        said = " ".join(r.getMessage() for r in caplog.records)
        assert "refused 1 call(s) of 'x' by 'mallory'" in said and "not a usage row" in said
    finally:
        server.stop()


def test_reach_counts_the_users_each_tool_counts_for_after_warmup(make_store: Store) -> None:
    store = make_store(warmup=2)
    assert store.reach() == (0, {})
    for user, tool in [("ann", "a"), ("ann", "a"), ("bob", "a"), ("bob", "a"), ("bob", "b"), ("cy", "b")]:
        store.record(user, tool)
    assert store.reach() == (3, {"a": 2})  # b: one call each, under the warm-up
    assert make_store(warmup=1).reach() == (3, {"a": 2, "b": 2})  # what another process reads
    store.close()


def test_redis_reach_reads_only_its_prefix_and_skips_what_is_not_a_usage_hash(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The prefix is matched as written (a ``*`` in it is no pattern), the stores' high-water
    marks are no users, and another program's key under the prefix is skipped, logged."""
    import redis

    admin = redis.Redis.from_url(redis_server.url)
    for prefix, user in (("t*", "ann"), ("tx", "bob"), ("t*", "cy")):
        other = ts.RedisUsageStore(redis_server.url, prefix=prefix, warmup=0)
        other.record(user, "search")
        other.close()
    admin.set("t*:usage:mallory", "not a hash")
    store = ts.RedisUsageStore(redis_server.url, prefix="t*", warmup=0)
    assert store.reach() == (2, {"search": 2})
    assert "is not a usage hash, skipped" in caplog.text
    assert ts.RedisUsageStore(redis_server.url, prefix="tx", warmup=0).reach() == (1, {"search": 1})
    redis_server.stop()
    store.record("ann", "search")  # queued: the server is gone
    with pytest.raises(ts.errors.StoreUnavailableError, match="cannot be read"):
        store.reach()


def _calls(server: RedisServer, user: str = "ann", tool: str = "search") -> int:
    import redis

    client = redis.Redis.from_url(server.url)
    try:
        return int(client.hget(f"toolsift:usage:{user}", tool).split()[1])
    finally:
        client.close()


def test_calls_the_server_refuses_for_a_while_are_kept_and_sent_again(redis_server: RedisServer) -> None:
    """READONLY (a primary demoted during a failover) and OOM (maxmemory reached) pass on their
    own: the records refused then were dropped for good, with `available` still true."""
    import redis

    admin = redis.Redis.from_url(redis_server.url)
    store = ts.RedisUsageStore(redis_server.url, warmup=0)
    try:
        store.record("ann", "search")
        admin.replicaof("127.0.0.1", "1")  # a read-only replica now
        for _ in range(3):
            store.record("ann", "search")
        assert store.queued == 3 and not store.available
        admin.replicaof("NO", "ONE")
        assert store.flush() and _calls(redis_server) == 4 and store.available
        admin.config_set("maxmemory", "1")  # noeviction: writes refused with OOM
        store.record("ann", "search")
        assert store.queued == 1
        admin.config_set("maxmemory", "0")
        assert store.flush() and _calls(redis_server) == 5
    finally:
        store.close()
        admin.close()


def test_calls_made_while_the_server_cannot_snapshot_are_kept_and_sent_again(redis_server: RedisServer) -> None:
    """MISCONF: a server whose last snapshot failed (``stop-writes-on-bgsave-error``, the default)
    refuses every write until one succeeds or snapshots are turned off; the calls refused then
    must wait as during an outage, not be dropped."""
    import shutil
    import time

    import redis

    admin = redis.Redis.from_url(redis_server.url)
    store = ts.RedisUsageStore(redis_server.url, warmup=0)
    try:
        store.record("ann", "search")
        shutil.rmtree(redis_server.folder)  # the server's folder: the next snapshot cannot be written
        admin.config_set("save", "3600 1")
        admin.bgsave()
        deadline = time.monotonic() + 10
        while admin.info("persistence")["rdb_last_bgsave_status"] != "err":
            assert time.monotonic() < deadline, "the snapshot did not fail"
            time.sleep(0.05)
        for _ in range(2):
            store.record("ann", "search")
        assert store.queued == 2 and not store.available
        admin.config_set("save", "")  # snapshots off: writes are taken again
        assert store.flush() and _calls(redis_server) == 3 and store.available
    finally:
        admin.config_set("save", "")  # a server that cannot snapshot refuses to shut down
        store.close()
        admin.close()


def test_queued_answers_while_a_write_waits_for_a_stalled_server() -> None:
    """A server that accepts and never answers holds a write (and the store's lock) for up to
    ``timeout_s``; a health check reading ``queued`` meanwhile must not wait for it."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    accepted = threading.Event()

    def accept() -> None:
        held.append(listener.accept()[0])  # read nothing, answer nothing
        accepted.set()

    threading.Thread(target=accept, daemon=True).start()
    store = ts.RedisUsageStore(f"redis://127.0.0.1:{listener.getsockname()[1]}/0", warmup=0, timeout_s=60)
    writer = threading.Thread(target=store.record, args=("ann", "search"))
    writer.start()
    try:
        assert accepted.wait(30)  # the writer is connected, under the store's lock
        assert store.queued == 1 and writer.is_alive()  # answered while the write still waits
    finally:
        for conn in held:
            conn.close()  # the write fails now: the call stays queued
        writer.join(60)
        listener.close()
    assert not writer.is_alive() and store.queued == 1 and not store.available
    store.close()


class _LosesOneReply:
    """A loopback link to a real Redis that, once armed, passes one reply and swallows the next,
    as a stalled or dropped connection does after the server applied a command."""

    def __init__(self, port: int) -> None:
        import socket
        import threading

        self.armed, self.passed = False, 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]

        def pump(src: socket.socket, dst: socket.socket, replies: bool) -> None:
            try:
                while data := src.recv(65536):
                    if replies and self.armed:
                        self.passed += 1
                        if self.passed > 1:
                            continue  # lost
                    dst.sendall(data)
            except OSError:
                pass

        def accept() -> None:
            while True:
                try:
                    client, _ = self.listener.accept()
                except OSError:
                    return
                server = socket.create_connection(("127.0.0.1", port))
                threading.Thread(target=pump, args=(client, server, False), daemon=True).start()
                threading.Thread(target=pump, args=(server, client, True), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()


def test_a_batch_sent_again_after_its_reply_was_lost_is_counted_once(redis_server: RedisServer) -> None:
    """The server applied the batch but the reply never came (a timeout): the batch stayed
    queued and was sent again, counting every call in it twice."""
    link = _LosesOneReply(redis_server.port)
    store = ts.RedisUsageStore(f"redis://127.0.0.1:{link.port}/0", warmup=0, timeout_s=0.5)
    try:
        store.record("ann", "search")
        link.armed = True  # the script check's reply passes, the transaction's is lost
        store.record("ann", "search")
        link.armed = False
        assert store.queued == 1 and not store.available
        assert _calls(redis_server) == 2  # applied by the server all the same
        assert store.flush() and store.queued == 0
        assert _calls(redis_server) == 2
        store.record("ann", "search")  # later calls still count
        assert _calls(redis_server) == 3
    finally:
        store.close()
        link.listener.close()


def test_a_client_that_decodes_responses_is_read_as_well(redis_server: RedisServer) -> None:
    import redis

    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    store = ts.RedisUsageStore(client, warmup=0)
    try:
        store.record("ann", "search")
        assert store.usage_count("ann")("search") > 0 and set(store.scores("ann")) == {"search"}
    finally:
        store.close()
