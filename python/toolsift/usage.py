"""Usage statistics for pinning: per-user, per-tool counts that age with a half-life.

A :class:`UsageStore` keeps, for each (user, tool), an exponentially decayed count of calls: each
call adds 1, and the total halves every ``half_life_s`` seconds. A tool counts for pinning only
after ``warmup`` calls by that user, so one stray call pins nothing. Pins move only when a
:class:`~toolsift.Toolbox` plan is rebuilt (``reset()``), a cache-safe boundary; tools pinned by
hand (``ToolTierOptions.pinned``) always stay core.

Two stores hold the same counts under the same rules (:class:`Usage` is what both offer):

* :class:`UsageStore`, the default: an embedded SQLite database (``":memory:"``, or a file in WAL
  mode shared by the processes of one machine);
* :class:`RedisUsageStore`: a Redis (or Valkey) server shared by gateway replicas on several
  machines (``pip install 'toolsift[cluster]'``). Each record is one Lua script, atomic in the
  server, so replicas lose no update. While the server cannot be reached, records wait in the
  process and are written once it is back (none lost; reads meanwhile give the last counts seen).
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
import os
import re
import secrets
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from .arguments import file_path, number
from .errors import InvalidParameterError, MissingExtraError, StoreFormatError, StoreUnavailableError, ToolsiftError
from .query import check_text


class Usage(Protocol):
    """What a usage store offers (:class:`UsageStore`, :class:`RedisUsageStore`)."""

    warmup: int

    def record(self, user: str, tool: str) -> None:
        """Counts one call of ``tool`` by ``user``."""

    def score(self, user: str, tool: str) -> float:
        """The decayed count of ``tool`` for ``user`` now (0 before the warm-up is reached)."""

    def usage_count(self, user: str) -> Callable[[str], int]:
        """A ``usage_count(name) -> int`` for :class:`~toolsift.ToolTierOptions`, for one user."""

    def close(self) -> None:
        """Releases the store's connection."""


_SCHEMA = """CREATE TABLE IF NOT EXISTS usage (
    user TEXT NOT NULL, tool TEXT NOT NULL, score REAL NOT NULL, calls INTEGER NOT NULL,
    updated REAL NOT NULL, PRIMARY KEY (user, tool))"""

# One statement, so SQLite applies it atomically however many processes share the file: the
# stored score is aged to ``now`` and one call added in the same write (a clock that steps back
# ages nothing and never moves ``updated`` back).
_RECORD = """INSERT INTO usage (user, tool, score, calls, updated) VALUES (?1, ?2, 1.0, 1, ?3)
    ON CONFLICT (user, tool) DO UPDATE SET
        score = score * pow(0.5, max(excluded.updated - updated, 0.0) / ?4) + 1.0,
        calls = calls + 1,
        updated = max(updated, excluded.updated)"""

log = logging.getLogger("toolsift")

#: Seconds a writer waits for another process's write to finish before giving up.
BUSY_TIMEOUT_S = 30.0


def _pow(base: float, exponent: float) -> float:
    return float(base**exponent)


def _connect(path: str | Path, read_only: bool) -> sqlite3.Connection:
    return open_sqlite(path, _SCHEMA, read_only=read_only)


#: The tables of toolsift's stores (:class:`UsageStore`, :class:`~toolsift.Learned`), which may
#: share one file: a file holding tables, none of them these, is another program's database.
STORE_TABLES = frozenset({"usage", "learned"})


def _columns(db: sqlite3.Connection, table: str) -> list[tuple[str, str]]:
    return [(str(r[1]), str(r[2]).upper()) for r in db.execute(f"PRAGMA table_info({table})")]


@functools.cache
def _expected(schema: str) -> tuple[str, list[tuple[str, str]]]:
    """The table ``schema`` creates and its columns (name, type)."""
    with sqlite3.connect(":memory:") as db:
        db.execute(schema)
        (table,) = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchone()
        return str(table), _columns(db, table)


def _check_tables(db: sqlite3.Connection, schema: str, path: str, *, required: bool) -> None:
    """Refuses another program's database (tables, none of toolsift's), a table of ``schema``'s
    name with other columns and, when ``required``, a file without it, before anything is
    written to the file."""
    table, columns = _expected(schema)
    # SQLite's table names ignore (ASCII) case: another program's "Usage" is the usage table
    tables = {str(r[0]).lower() for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if required and table not in tables:
        raise StoreFormatError(f"the file has no {table} table", path=path)
    if tables and not tables & STORE_TABLES:
        raise StoreFormatError(f"the file holds another program's tables ({', '.join(sorted(tables)[:5])})", path=path)
    if table in tables and _columns(db, table) != columns:
        raise StoreFormatError(f"its {table} table is not toolsift's (other columns)", path=path)


def busy(e: sqlite3.OperationalError) -> bool:
    return "locked" in str(e) or "busy" in str(e)


def store_error(e: sqlite3.DatabaseError, path: str, what: str) -> Exception:
    """The typed error of a failed read or write of ``what`` in a store: locked past the busy
    timeout (:class:`~toolsift.errors.StoreUnavailableError`), else damaged (``StoreFormatError``);
    a store used after :meth:`close` is no damage, and keeps SQLite's ``ProgrammingError``."""
    if isinstance(e, sqlite3.ProgrammingError):
        return e
    if isinstance(e, sqlite3.OperationalError) and busy(e):
        return StoreUnavailableError(f"{path}: the store stayed locked by another process ({e})")
    return StoreFormatError(f"{what} cannot be read or written ({e})", path=path)


def _until_free(db: sqlite3.Connection, statement: str, deadline: float) -> None:
    """Runs ``statement``, again while another process holds the file (until ``deadline``):
    switching to WAL fails at once with "database is locked" when processes open a new file
    together, without waiting for the busy timeout as other statements do."""
    while True:
        try:
            db.execute(statement)
            return
        except sqlite3.OperationalError as e:
            if not busy(e) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def open_sqlite(path: str | Path, schema: str, *, read_only: bool = False) -> sqlite3.Connection:
    """A connection to the SQLite database at ``path`` for decayed counts (``pow`` defined, WAL
    mode for a file, autocommit), with the table of ``schema`` created if missing; or, with
    ``read_only``, a connection that writes nothing to an existing file that must hold that
    table (for reports on a store, which must not change the file they are given). Another
    program's database, or a table of that name with other columns, is refused with
    :class:`~toolsift.errors.StoreFormatError` before anything is written to it."""
    if sqlite3.sqlite_version_info < (3, 24, 0):
        raise ToolsiftError(f"toolsift needs SQLite >= 3.24 (upserts); this Python has {sqlite3.sqlite_version}")
    if path != ":memory:":
        file_path(path)  # not a number (which would name a file "5"), nor a path with a NUL
    if read_only and (str(path) == ":memory:" or not Path(path).is_file()):
        raise StoreFormatError("no such store file to read", path=str(path))
    target = f"{Path(path).resolve().as_uri()}?mode=ro" if read_only else str(path)
    try:
        db = sqlite3.connect(
            target, timeout=BUSY_TIMEOUT_S, check_same_thread=False, isolation_level=None, uri=read_only
        )
    except sqlite3.Error as e:
        raise StoreFormatError(f"cannot open the store ({e})", path=str(path)) from None
    try:
        # SQLite has pow() only when built with its math functions: the same one everywhere,
        # called from inside the statement (so still atomic)
        db.create_function("pow", 2, _pow, deterministic=True)
        try:
            _check_tables(db, schema, str(path), required=read_only)
        except StoreFormatError:
            db.close()
            raise
        if read_only:
            return db
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        if str(path) != ":memory:":
            _until_free(db, "PRAGMA journal_mode=WAL", deadline)
            db.execute("PRAGMA synchronous=NORMAL")  # WAL's own recommendation: a crash loses no commit
        _until_free(db, schema, deadline)
    except sqlite3.OperationalError as e:
        db.close()
        if busy(e):  # another process held it past the busy timeout: not the file's fault
            raise StoreUnavailableError(
                f"{path}: the store stayed locked by another process for {BUSY_TIMEOUT_S:g} s ({e})"
            ) from None
        if read_only and "readonly" in str(e):  # WAL: its -shm file cannot be made
            raise StoreFormatError(
                f"cannot read the store in a folder this process may not write to ({e}): SQLite "
                "needs a shared-memory file beside a store in WAL mode",
                path=str(path),
            ) from None
        raise StoreFormatError(f"not a usable SQLite store ({e})", path=str(path)) from None
    except sqlite3.DatabaseError as e:  # "file is not a database", "database disk image is malformed"
        db.close()
        raise StoreFormatError(f"not a SQLite store ({e})", path=str(path)) from None
    return db


class UsageStore:
    """Decayed per-user tool usage in SQLite.

    Every :meth:`record` is one atomic SQL statement, so processes sharing a file lose no call;
    a writer waits up to :data:`BUSY_TIMEOUT_S` for the others.

    Args:
        path: Database file, or ``":memory:"``.
        half_life_s: Seconds after which a call counts half as much (default one week).
        warmup: Calls a user must make before a tool counts at all.
        clock: Time source (seconds); tests pass a fake one.
        read_only: Read an existing store without writing to its file (no table created, its
            journal mode left as it is); :meth:`record` then raises. A store in WAL mode (as
            toolsift writes them) still needs its folder writable: SQLite keeps a shared-memory
            file beside it while reading.

    Raises:
        InvalidParameterError: ``half_life_s`` is not a number > 0, ``warmup`` not an int >= 0,
            ``clock`` not callable, or ``read_only`` not a bool.
        StoreFormatError: ``path`` is not a SQLite database, or cannot be created (read-only: is
            not a file holding the usage table).
    """

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        half_life_s: float = 7 * 24 * 3600.0,
        warmup: int = 3,
        clock: Callable[[], float] = time.time,
        read_only: bool = False,
    ) -> None:
        self.half_life_s, self.warmup, self.clock = _checked(half_life_s, warmup, clock), warmup, clock
        if not isinstance(read_only, bool):
            raise InvalidParameterError(f"read_only must be a bool, not {read_only!r}")
        self.read_only = read_only
        self._db = _connect(path, self.read_only)
        self._path = str(path)
        self._lock = threading.Lock()

    def _decay(self, score: float, updated: float, now: float) -> float:
        return _decay(score, updated, now, self.half_life_s)

    def record(self, user: str, tool: str) -> None:
        """Counts one call of ``tool`` by ``user``."""
        if self.read_only:
            raise InvalidParameterError("this usage store was opened read-only: it records no call")
        args = (check_text("user", user), check_text("tool", tool), float(self.clock()), self.half_life_s)
        with self._lock:
            try:
                self._db.execute(_RECORD, args)
            except sqlite3.DatabaseError as e:
                raise store_error(e, self._path, "the usage counts") from None

    def score(self, user: str, tool: str) -> float:
        """The decayed count of ``tool`` for ``user`` now (0 before the warm-up is reached, and
        for a row another program wrote that holds no numbers, which is logged)."""
        key = (check_text("user", user), check_text("tool", tool))
        with self._lock:
            try:
                row = self._db.execute(
                    "SELECT score, calls, updated FROM usage WHERE user=? AND tool=?", key
                ).fetchone()
            except sqlite3.DatabaseError as e:
                raise store_error(e, self._path, "the usage counts") from None
        if row is None:
            return 0.0
        if not all(type(x) in (int, float) and math.isfinite(x) for x in row):
            log.warning("%s: the usage row of %r for %r holds no numbers; counted as no use", self._path, *key)
            return 0.0
        if row[1] < self.warmup:
            return 0.0
        return self._decay(row[0], row[2], self.clock())

    def usage_count(self, user: str) -> Callable[[str], int]:
        """A ``usage_count(name) -> int`` for :class:`~toolsift.ToolTierOptions`, for one user."""
        return lambda tool: milli(self.score(user, tool))

    def reach(self) -> tuple[int, dict[str, int]]:
        """How many users the store holds, and for each tool how many of them it counts for
        (past the warm-up), sorted by tool name: what pin suggestions are made of."""
        with self._lock:
            try:
                users = self._db.execute("SELECT COUNT(DISTINCT user) FROM usage").fetchone()[0]
                rows = self._db.execute(
                    "SELECT tool, COUNT(*) FROM usage WHERE typeof(calls) IN ('integer', 'real') AND calls >= ?"
                    " GROUP BY tool ORDER BY tool",
                    (self.warmup,),
                ).fetchall()
            except sqlite3.DatabaseError as e:
                raise store_error(e, self._path, "the usage counts") from None
        return int(users), {str(tool): int(n) for tool, n in rows}

    def close(self) -> None:
        """Closes the database."""
        self._db.close()


def milli(score: float) -> int:
    """``score`` in thousandths, as ``usage_count`` gives it: a score no call could have made
    (another program's row) is held at ±2**62 rather than overflow."""
    return round(max(min(score * 1000, _MOST_MILLI), -_MOST_MILLI))


_MOST_MILLI = float(2**62)


def positive_number(what: str, value: Any) -> float:
    """``value`` as a float if it is a number > 0 (:class:`InvalidParameterError` otherwise)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise InvalidParameterError(f"{what} must be a number > 0, not {value!r}")
    return number(what, value)


def _checked(half_life_s: Any, warmup: Any, clock: Any) -> float:
    positive_number("half_life_s", half_life_s)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise InvalidParameterError(f"warmup must be an int >= 0, not {warmup!r}")
    if not callable(clock):
        raise InvalidParameterError(f"clock must be a function returning seconds, not {type(clock).__name__}")
    return float(half_life_s)


def _decay(score: float, updated: float, now: float, half_life_s: float) -> float:
    return float(score * 0.5 ** (max(now - updated, 0.0) / half_life_s))


# The SQLite statement's rule, run atomically inside Redis: the stored score is aged to the
# call's time and the calls added (ARGV[6], their score aged to the latest of them, ARGV[2]; ARGV[7]
# calls: calls of one tool queued while the server was down are sent as one); ``updated`` never
# moves back. A user's tools are the fields of
# one hash, each "score calls updated" with 17 significant digits, so a score survives the round
# trip through text to the bit and one read fetches every tool of a user. Each record carries
# its store's sequence number, kept as a high-water mark (KEYS[2], one key per store, expiring
# SENT_TTL_S after its last write): a batch sent again after its reply was lost (a timeout or a
# dropped connection after the server applied it) is not counted twice. A stored value that is
# not such a row (another program's; see ``_row``, the same grammar) is replaced by the call's,
# as SQLite's statement replaces a row without numbers.
_RECORD_LUA = """
local MOST_CALLS = 9007199254740992
local seq = tonumber(ARGV[4])
if seq <= tonumber(redis.call('GET', KEYS[2]) or '0') then
  return redis.call('HGET', KEYS[1], ARGV[1])
end
redis.call('SET', KEYS[2], ARGV[4], 'EX', ARGV[5])
local now, half = tonumber(ARGV[2]), tonumber(ARGV[3])
local added, n = tonumber(ARGV[6]), tonumber(ARGV[7])
local old = redis.call('HGET', KEYS[1], ARGV[1])
local score, calls, updated = added, n, now
local s, c, u = string.match(old or '', '^([-+.%deE]+) (%d+) ([-+.%deE]+)$')
s, c, u = tonumber(s), tonumber(c), tonumber(u)
local function finite(x) return x and x == x and x ~= math.huge and x ~= -math.huge end
if finite(s) and finite(u) and c and c <= MOST_CALLS then
  score = s * math.pow(0.5, math.max(now - u, 0) / half) + added
  calls = c + n
  updated = math.max(u, now)
end
local written = string.format('%.17g %d %.17g', score, calls, updated)
redis.call('HSET', KEYS[1], ARGV[1], written)
return written
"""

#: Seconds a ``usage_count`` of a :class:`RedisUsageStore` keeps the counts it read (every tool
#: of the user in one round trip) before reading them again; a record by the same store
#: refreshes them at once.
USAGE_COUNT_TTL_S = 1.0

#: Seconds a :class:`RedisUsageStore` waits before trying an unreachable server again (records
#: meanwhile wait in the process, and cost no network round trip).
RETRY_S = 1.0
#: Most waiting records written to Redis in one round trip (a MULTI transaction).
FLUSH_BATCH = 500
#: Most (user, tool) pairs a :class:`RedisUsageStore` holds queued while the server cannot be
#: reached (calls of a pair already queued are added to it, so an outage of any length costs
#: memory by pairs, not by calls); past it, calls of other pairs are dropped (logged once an
#: outage, counted in :attr:`RedisUsageStore.dropped`) while those already waiting keep
#: counting. Also the most rows it keeps as last read, for reads while the server is down.
MAX_QUEUED = 100_000
#: Users' hashes read in one round trip by :meth:`RedisUsageStore.reach`.
REACH_BATCH = 500
#: Seconds a store's high-water mark of records written lives in Redis after its last write
#: (what keeps a batch sent again from being counted twice).
SENT_TTL_S = 7 * 24 * 3600

#: Errors Redis answers while it cannot take writes for a while (a replica during a failover,
#: ``maxmemory`` reached, a cluster reconfiguring, a dataset loading, a script running, a
#: failing snapshot with ``stop-writes-on-bgsave-error``): the
#: records are kept and sent again later, as when the server cannot be reached.
_PASSING = ("READONLY", "OOM", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "LOADING", "BUSY", "NOREPLICAS", "MISCONF")


@functools.cache
def _passing_kinds() -> tuple[type[BaseException], ...]:
    """The client's classes of those errors (it names most by class, the code taken off the message)."""
    redis = redis_module()
    names = ("ReadOnlyError", "OutOfMemoryError", "BusyLoadingError", "MasterDownError", "TryAgainError")
    return tuple(getattr(redis.exceptions, n) for n in (*names, "ClusterDownError"))


def _passing(error: object) -> bool:
    if not isinstance(error, Exception):
        return False
    return isinstance(error, _passing_kinds()) or str(error).lstrip().startswith(_PASSING)


def redis_module() -> Any:
    """The ``redis`` client package (:class:`~toolsift.errors.MissingExtraError` without it)."""
    try:
        import redis
    except ImportError:
        raise MissingExtraError("the Redis store needs the redis client: pip install 'toolsift[cluster]'") from None
    return redis


class RedisUsageStore:
    """:class:`UsageStore`'s counts in a Redis (or Valkey) server, shared by processes on any
    number of machines.

    Each user is one hash, ``<prefix>:usage:<user>``, a field per tool; a record is one Lua
    script, so concurrent writers lose no call. Records are queued in the process, then written
    in order (in the same call when the server answers). While it cannot be reached they stay
    queued, :attr:`available` is false, and later records and reads try again (at most once
    per :data:`RETRY_S`): no call is lost while this process lives, and reads answer from the
    last counts this process read plus its queued calls. Queued calls of one (user, tool) are
    kept as one record, aged as the server would age them, so memory grows with the pairs
    called during an outage, up to :data:`MAX_QUEUED`, not with the calls.

    Args:
        url: ``redis://[:password@]host:port/db``, ``rediss://`` (TLS) or ``unix://`` URL; or a
            ``redis.Redis`` client.
        prefix: Namespace of the keys, so several deployments can share one server (no ``:``).
        half_life_s: As for :class:`UsageStore`.
        warmup: As for :class:`UsageStore`.
        clock: As for :class:`UsageStore`.
        timeout_s: Seconds a connection attempt or a command may take before the server counts as
            unreachable.

    Raises:
        InvalidParameterError: A bad ``half_life_s``, ``warmup``, ``clock``, ``prefix``, ``url``
            or ``timeout_s``.
    """

    def __init__(
        self,
        url: Any = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "toolsift",
        half_life_s: float = 7 * 24 * 3600.0,
        warmup: int = 3,
        clock: Callable[[], float] = time.time,
        timeout_s: float = 1.0,
    ) -> None:
        self.half_life_s, self.warmup, self.clock = _checked(half_life_s, warmup, clock), warmup, clock
        if not isinstance(prefix, str) or not prefix or ":" in prefix:
            # "a:usage:b" for user "c" and "a" for user "b:usage:c" would share a key
            raise InvalidParameterError(f"prefix must be a non-empty string without ':', not {prefix!r}")
        self.prefix = check_text("prefix", prefix)
        self._redis = redis_client(url, timeout_s)
        self._script = self._redis.register_script(_RECORD_LUA)
        self._sent_key = f"{self.prefix}:usage-sent:{secrets.token_hex(8)}"  # this store's high-water mark
        self._pid = os.getpid()
        _STORES.add(self)
        self._sequence = 0
        # calls not yet in Redis, by (user, tool): [score aged to `at`, calls, at, sequence], in
        # sequence order (a pair called again moves to the end with a new number)
        self._queued: dict[tuple[str, str], list[Any]] = {}
        # records that may have reached the server (a batch whose reply was lost, or the queue
        # at a fork, which the parent and its children may each send): sent again as they were,
        # under the mark they were numbered by, before the queue (the server skips those it
        # applied), and never merged with later calls
        self._doubt: list[tuple[tuple[str, str], list[Any], str]] = []
        self._count = 0  # calls in _doubt and _queued
        self._dropping = False  # calls dropped since the queue was last empty
        self.dropped = 0
        """Calls dropped because :data:`MAX_QUEUED` other pairs were waiting for the server."""
        self._known: dict[tuple[str, str], tuple[float, int, float]] = {}  # last read (score, calls, updated)
        self._lock = threading.Lock()
        self._retry_at = 0.0
        self._writes = 0  # batches written: a usage_count's cache is stale after one
        self._recorded = 0  # records taken: so is it after one of those while the server is down
        self.available = True
        """Whether the last attempt to reach the server succeeded."""

    def _key(self, user: str) -> str:
        return f"{self.prefix}:usage:{user}"

    def record(self, user: str, tool: str) -> None:
        """Counts one call of ``tool`` by ``user`` (queued when the server cannot be reached)."""
        user, tool, at = check_text("user", user), check_text("tool", tool), float(self.clock())
        self._check_fork()
        with self._lock:
            self._queue((user, tool), [1.0, 1, at])
            self._recorded += 1
            self._flush()

    def _queue(self, key: tuple[str, str], record: list[Any], earlier: bool = False) -> None:
        """Adds ``record`` ([score, calls, at]) to the calls of ``key`` waiting, at the end of
        the queue with a new sequence number, as the server adds calls to a stored row (the
        older part aged to the newer one's time, never forwards). ``earlier``: ``record`` came
        before the calls queued (a record queued again after the server refused it)."""
        queued = self._queued.pop(key, None)
        if queued is not None:
            older, newer = (record, queued) if earlier else (queued, record)
            score = _decay(older[0], older[2], newer[2], self.half_life_s) + newer[0]
            record = [score, older[1] + newer[1], max(older[2], newer[2])]
            self._count -= queued[1]
        elif len(self._queued) >= MAX_QUEUED:  # the calls of pairs already waiting keep counting
            if not self._dropping:
                log.error(
                    "usage store: %d (user, tool) pairs waiting for the server, calls of other pairs are dropped "
                    "until it is back",
                    MAX_QUEUED,
                )
            self._dropping = True
            self.dropped += record[1]
            return
        self._sequence += 1
        self._queued[key] = [*record, self._sequence]
        self._count += record[1]

    def flush(self) -> bool:
        """Writes queued records now; true when none is left waiting."""
        self._check_fork()
        with self._lock:
            self._retry_at = 0.0
            return self._flush()

    @property
    def queued(self) -> int:
        """Calls waiting for the server (read without waiting for a write in progress)."""
        return self._count if os.getpid() == self._pid else 0  # forked without the hooks: none here

    def _waiting(self) -> list[tuple[tuple[str, str], list[Any]]]:
        return [*((key, record) for key, record, _ in self._doubt), *self._queued.items()]

    def _freeze(self) -> None:
        """Before a fork (its lock held): the queue goes into doubt under this process's mark,
        so that the parent and each child may send it and the server counts it once."""
        self._doubt.extend((key, record, self._sent_key) for key, record in self._queued.items())
        self._queued = {}

    def _forked(self, frozen: bool) -> None:
        """In a process forked from the one that made this store (a pre-forking server): its
        records are numbered under a mark of its own (under the parent's, with the parent's
        numbers, the server would skip the parent's next calls as already sent), with a new
        lock (one another thread held at the fork stays held). ``frozen``: the fork hooks ran,
        so the parent's waiting calls are in doubt, and this process sends them too; else (a
        fork that skips them, as uWSGI's own by default) only the parent may, and they are
        dropped here."""
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._sent_key = f"{self.prefix}:usage-sent:{secrets.token_hex(8)}"
        self._sequence, self._retry_at, self._dropping, self.dropped, self.available = 0, 0.0, False, 0, True
        if not frozen:
            self._queued, self._doubt = {}, []
        self._count = sum(record[1] for _, record in self._waiting())

    def _check_fork(self) -> None:
        """:meth:`_forked` when this process is not the one that made the store and no fork
        hook told it so: checked before the lock, which may be held for good."""
        if os.getpid() != self._pid:
            with _FORK_LOCK:
                if os.getpid() != self._pid:
                    self._forked(frozen=False)

    def _flush(self) -> bool:
        redis = redis_module()
        while self._doubt or self._queued:
            if time.monotonic() < self._retry_at:
                return False
            doubt = bool(self._doubt)
            batch = (
                self._doubt[:FLUSH_BATCH]
                if doubt
                else [
                    (key, record, self._sent_key) for key, record in itertools.islice(self._queued.items(), FLUSH_BATCH)
                ]
            )
            try:
                with self._redis.pipeline(transaction=True) as pipe:
                    for (user, tool), (score, calls, at, seq), mark in batch:
                        args = [tool, repr(at), repr(self.half_life_s), seq, SENT_TTL_S, repr(score), calls]
                        self._script(keys=[self._key(user), mark], args=args, client=pipe)
                    # each record's own answer: one the server refuses (a key of another type)
                    # must not hold back, nor have sent again, the records it applied
                    written = pipe.execute(raise_on_error=False)
            except redis.ResponseError as e:  # the whole batch refused, so none of it applied
                if _passing(e):
                    self._down(e)
                    return False
                log.error("usage store refused %d records, which are dropped: %s", len(batch), e)
                written = [e] * len(batch)
            except BaseException as e:  # the server may have applied the batch: sent again as it is
                if not doubt:  # (the sequence numbers keep it from counting twice), never merged
                    for key, _, _ in batch:
                        del self._queued[key]
                    self._doubt.extend(batch)
                if isinstance(e, redis.ConnectionError | redis.TimeoutError):
                    self._down(e)
                    return False
                raise
            if doubt:
                del self._doubt[: len(batch)]
            else:
                for key, _, _ in batch:
                    del self._queued[key]
            self._count -= sum(record[1] for _, record, _ in batch)
            first = None  # records not applied, for a while: queued again, with new numbers
            for (key, record, _), row in zip(batch, written, strict=True):
                if _passing(row):
                    self._queue(key, record[:3], earlier=True)
                    first = first or row
                elif isinstance(row, Exception):
                    log.error("usage store refused %d call(s) of %r by %r, dropped: %s", record[1], key[1], key[0], row)
                elif (known := _row(row)) is not None:
                    self._remember(key, known)
            self._writes += 1
            if first is not None:
                self._down(first)
                return False
            self.available = True
        self._dropping = False
        return True

    def _remember(self, key: tuple[str, str], row: tuple[float, int, float]) -> None:
        """Keeps ``row`` as the last one read of ``key``, for reads while the server cannot be
        reached: at most :data:`MAX_QUEUED` rows, the first kept dropped first."""
        if key not in self._known and len(self._known) >= MAX_QUEUED:
            del self._known[next(iter(self._known))]
        self._known[key] = row

    def _down(self, error: Exception) -> None:
        if self.available:
            log.warning("usage store unreachable or not taking writes, counting locally until it is back: %s", error)
        self.available, self._retry_at = False, time.monotonic() + RETRY_S

    def score(self, user: str, tool: str) -> float:
        """The decayed count of ``tool`` for ``user`` now (0 before the warm-up is reached)."""
        key = (check_text("user", user), check_text("tool", tool))
        return self._scored(self._read(key[0], key[1]).get(key[1]))

    def scores(self, user: str) -> dict[str, float]:
        """The decayed count of every tool ``user`` has called (past the warm-up), in one read."""
        return {tool: self._scored(row) for tool, row in self._read(check_text("user", user), None).items()}

    def _scored(self, row: tuple[float, int, float] | None) -> float:
        if row is None or row[1] < self.warmup:
            return 0.0
        return _decay(row[0], row[2], self.clock(), self.half_life_s)

    def _read(self, user: str, tool: str | None) -> dict[str, tuple[float, int, float]]:
        """The rows of ``user`` (one tool, or all): from Redis, or else the last read ones plus
        this process's queued calls."""
        redis = redis_module()
        self._check_fork()
        with self._lock:
            self._flush()
            if time.monotonic() >= self._retry_at:
                try:
                    if tool is None:
                        fields = self._redis.hgetall(self._key(user)).items()  # str keys: decode_responses
                        got = {k.decode(errors="replace") if isinstance(k, bytes) else k: v for k, v in fields}
                    else:
                        got = {tool: self._redis.hget(self._key(user), tool)}
                    rows = {t: row for t, v in got.items() if v is not None and (row := _row(v)) is not None}
                    for t, row in rows.items():
                        self._remember((user, t), row)
                    self.available = True
                    return rows
                except (redis.ConnectionError, redis.TimeoutError) as e:
                    self._down(e)
                except (redis.ResponseError, redis.DataError, UnicodeDecodeError) as e:
                    # the key holds something else (another program's), or bytes a client that
                    # decodes answers cannot decode (the client closes that connection)
                    log.warning("usage store: %s is not a usage hash, read as no calls: %s", self._key(user), e)
                    return {}
            return self._estimates(user, tool)

    def _estimates(self, user: str, tool: str | None) -> dict[str, tuple[float, int, float]]:
        """The last counts read for ``user`` (one tool, or all) with this process's queued calls
        added, in one pass over each (a plan asks for every tool while the server is down)."""
        if tool is None:
            rows = {t: row for (u, t), row in self._known.items() if u == user}
        else:
            rows = {tool: row} if (row := self._known.get((user, tool))) is not None else {}
        for (u, t), (added, n, at, _) in self._waiting():
            if u != user or (tool is not None and t != tool):
                continue
            row = rows.get(t)
            if row is None:
                rows[t] = (added, n, at)
            else:
                score, calls, updated = row
                rows[t] = (_decay(score, updated, at, self.half_life_s) + added, calls + n, max(updated, at))
        return rows

    def usage_count(self, user: str) -> Callable[[str], int]:
        """A ``usage_count(name) -> int`` for :class:`~toolsift.ToolTierOptions`, for one user: it
        reads every tool of the user at once (a plan asks for each tool) and keeps the counts for
        :data:`USAGE_COUNT_TTL_S`, or until this store records a call."""
        check_text("user", user)
        cache: dict[str, Any] = {"at": -math.inf, "seen": None, "scores": {}}

        def count(tool: str) -> int:
            check_text("tool", tool)
            seen = (self._writes, self._recorded)
            if time.monotonic() - cache["at"] > USAGE_COUNT_TTL_S or cache["seen"] != seen:
                cache.update(scores=self.scores(user), at=time.monotonic(), seen=seen)
            return milli(float(cache["scores"].get(tool, 0.0)))

        return count

    def reach(self) -> tuple[int, dict[str, int]]:
        """As :meth:`UsageStore.reach`: how many users the server holds counts for under this
        prefix, and for each tool how many of them it counts for (past the warm-up), sorted by
        tool name: what ``toolsift doctor`` makes pin suggestions of. This process's queued
        calls are written first; a key of another type, or a field that is not a row, is skipped
        (logged), as reads skip it.

        Raises:
            StoreUnavailableError: The server cannot be reached (or is not taking writes, with
                calls of this process waiting).
        """
        redis = redis_module()
        self._check_fork()
        users, counts = 0, dict[str, int]()
        with self._lock:
            self._retry_at = 0.0
            self._flush()
            try:
                if self._count:  # the server did not take them: the counts would be short
                    raise redis.ConnectionError(f"{self._count} call(s) of this process are not written")
                pattern = re.sub(r"([*?\[\]\\])", r"\\\1", f"{self.prefix}:usage:") + "*"
                keys = sorted(set(self._redis.scan_iter(match=pattern, count=1000)))  # SCAN may repeat one
                for start in range(0, len(keys), REACH_BATCH):
                    batch = keys[start : start + REACH_BATCH]
                    pipe = self._redis.pipeline(transaction=False)
                    for key in batch:
                        pipe.hgetall(key)
                    for key, fields in zip(batch, pipe.execute(raise_on_error=False), strict=True):
                        if not isinstance(fields, dict):  # WRONGTYPE: another program's key
                            log.warning("usage store: %r is not a usage hash, skipped: %s", key, fields)
                            continue
                        users += 1
                        for tool, value in fields.items():
                            row = _row(value)
                            if row is not None and row[1] >= self.warmup:
                                name = tool.decode(errors="replace") if isinstance(tool, bytes) else str(tool)
                                counts[name] = counts.get(name, 0) + 1
            except (redis.ConnectionError, redis.TimeoutError) as e:
                self._down(e)
                raise StoreUnavailableError(f"the usage store cannot be read: {e}") from None
        return users, dict(sorted(counts.items()))

    def close(self) -> None:
        """Writes what it can of the queued records and closes the connection; calls the server
        could not take are lost, and logged as an error with their number."""
        self._check_fork()
        with self._lock:
            self._retry_at = 0.0
            self._flush()
            if self._count:
                log.error("usage store closed with %d call(s) the server did not take; they are lost", self._count)
        self._redis.close()


# The stores of this process: before a fork each one's queue goes into doubt, under its lock
# (held across the fork, so that no thread is midway through a write then), and in the child
# each is made anew (see RedisUsageStore._forked).
_STORES: weakref.WeakSet[RedisUsageStore] = weakref.WeakSet()
_FORK_LOCK = threading.Lock()  # a store found forked without the hooks is made anew once
_HELD: list[RedisUsageStore] = []  # the stores whose locks a fork in progress holds


def _before_fork() -> None:
    for store in list(_STORES):
        if store._pid == os.getpid():  # a store inherited and never used here has no lock of ours
            store._lock.acquire()
            _HELD.append(store)
            store._freeze()


def _after_fork_in_parent() -> None:
    while _HELD:
        _HELD.pop()._lock.release()


def _after_fork_in_child() -> None:
    for store in _HELD:
        store._forked(frozen=True)
    _HELD.clear()
    for store in list(_STORES):  # stores this process inherited unused: as a fork without hooks
        if store._pid != os.getpid():
            store._forked(frozen=False)


if hasattr(os, "register_at_fork"):  # not on Windows, which does not fork
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)


def _row(value: object) -> tuple[float, int, float] | None:
    """A stored ``score calls updated`` field (finite numbers, calls a whole number up to
    2**53, one space apart: the grammar the record script reads); ``None`` (logged, read as no
    calls) for one that is not, such as a field another program wrote."""
    try:
        text = value.decode("ascii") if isinstance(value, bytes) else value
    except UnicodeDecodeError:
        text = None
    found = _ROW.fullmatch(text) if isinstance(text, str) else None
    try:
        row = (float(found[1]), int(found[2]), float(found[3])) if found else None
    except ValueError:  # characters of a number, not one
        row = None
    if row is None or not (math.isfinite(row[0]) and math.isfinite(row[2]) and row[1] <= _MOST_CALLS):
        log.warning("usage store: a field that is not a usage row (finite score, calls, updated) is ignored: %r", value)
        return None
    return row


_ROW = re.compile(r"([-+.0-9eE]+) ([0-9]+) ([-+.0-9eE]+)", re.ASCII)
_MOST_CALLS = 2**53


def redis_client(url: Any, timeout_s: float = 1.0) -> Any:
    """A ``redis.Redis`` for ``url`` (returned as it is when it already is a client).

    Raises:
        InvalidParameterError: ``url`` is not a ``redis://``, ``rediss://`` or ``unix://`` URL,
            or ``timeout_s`` is not a finite number of seconds > 0.
    """
    redis = redis_module()
    if not math.isfinite(positive_number("timeout_s", timeout_s)):
        raise InvalidParameterError(f"timeout_s must be a finite number of seconds, not {timeout_s!r}")
    if isinstance(url, redis.Redis):
        return url
    if not isinstance(url, str) or not url.startswith(("redis://", "rediss://", "unix://")):
        raise InvalidParameterError("the Redis url must start with redis://, rediss:// or unix://")
    try:
        return redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
    except ValueError as e:
        raise InvalidParameterError(f"not a usable Redis url: {e}") from None
