"""Progress of long runs (converting a catalog, embedding one): a callback and a log line.

A run that takes seconds to minutes calls ``progress(done, total, label)`` after each step and
logs ``done of total`` at INFO on its module's logger every :data:`LOG_EVERY_S` seconds and once
at the end; ``toolsift --verbose`` shows those lines.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

Progress = Callable[[int, int, str], None]
"""``progress(done, total, label)``: ``done`` of ``total`` steps are finished, ``label`` names
the last one (a service converted, a tool embedded)."""

LOG_EVERY_S = 5.0
"""A long run logs its progress at most this often (and once at the end)."""


class Reporter:
    """Reports a run of ``total`` steps to ``progress`` (when given) and to ``log``."""

    def __init__(self, what: str, total: int, progress: Progress | None, log: logging.Logger) -> None:
        self.what, self.total, self.progress, self.log = what, total, progress, log
        self.started = self.logged = time.perf_counter()

    def step(self, done: int, label: str) -> None:
        """``done`` steps are finished, the last named ``label``. An exception from the
        callback stops the run: it is the caller's way to cancel."""
        if self.progress is not None:
            self.progress(done, self.total, label)
        now = time.perf_counter()
        if done >= self.total or now - self.logged >= LOG_EVERY_S:
            self.log.info("%s: %d of %d in %.1f s", self.what, done, self.total, now - self.started)
            self.logged = now
