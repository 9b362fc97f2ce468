"""The doctor's checks (see :mod:`toolsift.doctor`): one function per kind of finding, each
yielding :class:`Diagnosis` values from a view of the catalog, plus the word helpers they share.

Tool text is compared as the index sees it: the core's tokenizer (:func:`toolsift.tokenize`)
turns words into the terms that postings hold; the words shown to people are the ones of the
tool's own text that give those terms.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _core
from .callers import Caller
from .errors import InvalidParameterError
from .eval.datasets import LabelledQuery
from .index import Index
from .plan import DEFAULT_LIMIT
from .registry import Tool
from .results import Hit
from .scan import scan
from .text import tool_fields
from .usage import RedisUsageStore, UsageStore


class View:
    """The tools the doctor examines, the caller it ranks as, and word statistics over them."""

    def __init__(self, index: Index, for_caller: Caller | None) -> None:
        self.index = index
        self.perms: tuple[str, ...] = tuple(index.permissions()) if for_caller is None else _perms(for_caller)
        self.positions = [i for i in range(len(index)) if index.allows(index.name(i), caller=self.perms)]
        self.tools = [index.tool(i) for i in self.positions]
        # the owner also sees what the scanner withheld (indexed, never emitted): why a tool is missing
        allowed = set(self.positions)
        self.withheld = [index.name(i) for i in range(len(index)) if for_caller is None and i not in allowed]
        self.scanned = self.tools if not self.withheld else [index.tool(i) for i in range(len(index))]
        self.names = {t.name for t in self.tools}
        self.at = {p: j for j, p in enumerate(self.positions)}  # registry position -> place here
        self.name_words = [set(_core.tokenize(t.name)) for t in self.tools]
        self.description_words = [set(_core.tokenize(t.description)) for t in self.tools]
        self.df: Counter[str] = Counter()
        for name, description in zip(self.name_words, self.description_words, strict=True):
            self.df.update(name | description)

    def words(self, position: int) -> set[str]:
        """The tokens of the name and description of the tool at a registry position."""
        j = self.at[position]
        return self.name_words[j] | self.description_words[j]


def _perms(caller: Caller) -> tuple[str, ...]:
    if caller is None:
        return ()
    if isinstance(caller, str):
        return (caller,)
    if isinstance(caller, Mapping):
        raise InvalidParameterError("for_caller must be permissions (a set or list of str), not a mapping")
    return tuple(caller)


CONFUSABLE_SHARE = 0.8
"""A tool's query (its name and description) scores the other tool at least this share of the
tool's own score. BM25 of a text against itself sums each of its words' weight, so the share is
about the weight of the words the two texts have in common: at 0.8 the words that tell them apart
carry under a fifth of it, both ways, and a request in either tool's words finds both."""

NEIGHBOURS = DEFAULT_LIMIT
"""Hits looked at per tool for confusable ones: the shortlist ``tool_search`` returns."""

PIN_SHARE = 0.5
"""Pin a tool used by more than this share (a majority) of the users or requests."""

_PIECE = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")  # where camelCase starts a word


@dataclass(frozen=True)
class Diagnosis:
    """One finding: its kind (see :data:`toolsift.doctor.KINDS`), the tools involved (registry order, or most
    missed first), why, what to do, and the measurements behind it (JSON values)."""

    kind: str
    tools: tuple[str, ...]
    why: str
    fix: str
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The finding as JSON-ready values."""
        return {"kind": self.kind, "tools": list(self.tools), "why": self.why, "fix": self.fix, "data": self.data}


def poisoned(view: View) -> Iterable[Diagnosis]:
    fixes = {
        "instruction": "remove the text aimed at the model; review the server it came from",
        "sensitive_path": "remove the path; a tool description has no reason to name secrets",
        "hidden_unicode": "remove the hidden characters",
        "mixed_script_name": "rename it in one script",
        "shadowing": "rename or drop the look-alike; until then Index(scan='withhold') never emits it",
    }
    withheld = set(view.withheld)
    for f in scan(view.scanned):
        detail = f"{f.kind} in {f.field}: {f.detail}" + (" (withheld by the index)" if f.tool in withheld else "")
        yield Diagnosis("poisoned", (f.tool,), detail, fixes[f.kind], {"scan": f.kind, "withheld": f.tool in withheld})


def confusable(view: View, batch: list[list[Hit]]) -> Iterable[Diagnosis]:
    """Groups of tools in which each pair keeps :data:`CONFUSABLE_SHARE` of the other's own score
    on the other's name and description (``batch``: the hits of those queries)."""
    share: dict[tuple[int, int], float] = {}
    for a, hits in zip(view.positions, batch, strict=True):
        own = next((h.score for h in hits if h.position == a), hits[-1].score if hits else 0.0)
        for h in hits:
            if h.position != a and own > 0 and h.score >= CONFUSABLE_SHARE * own:
                share[(a, h.position)] = h.score / own
    pairs = {(a, b): min(s, share[(b, a)]) for (a, b), s in share.items() if a < b and (b, a) in share}
    clusters = _cliques(pairs)
    for members in sorted(clusters, key=lambda m: (-len(m), m)):
        yield _cluster(view, members, min(pairs[(a, b)] for a in members for b in members if a < b))


def _cliques(pairs: Mapping[tuple[int, int], float]) -> list[list[int]]:
    """Groups in which every two tools are a pair, covering every pair: the closest pair not yet
    covered starts a group, which takes each tool paired with all its members (closest first).
    A chain (a~b, b~c, but not a~c) stays two groups: ``a`` and ``c`` can be told apart."""
    near: dict[int, dict[int, float]] = {}
    for (a, b), s in pairs.items():
        near.setdefault(a, {})[b] = s
        near.setdefault(b, {})[a] = s
    covered: set[tuple[int, int]] = set()
    groups = []
    for a, b in sorted(pairs, key=lambda p: (-pairs[p], p)):
        if (a, b) in covered:
            continue
        group = [a, b]
        for c in sorted(near[a], key=lambda c: (-near[a][c], c)):
            if c not in group and all(c in near[m] for m in group):
                group.append(c)
        covered.update((x, y) for x in group for y in group if x < y)
        groups.append(sorted(group))
    return groups


def _cluster(view: View, members: list[int], closest: float) -> Diagnosis:
    tools = [view.index.tool(i) for i in members]
    words = [view.words(i) for i in members]
    apart = {}
    for j, t in enumerate(tools):
        others = set().union(*(w for i, w in enumerate(words) if i != j))
        apart[t.name] = _surface(f"{t.name} {t.description}", words[j] - others)
    names = tuple(t.name for t in tools)
    told = "; ".join(f"{n}: {', '.join(w) or 'none'}" for n, w in apart.items())
    return Diagnosis(
        "confusable",
        names,
        f"each one's name and description scores the other at {closest:.0%} or more of its own score; "
        f"words no other of them has: {told}",
        "merge them into one tool (with a parameter for the difference), or add a sentence to each "
        "saying when to use it rather than the other",
        {"share": round(closest, 3), "apart": apart},
    )


def _surface(text: str, stems: Iterable[str]) -> list[str]:
    """The words of ``text`` (see :func:`_pieces`, first seen first) that the tokenizer turns
    into ``stems``."""
    wanted, out = set(stems), {}
    for piece in _pieces(text):
        for stem in _stems(piece):
            if stem in wanted and stem not in out:
                out[stem] = piece
    return list(dict.fromkeys(out.values()))


def unreachable(asked: list[tuple[Tool, list[str]]], hits: list[list[Hit]], k: int) -> Iterable[Diagnosis]:
    """Tools that none of their queries (``asked``, with their ``hits``, in order) finds."""
    batch = iter(hits)
    for tool, qs in asked:
        results = [next(batch) for _ in qs]
        if any(h.tool.name == tool.name for hits in results for h in hits):
            continue
        above = [h.tool.name for h in results[0]]
        source = "example queries" if tool.examples else "name, as a query,"
        yield Diagnosis(
            "unreachable",
            (tool.name,),
            f"none of its {source} brings it into the top {k}"
            + (f" (ranked above it: {', '.join(above)})" if above else " (nothing matches)"),
            "add search-only text or example queries in the users' words, and say in the description "
            "what sets it apart from the tools ranked above it",
            {"queries": qs, "above": above},
        )


def misses(
    view: View, queries: Sequence[LabelledQuery], labels: Mapping[str, str], searched: Iterator[list[Hit]]
) -> Iterable[Diagnosis]:
    """Per needed tool: the requests that did not get it offered (what a log recorded, else the
    next of ``searched``), and their words it lacks."""
    by_label: dict[str, list[Tool]] = {}
    for t in view.tools:
        by_label.setdefault(labels.get(t.name, t.name), []).append(t)
    core = [t.name for t in view.tools if t.core]
    needed: Counter[str] = Counter()
    missed: dict[str, list[tuple[LabelledQuery, list[str]]]] = {}
    for q in queries:
        offered = [h.tool.name for h in next(searched)] if q.offered is None else list(q.offered)
        got = {labels.get(n, n) for n in [*offered, *core]}
        for label in q.relevant:
            if label not in by_label:  # not in the catalog, or not the caller's: never named
                continue
            needed[label] += 1
            if label not in got:
                missed.setdefault(label, []).append((q, [n for n in offered if n in view.names]))
    order = sorted(missed, key=lambda n: (-len(missed[n]), -len(missed[n]) / needed[n], view.index.position(n)))
    asked = Counter(w for q in queries for w in set(_pieces(q.text)))
    for label in order:
        yield _miss(by_label[label], missed[label], needed[label], asked, len(queries))


def _miss(
    tools: list[Tool], missed: list[tuple[LabelledQuery, list[str]]], needed: int, asked: Counter[str], total: int
) -> Diagnosis:
    """The finding for one missed tool. Its candidate words are the missed requests' words that
    none of its indexed text holds, ranked by how many of them use the word times the word's
    inverse frequency over all the requests (``log((requests + 1) / requests with it)``), so that
    the words every request uses ("want", "please") fall to the bottom."""
    held = set().union(*(_core.tokenize("\n".join(tool_fields(t))) for t in tools))
    words: Counter[str] = Counter()
    for q, _ in missed:
        words.update(set(_lacking(q.text, held)))
    weight = {w: n * math.log((total + 1) / asked[w]) for w, n in words.items()}
    top = [w for w, _ in sorted(weight.items(), key=lambda kv: (-kv[1], kv[0]))[:8]]
    instead = Counter(n for _, offered in missed for n in offered)
    shown = ", ".join(n for n, _ in instead.most_common(3))
    return Diagnosis(
        "miss",
        (tools[0].name,),
        f"needed by {needed} request(s), not offered to {len(missed)}"
        + (f"; offered instead: {shown}" if shown else "; nothing was offered"),
        "add search-only text with the words those requests used: " + (", ".join(top) if top else "(none missing)"),
        {
            "missed": len(missed),
            "needed": needed,
            "words": top,
            "requests": [{"id": q.id, "query": q.text, "offered": o} for q, o in missed[:3]],
        },
    )


@functools.lru_cache(maxsize=2**16)
def _stems(word: str) -> tuple[str, ...]:
    """The tokens of one word (catalogs repeat their words: each is tokenized once)."""
    return tuple(_core.tokenize(word))


def _pieces(text: str) -> list[str]:
    """The words of ``text``, camelCase split, lower case; words with digits (values such as
    ``22nd`` or ``v2``, not vocabulary) left out."""
    split = _CAMEL.sub(" ", text)
    return [p.lower() for p in _PIECE.findall(split) if p.isalpha()]


def _lacking(text: str, held: set[str]) -> Iterator[str]:
    """Words of ``text`` (see :func:`_pieces`) that are not function words and whose tokens are
    all missing from ``held``."""
    for piece in _pieces(text):
        stems = _stems(piece)
        if stems and not any(s in held for s in stems):
            yield piece


def _bits(view: View, words: Iterable[str]) -> float:
    """Information of a set of words about which tool holds them, under independence: each word
    held by ``df`` of the ``N`` tools says ``log2(N / df)`` bits. Singling out one tool takes
    ``log2(N)``; a description whose words beyond the name say less cannot, whatever the query."""
    n = len(view.tools)
    return math.fsum(math.log2(n / view.df[w]) for w in words if view.df[w])  # exact: a set's order varies


def vague(view: View) -> Iterable[Diagnosis]:
    n = len(view.tools)
    needed = math.log2(n) if n > 1 else 0.0
    generic = max(math.sqrt(n), 2.0)  # a word in sqrt(N) tools says at most half the needed bits
    found = []
    for tool, named, own in zip(view.tools, view.name_words, view.description_words, strict=True):
        beyond = own - named
        bits = _bits(view, beyond)
        if not tool.description.strip():
            why = "it has no description"
        elif not beyond:
            why = "its description only repeats the words of its name"
        elif bits < needed:
            common = _surface(tool.description, {w for w in beyond if view.df[w] >= generic})
            why = (
                f"its words beyond the name say {bits:.1f} bits, fewer than the {needed:.1f} it takes to "
                f"single out one of {n:,} tools"
                + (f" (generic here: {', '.join(common)})" if common else " (too short)")
            )
        else:
            continue
        found.append((bits, view.index.position(tool.name), tool.name, why))
    for bits, _, name, why in sorted(found):
        yield Diagnosis(
            "vague",
            (name,),
            why,
            "say what it acts on, what it returns and when to use it, in the words users would use",
            {"bits": round(bits, 2), "needed_bits": round(needed, 2)},
        )


def token_hogs(view: View, budget: int, k: int) -> Iterable[Diagnosis]:
    share = budget / k
    costs = [(view.index.cost(i), i) for i in view.positions]
    for cost, i in sorted((c for c in costs if c[0] > share), key=lambda c: (-c[0], c[1])):
        never = " and alone exceeds the whole budget" if cost > budget else ""
        yield Diagnosis(
            "token_hog",
            (view.index.name(i),),
            f"its definition costs {cost:,} tokens, {cost / budget:.0%} of a {budget:,}-token budget "
            f"(over the 1/{k} a {k}-tool shortlist leaves each){never}",
            "shorten the schema: cut descriptions that repeat a parameter's name, long enums and rarely "
            "used options, or split it into smaller tools",
            {"cost_tokens": cost, "budget_tokens": budget},
        )


def pins(
    view: View, queries: Sequence[LabelledQuery], labels: Mapping[str, str], usage: UsageStore | RedisUsageStore | None
) -> Iterable[Diagnosis]:
    core = {t.name for t in view.tools if t.core}
    sources: list[tuple[str, int, Counter[str]]] = []
    if usage is not None:
        users, reach = usage.reach()
        sources.append(("users", users, Counter({t: n for t, n in reach.items() if t in view.names})))
    if queries:
        first: dict[str, str] = {}
        for t in view.tools:
            first.setdefault(labels.get(t.name, t.name), t.name)
        need = Counter(first[r] for q in queries for r in dict.fromkeys(q.relevant) if r in first)
        sources.append(("requests", len(queries), need))
    for what, total, counts in sources:
        for name, used in sorted(counts.items(), key=lambda kv: (-kv[1], view.index.position(kv[0]))):
            if name not in core and total and used / total > PIN_SHARE:
                yield Diagnosis(
                    "pin",
                    (name,),
                    f"used by {used} of {total} {what} ({used / total:.0%})",
                    f"pin it: ToolTierOptions(pinned=[{name!r}]) or core=True, so no turn has to search for it",
                    {"used": used, "of": total, "source": what},
                )
