"""Compound requests: one ranking per intent, merged so that every intent gets tools.

A request such as "Find the capital of Australia. What is the population of Canada?" needs one
tool per sentence, but one ranking of the whole text gives the first k slots to variants of
whichever part has the rarest words. :func:`clauses` cuts the request (the pieces of highest
weight of a :class:`~toolsift.Query`: the current message, not the history) at sentence ends,
semicolons, line breaks and commas (those of Latin script, CJK, Arabic and Urdu, Devanagari, the
Greek question mark and the Armenian, Ethiopic, Myanmar and Khmer full stops; no word list),
ranking at most :data:`MAX_CLAUSES` distinct clauses (a pasted table of thousands of lines is not
thousands of intents); a clause counts as an intent when one of its own three best tools holds
at least :data:`INTENT_EVIDENCE` of evidence for it (see :meth:`toolsift.Index.evidence`), so a
clause of numbers or filler words does not. With two intents or more, :func:`interleave` merges
the rankings: the whole request's best tool, then each intent's best, then :data:`SHARE` more
of the whole request's ranking and the next tool of each intent, and again. With fewer, the
whole request's ranking is used unchanged.

A clause under that floor but over :data:`WEAK_EVIDENCE` is a weak intent: in a large catalog a
short request's words are each shared by hundreds of tools ("delete a bucket" holds 0.52 at the
18k AWS operations), but so are those of a sentence that asks for nothing ("Could you provide
that information?"). When a request has two intents counting weak ones, the weak ones of most
evidence get :data:`WEAK_PLACES` places after the first :data:`WEAK_AT` tools of the merged
ranking, for their best tools in turn (the first of each, then the second): one weak intent gets
its two best, two get one each. Never the head, so filler costs at most two places in the tail.

Measured on BFCL (``python benches/intents.py``); the constants were chosen there.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .arguments import UNLIMITED
from .callers import Perms
from .lexical import Lexical
from .query import Query
from .registry import Tool
from .results import Hit

IntentRanking = tuple[list[int], list[float]]
"""One intent's lexical ranking: registry positions and their scores, best first."""


class Intents(NamedTuple):
    """The rankings of a compound request's clauses: those that count as intents (two or more,
    else none) and the weak ones (see the module's text)."""

    rankings: Sequence[IntentRanking]
    weak: Sequence[IntentRanking]

    def __bool__(self) -> bool:
        return bool(self.rankings or self.weak)


NO_INTENTS = Intents((), ())

#: Evidence (in units of a word only one tool has) one of a clause's best tools must hold for
#: the clause to count as an intent.
INTENT_EVIDENCE = 1.0
#: A clause's best tools looked at for that evidence.
INTENT_PROBE = 3
#: Evidence a clause under :data:`INTENT_EVIDENCE` needs to be a weak intent. ``python
#: benches/intents.py --aws-pairs 200`` and BFCL set it and :data:`WEAK_AT` (0.4 and 0.5 alike).
WEAK_EVIDENCE = 0.5
#: Tools of the merged ranking before a weak intent's best tool.
WEAK_AT = 5
#: Places the weak intents of most evidence get, for their best tools in turn. Two for one weak
#: intent's two best tools rather than its best alone: pairs of AWS requests over 18k tools
#: (``python benches/intents.py --aws-pairs 200``) Complete@10 0.390 → 0.435, BFCL the same.
WEAK_PLACES = 2
#: Tools of the whole request's ranking taken per round of the merge, before each intent's next;
#: the first round takes one, so that a selection whose budget holds few tools gets every
#: intent's best (AWS request pairs through ``select``, 2,000 / 4,000 / 8,000 tokens: Complete
#: 0.160 / 0.300 / 0.450 with two first, 0.170 / 0.315 / 0.465 with one; BFCL the same).
SHARE = 2
#: Distinct clauses ranked on their own, the first ones: more intents than a shortlist has
#: slots would each get none, and each costs a search.
MAX_CLAUSES = 16

# "." "?" "!" ";" before a space (not "5.0", nor the last period of "e.g." or "U.S."); other
# scripts' stops, semicolons and question marks, which need no space after them: full-width
# and half-width CJK ones (U+3002, U+FF1F, U+FF01, U+FF1B, U+FF61), the Greek question mark
# (U+037E), the Armenian full stop (U+0589), Arabic semicolon and question mark (U+061B,
# U+061F), the Urdu full stop (U+06D4), Devanagari dandas (U+0964, U+0965), Ethiopic, Myanmar
# and Khmer stops (U+1362, U+104B, U+17D4); line breaks (\n, \r, U+2028, U+2029); commas
# (ASCII unless between ASCII letters or digits, as in "1,000" or "a,b"; full-width,
# ideographic, Arabic)
_STOPS = "\u3002\uff1f\uff01\uff1b\uff61\u037e\u0589\u061b\u061f\u06d4\u0964\u0965\u1362\u104b\u17d4"
_BREAKS = "\n\r\u2028\u2029"
_COMMAS = ",\uff0c\u3001\u060c"
_CUT = re.compile(
    rf"(?<=[.?!;])(?<!\.[^\W\d_]\.)\s+|[{_STOPS}]\s*|[{_BREAKS}]+|,(?![0-9A-Za-z])\s*|(?<![0-9A-Za-z]),\s*|[{_COMMAS[1:]}]\s*"
)
# quoted text (a message to send, a title) is one argument, however many commas it holds
# (sentence ends still cut: a whole request may come quoted): double quotes, curly,
# guillemets and CJK corner brackets, within a line (a " right after a digit is an inch mark)
_QUOTED = re.compile(
    '(?<!\\d)"[^"\n]*"|\u201c[^\u201d\n]*\u201d|\u00ab[^\u00bb\n]*\u00bb|\u300c[^\u300d\n]*\u300d|\u300e[^\u300f\n]*\u300f'
)
_QUOTES = frozenset('"\u201c\u00ab\u300c\u300e')
# any character _CUT cuts at or after: one character class is searched ten times faster than
# _CUT, and most requests have none of them (a one-clause request then costs 0.2 µs, not 1.4)
_MAYBE_CUT = re.compile(rf"[.?!;{_STOPS}{_BREAKS}{_COMMAS}]")


def may_have_clauses(query: str | Query) -> bool:
    """False when ``query`` is certainly one clause (a string with no character :func:`clauses`
    cuts at): the common case, answered without calling into the ranking."""
    return not isinstance(query, str) or _MAYBE_CUT.search(query) is not None


def clauses(query: str | Query) -> list[str]:
    """The clauses of the highest-weight pieces of ``query``, in order (empty ones dropped; none
    when every piece weighs 0, as such a query matches nothing)."""
    if isinstance(query, str):  # the common case, without building a Query
        if not may_have_clauses(query) or not _CUT.search(query):
            return [query]
        return [c.strip() for c in _split(query) if c.strip()]
    parts = Query.of(query).parts
    if not parts:
        return []
    top = max(w for _, w in parts)
    if top <= 0:
        return []
    return [c.strip() for text, w in parts if w == top for c in _split(text) if c.strip()]


def _split(text: str) -> list[str]:
    """``text`` cut at each :data:`_CUT`, but for commas inside quoted text."""
    if _QUOTES.isdisjoint(text):
        return _CUT.split(text)
    quoted = [m.span() for m in _QUOTED.finditer(text)]  # in order, not overlapping
    opens = [a for a, _ in quoted]
    pieces, start = [], 0
    for cut in _CUT.finditer(text):
        at = cut.start()
        i = bisect.bisect_left(opens, at) - 1  # the last span opened before the cut
        if not (text[at] in _COMMAS and i >= 0 and at < quoted[i][1]):
            pieces.append(text[start:at])
            start = cut.end()
    pieces.append(text[start:])
    return pieces


def interleave(whole: Sequence[int], intents: Sequence[Sequence[int]], k: int) -> list[int]:
    """The first ``k`` distinct positions of the best of ``whole``, then the best of each of
    ``intents``, then round after round :data:`SHARE` more from ``whole`` and one more from each
    intent, each list in its own order."""
    out: list[int] = []
    seen: set[int] = set()

    def take(p: int) -> None:
        if p not in seen:
            seen.add(p)
            out.append(p)

    i = j = 0
    while len(out) < k and (i < len(whole) or any(j < len(r) for r in intents)):
        share = 1 if j == 0 else SHARE  # every intent's best right after the whole request's
        for p in whole[i : i + share]:
            take(p)
        i += share
        for r in intents:
            if j < len(r):
                take(r[j])
        j += 1
    return out[:k]


def rank_intents(
    lexical: Lexical, query: str | Query, perms: Perms, depth: int, scope: np.ndarray | None, cores: int = 0
) -> Intents:
    """The lexical rankings (``depth`` tools) of the intents of a compound request: those that
    count, when there are two or more, and the weak ones, when there are two intents counting
    them. ``cores``: the core tools the caller may use in ``scope``, which a clause is searched
    past so that its evidence is the same for a search of any ``k``."""
    pieces = list(dict.fromkeys(clauses(query)))[:MAX_CLAUSES]
    if len(pieces) < 2:
        return NO_INTENTS
    rankings: list[IntentRanking] = []
    weak: list[tuple[float, int, IntentRanking]] = []  # (evidence, clause number, best tools)
    core = lexical.core
    for clause in pieces:
        found, values = lexical.search(clause, perms, min(depth + cores, UNLIMITED), scope)
        positions, scores = found.tolist(), values.tolist()
        # core tools, sent whatever the request, are no evidence of an intent (as for the gate)
        probe = list(itertools.islice((i for i, p in enumerate(positions) if not core.is_core(p)), INTENT_PROBE))
        evidence = max(lexical.evidence(clause, perms, [positions[i] for i in probe])) if probe else 0.0
        if evidence >= INTENT_EVIDENCE:
            rankings.append((positions[:depth], scores[:depth]))
        elif evidence >= WEAK_EVIDENCE:
            best = probe[:WEAK_PLACES]
            weak.append((evidence, len(weak), ([positions[i] for i in best], [scores[i] for i in best])))
    if len(rankings) + len(weak) < 2:
        return NO_INTENTS
    weak.sort(key=lambda w: (-w[0], w[1]))
    return Intents(rankings if len(rankings) >= 2 else [], [w[2] for w in weak[:WEAK_PLACES]])


def merge(tools: Sequence[Tool], whole: list[Hit], intents: Intents, depth: int) -> list[Hit]:
    """``whole`` and the intents' rankings interleaved, then the weak intents' best tools in turn,
    :data:`WEAK_PLACES` of them, after the first :data:`WEAK_AT`; a hit keeps the score of the
    first ranking it comes from (the whole request's, else its intent's)."""
    scores = {h.position: h.score for h in whole}
    for positions, values in (*intents.rankings, *intents.weak):
        for p, s in zip(positions, values, strict=True):
            scores.setdefault(p, s)
    order = interleave([h.position for h in whole], [positions for positions, _ in intents.rankings], depth)
    if intents.weak:
        head = order[:WEAK_AT]
        rounds = itertools.zip_longest(*(positions for positions, _ in intents.weak))
        tail = [p for p in dict.fromkeys(p for r in rounds for p in r if p is not None) if p not in head][:WEAK_PLACES]
        order = list(dict.fromkeys([*head, *tail, *order[WEAK_AT:]]))[:depth]
    return [Hit(tools[p], p, scores[p]) for p in order]
