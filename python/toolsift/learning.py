"""Learning from use: the words of requests that led to calls of a tool, as that tool's learned field.

A user who asks "put a message on the queue" and then calls ``sqs__SendMessage`` has told the
index a way to say what that tool does. :class:`Learned` turns such events into search text:

* **Attribution.** A request that led to one call teaches that tool its words. A request that led
  to several is cut into clauses (:func:`toolsift.intents.clauses`), and each clause goes to the
  called tool holding the most evidence for it (:meth:`toolsift.Index.evidence`: the rare query
  words a tool already contains), and to none of them when several tie; a clause none of them
  matches goes to the one called tool that got no clause, when there is exactly one. "Check the
  DNS record, then renew the certificate" teaches the DNS tool the first clause and the
  certificate tool the second, never both the whole text (:func:`attribute`).
* **Only what was missed.** A tool learns from its part of a request only when the index did not
  already rank it among the first three for that part (:data:`KNOWN`): error-driven, as a
  perceptron updates only on a mistake. Reinforcing what already works only pulled other
  requests towards popular tools.
* **Weight.** Each word of an attributed clause adds 1 to that (tool, word), ageing with a
  half-life; a tool keeps its ``cap`` heaviest words, each written into its learned text up to
  ``max_repeats`` times by weight. The ``learned`` field weighs below the authored ones
  (:data:`toolsift.text.DEFAULT_FIELD_WEIGHTS`), so what a catalog's authors wrote still leads.
* **Scope.** Every event belongs to a scope (a tenant, a user, ``"shared"``): :meth:`Learned.texts`
  of one scope holds only the words of its own events, so one tenant's requests never change
  another's ranking unless the deployment gives them one scope.
* **Updates.** Events are cheap (a few SQL upserts); the index is rebuilt with the new texts in a
  batch (:meth:`toolsift.Index.with_learned`) and swapped in whole: a :class:`~toolsift.Toolbox`
  does it when its plan is reset, a cache-safe boundary, as with pins.
* **Restarts.** The weights live in SQLite (``path``: a file, or ``":memory:"``), beside or in
  the same file as a :class:`~toolsift.UsageStore`; an index saved with learned texts keeps them.

``toolsift eval --replay FRACTION`` measures it: the first part of a dataset's requests is played
as the log, the rest is scored with and without what was learned.
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import _core
from .arguments import tool_names
from .errors import InvalidParameterError
from .intents import clauses
from .query import Query, check_text
from .usage import open_sqlite, positive_number, store_error

if TYPE_CHECKING:
    from .index import Caller, Index

#: Half-life of a learned word's weight, in seconds (90 days): habits change slower than pins.
HALF_LIFE_S = 90 * 24 * 3600.0
#: Words a tool keeps in its learned text, the heaviest first.
CAP = 24
#: Most times one word is written into a tool's learned text (its weight, rounded, up to this).
#: A phrasing confirmed by many events must be able to overtake tools whose authored text holds
#: its words (3 left ``s3__PutObject`` 18th for "upload a file to an S3 bucket" however often it
#: was called); ``KNOWN`` stops the growth once the tool ranks near the top. BFCL replays, where
#: few words repeat, are the same at 3, 6 and 10 (``python benches/learning.py --max-repeats``).
MAX_REPEATS = 10
#: A tool learns from a request only if it was not among this many first results for the part of
#: the request attributed to it: the index learns what it did not know, and stops learning a
#: phrasing once it ranks the tool near the top for it (so a popular tool does not soak up
#: words). ``python benches/learning.py --known N`` compares values: 1, 2, 3 and 5 gain alike on
#: shuffled BFCL replays (+0.027 to +0.030 nDCG@10 over five splits); 3 loses least on the split
#: whose scored half asks for tools the log never called.
KNOWN = 3

_SCHEMA = """CREATE TABLE IF NOT EXISTS learned (
    scope TEXT NOT NULL, tool TEXT NOT NULL, word TEXT NOT NULL, score REAL NOT NULL,
    updated REAL NOT NULL, PRIMARY KEY (scope, tool, word))"""

# one statement per word: aged to now and 1 added atomically, as for usage counts
# (a row whose numbers are not finite, another program's, is replaced: kept, NaN would fail the
# write of the whole event for good; a clock stepped back ages nothing and re-anchors the row
# at the new time, so that it ages from then, not only once the clock is past the old time)
_LEARN = """INSERT INTO learned (scope, tool, word, score, updated) VALUES (?1, ?2, ?3, 1.0, ?4)
    ON CONFLICT (scope, tool, word) DO UPDATE SET
        score = CASE WHEN score BETWEEN -1e308 AND 1e308 AND updated BETWEEN -1e308 AND 1e308
            THEN score * pow(0.5, max(excluded.updated - updated, 0.0) / ?5) ELSE 0.0 END + 1.0,
        updated = excluded.updated"""

# the rows of the tools of ?2 (a JSON array) in scope ?1, as `weights` reads a whole scope's
_TOOLS_ROWS = """SELECT tool, word, score, updated FROM learned
    WHERE scope = ?1 AND tool IN (SELECT value FROM json_each(?2)) ORDER BY tool, word"""

#: Scopes whose weights :class:`Learned` keeps as last read (the oldest dropped first).
WEIGHTS_KEPT = 256

#: Rows a tool keeps in the table, per word of ``cap``: words just below the cap can still
#: climb into it; the rest, and words aged under half an event's weight, are deleted. The
#: words of the event being added are kept whatever their weight (a new word weighs the least
#: of all: it would be cut before it could ever climb), so a tool holds at most
#: ``cap * KEPT_ROWS`` words plus those of its latest event, which teaches each tool at most
#: ``cap * KEPT_ROWS`` words (its first ones: a request of a megabyte must not write a row per
#: word it holds).
KEPT_ROWS = 4
#: Events after which :meth:`Learned.add` also deletes the rows of every scope and tool aged
#: under half an event's weight (a tool learns no more, a scope no longer used): the table
#: stays bounded by what is still learned, not by all that ever was.
PRUNE_EVERY = 1000
#: The largest ``cap``, ``max_repeats`` and ``known`` :class:`Learned` takes.
MAX_COUNT = 1_000_000
#: The shortest half-life :class:`Learned` takes, in seconds: ageing divides by it.
MIN_HALF_LIFE_S = 1e-3

log = logging.getLogger("toolsift")

# one tool's rows aged to ?3: those under half an event's weight, and those beyond the ?5
# heaviest (the same order as `weights`: heaviest first, then by word) that are not among the
# event's own words (?6, a JSON array), are gone
_PRUNE = """DELETE FROM learned WHERE scope = ?1 AND tool = ?2 AND (
    NOT (score BETWEEN -1e308 AND 1e308 AND updated BETWEEN -1e308 AND 1e308)
    OR score * pow(0.5, max(?3 - updated, 0.0) / ?4) < 0.5
    OR word NOT IN (SELECT word FROM learned WHERE scope = ?1 AND tool = ?2
        ORDER BY score * pow(0.5, max(?3 - updated, 0.0) / ?4) DESC, word LIMIT ?5)
        AND word NOT IN (SELECT value FROM json_each(?6)))"""

# every row aged to ?1 under half an event's weight (the half-life ?2), or not finite, whatever its scope
_PRUNE_ALL = """DELETE FROM learned WHERE NOT (score BETWEEN -1e308 AND 1e308 AND updated BETWEEN -1e308 AND 1e308)
    OR score * pow(0.5, max(?1 - updated, 0.0) / ?2) < 0.5"""


def words(text: str) -> list[str]:
    """The distinct words of ``text`` worth learning, in order: the words the index's tokenizer
    makes of it before stemming (identifiers split, ``putRecord`` → ``put`` ``record``; accents
    folded; CJK as character bigrams; stop words and one-letter words dropped), each one that
    tokenizes again to a single term, not digits only."""
    out: dict[str, None] = {}
    for word in _core.words(check_text("text", text)):  # each tokenizes again to its own single term
        if not word.isdigit():
            out.setdefault(word)
    return list(out)


def attribute(index: Index, request: str | Query, called: Sequence[str], caller: Caller = None) -> dict[str, str]:
    """Which part of ``request`` each of the ``called`` tools was called for: ``{tool: text}``.

    One tool: the whole request (its current message). Several: each clause to the called tool
    with the most evidence for it (a tie: to none of them), a clause none of them matches to the
    one tool left without a clause (if exactly one is). Tools the caller may not use, or that the
    index does not hold, are left out; a tool that got nothing is not in the result.
    """
    if isinstance(request, str):
        check_text("request", request)
    tools = list(dict.fromkeys(n for n in tool_names("called", called) if index.allows(n, caller=caller)))
    pieces = clauses(request)
    if not tools or not pieces:
        return {}
    if len(tools) == 1:
        return {tools[0]: request if isinstance(request, str) else "\n".join(pieces)}
    got: dict[str, list[str]] = {}
    unmatched: list[str] = []
    for piece in pieces:
        evidence = index.evidence(piece, tools, caller=caller)
        best = max(evidence)
        if best <= 0:
            unmatched.append(piece)
            continue
        winners = [tool for tool, e in zip(tools, evidence, strict=True) if e == best]
        if len(winners) == 1:  # a tie says nothing about which tool the clause was for
            got.setdefault(winners[0], []).append(piece)
    left = [t for t in tools if t not in got]
    if unmatched and len(left) == 1:
        got[left[0]] = unmatched
    return {t: "\n".join(got[t]) for t in tools if t in got}


class Learned:
    """Learned words per (scope, tool), from requests and the calls they led to.

    Args:
        path: SQLite database file (may be a :class:`~toolsift.UsageStore`'s), or ``":memory:"``.
        half_life_s: Seconds after which an event's words weigh half as much.
        cap: Words kept per tool, the heaviest first.
        max_repeats: Most times a word is written into a tool's learned text.
        known: A tool learns from its part of a request only when it was not among the first
            ``known`` results for it (0: always).
        clock: Time source (seconds); tests and replays pass their own.
    """

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        half_life_s: float = HALF_LIFE_S,
        cap: int = CAP,
        max_repeats: int = MAX_REPEATS,
        known: int = KNOWN,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.half_life_s = positive_number("half_life_s", half_life_s)
        if not MIN_HALF_LIFE_S <= self.half_life_s < math.inf:
            raise InvalidParameterError(
                f"half_life_s must be at least {MIN_HALF_LIFE_S:g} s and finite, not {half_life_s!r}"
            )
        if not callable(clock):
            raise InvalidParameterError(f"clock must be callable, not {type(clock).__name__}")
        for what, value, least in (("cap", cap, 1), ("max_repeats", max_repeats, 1), ("known", known, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= MAX_COUNT:
                raise InvalidParameterError(f"{what} must be an int from {least} to {MAX_COUNT:,}, not {value!r}")
        self.cap, self.max_repeats, self.known, self.clock = cap, max_repeats, known, clock
        self._db = open_sqlite(path, _SCHEMA)
        self._path = str(path)
        self._lock = threading.Lock()
        # each scope's weights as last read, with when (see _stamp): every toolbox made or reset,
        # and every gateway learning round, asks again, most often with nothing changed
        self._weights: dict[str, tuple[tuple[int, int, int], dict[str, dict[str, float]]]] = {}
        self._events = 0  # added by this instance, for the store-wide prune (PRUNE_EVERY)

    def _now(self) -> float:
        """The clock's time, which must be a finite number of seconds."""
        now = self.clock()
        try:
            finite = not isinstance(now, bool) and isinstance(now, int | float) and math.isfinite(now)
        except OverflowError:  # an int past the largest float
            finite = False
        if not finite:
            raise InvalidParameterError(f"clock must return a finite number of seconds, not {now!r:.80}")
        return float(now)

    def observe(
        self, index: Index, request: str | Query, called: Sequence[str], *, scope: str, caller: Caller = None
    ) -> dict[str, list[str]]:
        """Learns from one request that led to successful calls of ``called`` (by ``caller``,
        whose permissions and statistics attribute it, in ``index``: the one that answered the
        request): returns the words each tool learned."""
        scope = check_text("scope", scope)
        taught = {
            tool: words(text)
            for tool, text in attribute(index, request, called, caller).items()
            if not self.known or tool not in {h.tool.name for h in index.search(text, k=self.known, caller=caller)}
        }
        self.add(scope, taught)
        keep = self.cap * KEPT_ROWS  # what add keeps of an event's words
        return {t: list(dict.fromkeys(w))[:keep] for t, w in taught.items() if w}

    def add(self, scope: str, taught: Mapping[str, Iterable[str]]) -> None:
        """Adds one event's weight to each ``{tool: words}`` of ``scope``; each word must be one
        the tokenizer keeps as a single term (see :func:`words`). Each tool's rows are then cut
        to its :data:`KEPT_ROWS` heaviest per ``cap`` and those above half an event's weight, so
        the table stays bounded however long the log."""
        scope = check_text("scope", scope)
        if not isinstance(taught, Mapping):
            raise InvalidParameterError(f"taught must map tool names to words, not {type(taught).__name__}")
        now = self._now()
        rows = []
        keep = self.cap * KEPT_ROWS
        for tool, ws in taught.items():
            check_text("tool", tool)
            for w in list(dict.fromkeys(tool_names(f"the words of {tool!r}", ws)))[:keep]:
                if len(_core.tokenize(check_text(f"a word of {tool!r}", w))) != 1:
                    raise InvalidParameterError(f"the words of {tool!r}: {w!r} is not one word the index keeps")
                rows.append((scope, tool, w, now, self.half_life_s))
        if not rows:
            return
        event: dict[str, list[str]] = {}
        for r in rows:
            event.setdefault(r[1], []).append(r[2])
        with self._lock:
            self._events += 1
            try:
                # IMMEDIATE: the write lock is held from here, so no other process commits between
                # the stamp and this write (the cache below would take its rows as unchanged)
                self._db.execute("BEGIN IMMEDIATE")  # one event, one transaction: all of its words or none
                before = self._stamp(now) if scope in self._weights else None
                try:
                    self._db.executemany(_LEARN, rows)
                    prune = [(scope, tool, now, self.half_life_s, keep, json.dumps(ws)) for tool, ws in event.items()]
                    self._db.executemany(_PRUNE, prune)
                    if self._events % PRUNE_EVERY == 0:
                        self._db.execute(_PRUNE_ALL, (now, self.half_life_s))
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.DatabaseError as e:
                raise store_error(e, self._path, "the learned words") from None
            cached = self._weights.get(scope)
            if cached is not None and cached[0] == before:  # only this write since: its tools read again
                touched = self._db.execute(_TOOLS_ROWS, (scope, json.dumps(list(event)))).fetchall()
                weights = {t: ws for t, ws in cached[1].items() if t not in event} | self._heaviest(
                    touched, self._bucket(now)
                )
                self._weights[scope] = (self._stamp(now), dict(sorted(weights.items())))

    def scopes(self) -> list[str]:
        """Every scope that holds learned words, sorted."""
        with self._lock:
            try:
                rows = self._db.execute("SELECT DISTINCT scope FROM learned ORDER BY scope").fetchall()
            except sqlite3.DatabaseError as e:
                raise store_error(e, self._path, "the learned words") from None
        return [str(r[0]) for r in rows]

    def weights(self, scope: str) -> dict[str, dict[str, float]]:
        """``{tool: {word: weight now}}`` of ``scope``, each tool's ``cap`` heaviest words. Read
        again only once the store changed (a write by this or another process) or a ten
        thousandth of a half-life went by (ageing changes a weight by 0.007 % in that time)."""
        scope = check_text("scope", scope)
        now = self._now()
        with self._lock:
            try:
                stamp = self._stamp(now)
                cached = self._weights.get(scope)
                if cached is not None and cached[0] == stamp:
                    return {tool: dict(ws) for tool, ws in cached[1].items()}
                rows = self._db.execute(
                    "SELECT tool, word, score, updated FROM learned WHERE scope = ? ORDER BY tool, word", (scope,)
                ).fetchall()
            except sqlite3.DatabaseError as e:
                raise store_error(e, self._path, "the learned words") from None
        weights = self._heaviest(rows, self._bucket(now))
        with self._lock:
            if len(self._weights) >= WEIGHTS_KEPT and scope not in self._weights:
                self._weights.pop(next(iter(self._weights)))
            self._weights[scope] = (stamp, weights)
        return {tool: dict(ws) for tool, ws in weights.items()}

    def _heaviest(self, rows: list[tuple[str, str, float, float]], now: float) -> dict[str, dict[str, float]]:
        """Each tool's ``cap`` heaviest words at ``now`` of ``rows`` (tool, word, score, updated),
        heaviest first, then by word; tools in the order of ``rows``. A row that is not a
        learned word (another program's write: a score that is not a finite number, a word that
        is not text) is skipped and logged, not taken nor a failure of every scope's texts."""
        found: dict[str, list[tuple[float, str]]] = {}
        bad = 0
        for tool, word, score, updated in rows:
            numbers = all(type(x) in (int, float) and math.isfinite(x) for x in (score, updated))
            if not (numbers and isinstance(tool, str) and isinstance(word, str)):
                bad += 1
                continue
            weight = score * 0.5 ** (max(now - updated, 0.0) / self.half_life_s)
            found.setdefault(tool, []).append((weight, word))
        if bad:
            log.warning("%s: %d learned row(s) that are not a word and a finite weight skipped", self._path, bad)
        return {
            tool: {w: weight for weight, w in sorted(pairs, key=lambda p: (-p[0], p[1]))[: self.cap]}
            for tool, pairs in found.items()
        }

    def _bucket(self, now: float) -> float:
        """The start of the ten thousandth of a half-life that holds ``now``: weights are aged to
        it, so that they depend on the store and that span only, not on when within it this
        instance last read them (a warm and a fresh replica round alike)."""
        step = self.half_life_s * 1e-4
        return math.floor(now / step) * step

    def _stamp(self, now: float) -> tuple[int, int, int]:
        """What a scope's weights read at ``now`` depend on besides the scope: the store's
        content (``data_version`` moves when another connection commits, ``total_changes`` with
        this one's writes) and the time, to a ten thousandth of a half-life."""
        version = int(self._db.execute("PRAGMA data_version").fetchone()[0])
        return version, self._db.total_changes, math.floor(now / (self.half_life_s * 1e-4))

    def texts(self, scope: str, index: Index | None = None) -> dict[str, str]:
        """Each tool's learned text in ``scope``: its words, heaviest first, each written its
        weight's number of times (rounded, 1 to ``max_repeats``); words under half an event's
        weight are forgotten. With ``index``, only tools it holds (for
        :meth:`toolsift.Index.with_learned`)."""
        if index is not None and not hasattr(index, "__contains__"):
            raise InvalidParameterError(f"index must be a toolsift.Index or None, not {type(index).__name__}")
        out: dict[str, str] = {}
        for tool, ws in self.weights(scope).items():
            if index is not None and tool not in index:
                continue
            kept = [w for w, weight in ws.items() for _ in range(min(self.max_repeats, round(weight)))]
            if kept:
                out[tool] = " ".join(kept)
        return out

    def forget(self, scope: str) -> None:
        """Drops every learned word of ``scope``."""
        scope = check_text("scope", scope)
        with self._lock:
            try:
                self._db.execute("DELETE FROM learned WHERE scope = ?", (scope,))
            except sqlite3.DatabaseError as e:
                raise store_error(e, self._path, "the learned words") from None

    def prune(self) -> int:
        """Deletes the rows of every scope aged under half an event's weight (forgotten words,
        scopes no longer used); the number deleted. :meth:`add` also does it every
        :data:`PRUNE_EVERY` events."""
        with self._lock:
            try:
                return self._db.execute(_PRUNE_ALL, (self._now(), self.half_life_s)).rowcount
            except sqlite3.DatabaseError as e:
                raise store_error(e, self._path, "the learned words") from None

    def close(self) -> None:
        """Closes the database."""
        self._db.close()
