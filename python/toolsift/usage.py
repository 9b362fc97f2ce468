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

from .errors import InvalidParameterError

_SCHEMA = """CREATE TABLE IF NOT EXISTS usage (
    user TEXT NOT NULL, tool TEXT NOT NULL, score REAL NOT NULL, calls INTEGER NOT NULL,
    updated REAL NOT NULL, PRIMARY KEY (user, tool))"""


class UsageStore:
    """Decayed per-user tool usage in SQLite.

    Args:
        path: Database file, or ``":memory:"``.
        half_life_s: Seconds after which a call counts half as much (default one week).
        warmup: Calls a user must make before a tool counts at all.
        clock: Time source (seconds); tests pass a fake one.
    """

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        half_life_s: float = 7 * 24 * 3600.0,
        warmup: int = 3,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not half_life_s > 0 or warmup < 0:
            raise InvalidParameterError("half_life_s must be > 0 and warmup >= 0")
        self.half_life_s, self.warmup, self.clock = half_life_s, warmup, clock
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        if str(path) != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)
        self._lock = threading.Lock()

    def _decay(self, score: float, updated: float, now: float) -> float:
        return float(score * 0.5 ** (max(now - updated, 0.0) / self.half_life_s))

    def record(self, user: str, tool: str) -> None:
        """Counts one call of ``tool`` by ``user``."""
        now = self.clock()
        with self._lock:
            row = self._db.execute(
                "SELECT score, calls, updated FROM usage WHERE user=? AND tool=?", (user, tool)
            ).fetchone()
            score, calls = (self._decay(row[0], row[2], now) + 1.0, row[1] + 1) if row else (1.0, 1)
            self._db.execute(
                "INSERT OR REPLACE INTO usage (user, tool, score, calls, updated) VALUES (?, ?, ?, ?, ?)",
                (user, tool, score, calls, now),
            )

    def score(self, user: str, tool: str) -> float:
        """The decayed count of ``tool`` for ``user`` now (0 before the warm-up is reached)."""
        with self._lock:
            row = self._db.execute(
                "SELECT score, calls, updated FROM usage WHERE user=? AND tool=?", (user, tool)
            ).fetchone()
        if row is None or row[1] < self.warmup:
            return 0.0
        return self._decay(row[0], row[2], self.clock())

    def usage_count(self, user: str) -> Callable[[str], int]:
        """A ``usage_count(name) -> int`` for :class:`~toolsift.ToolTierOptions`, for one user."""
        return lambda tool: round(self.score(user, tool) * 1000)

    def close(self) -> None:
        """Closes the database."""
        self._db.close()
