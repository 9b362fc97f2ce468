"""Usage statistics for pinning: per-user, per-tool counts that age with a half-life.

A :class:`UsageStore` keeps, for each (user, tool), an exponentially decayed count of calls: each
call adds 1, and the total halves every ``half_life_s`` seconds. A tool counts for pinning only
after ``warmup`` calls by that user, so one stray call pins nothing. The store is an embedded
SQLite database (``":memory:"`` by default, or a file in WAL mode shared by processes).
Pins move only when a :class:`~toolsift.Toolbox` plan is rebuilt (``reset()``), a cache-safe
boundary; tools pinned by hand (``ToolTierOptions.pinned``) always stay core.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from .errors import InvalidParameterError, ToolsiftError
from .query import check_text

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

#: Seconds a writer waits for another process's write to finish before giving up.
BUSY_TIMEOUT_S = 30.0


def _pow(base: float, exponent: float) -> float:
    return float(base**exponent)


def _connect(path: str | Path) -> sqlite3.Connection:
    if sqlite3.sqlite_version_info < (3, 24, 0):
        raise ToolsiftError(f"UsageStore needs SQLite >= 3.24 (upserts); this Python has {sqlite3.sqlite_version}")
    db = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, check_same_thread=False, isolation_level=None)
    # SQLite has pow() only when built with its math functions: the same one everywhere, called
    # from inside the statement (so still atomic)
    db.create_function("pow", 2, _pow, deterministic=True)
    if str(path) != ":memory:":
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")  # WAL's own recommendation: a crash loses no commit
    db.execute(_SCHEMA)
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

    Raises:
        InvalidParameterError: ``half_life_s`` is not a number > 0 or ``warmup`` not an int >= 0.
    """

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        half_life_s: float = 7 * 24 * 3600.0,
        warmup: int = 3,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if isinstance(half_life_s, bool) or not isinstance(half_life_s, int | float) or not half_life_s > 0:
            raise InvalidParameterError(f"half_life_s must be a number > 0, not {half_life_s!r}")
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
            raise InvalidParameterError(f"warmup must be an int >= 0, not {warmup!r}")
        self.half_life_s, self.warmup, self.clock = float(half_life_s), warmup, clock
        self._db = _connect(path)
        self._lock = threading.Lock()

    def _decay(self, score: float, updated: float, now: float) -> float:
        return float(score * 0.5 ** (max(now - updated, 0.0) / self.half_life_s))

    def record(self, user: str, tool: str) -> None:
        """Counts one call of ``tool`` by ``user``."""
        args = (check_text("user", user), check_text("tool", tool), float(self.clock()), self.half_life_s)
        with self._lock:
            self._db.execute(_RECORD, args)

    def score(self, user: str, tool: str) -> float:
        """The decayed count of ``tool`` for ``user`` now (0 before the warm-up is reached)."""
        key = (check_text("user", user), check_text("tool", tool))
        with self._lock:
            row = self._db.execute("SELECT score, calls, updated FROM usage WHERE user=? AND tool=?", key).fetchone()
        if row is None or row[1] < self.warmup:
            return 0.0
        return self._decay(row[0], row[2], self.clock())

    def usage_count(self, user: str) -> Callable[[str], int]:
        """A ``usage_count(name) -> int`` for :class:`~toolsift.ToolTierOptions`, for one user."""
        return lambda tool: round(self.score(user, tool) * 1000)

    def close(self) -> None:
        """Closes the database."""
        self._db.close()
