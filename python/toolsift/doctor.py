"""What a catalog owner should fix so that search finds the right tool: :func:`doctor`.

The first useful tuning pass of tool search is editorial (inspect the misses, make descriptions
specific enough to beat nearby tools, add search-only text in the users' words, pin the tools
every task needs). :func:`doctor` runs the checks below over a catalog, ranking with the same
:class:`~toolsift.Index` that serves it, and returns a :class:`Checkup`: one :class:`Diagnosis` per
finding, naming the tools, why, and a suggested fix. Every threshold comes from the catalog's own
statistics or from the selection defaults, never from a word list:

============  ===============================================================================
kind          found when
============  ===============================================================================
poisoned      :func:`toolsift.scan.scan` reports the definition (injection, hidden characters,
              a look-alike name).
confusable    two tools' texts are so close that the index cannot separate them: with a tool's
              own name and description as the query, the other one scores at least
              :data:`CONFUSABLE_SHARE` of the tool's own score, both ways; pairs are grouped
              where every two members are such a pair. One search per tool, its
              :data:`NEIGHBOURS` best hits: no work per pair of tools.
unreachable   none of the tool's example queries (or, without examples, its name as the query)
              brings it into the top ``k`` (``tool_search``'s default limit).
miss          a labelled or logged request needed the tool and it was not offered; the request
              words that are nowhere in the tool's indexed text are candidates for search text.
vague         the description is empty or adds no word to the name, or its words beyond the
              name carry fewer bits than singling out one of the catalog's ``N`` tools takes
              (``log2 N``; a word in ``df`` tools carries ``log2(N / df)``, see
              :func:`toolsift.checks._bits`). Words in ``sqrt(N)`` tools or more, which carry at
              most half of that, are shown as the generic ones.
token_hog     the definition costs more than ``budget_tokens / k``: a ``k``-tool shortlist that
              holds it has less room for every other tool.
pin           more than :data:`PIN_SHARE` of the users (a usage store, SQLite or Redis) or of
              the requests use the tool: search is for the long tail, this one should be core.
============  ===============================================================================

The doctor is a catalog owner's tool and sees the whole catalog by default, tools an
``Index(scan="withhold")`` withholds included (their ``poisoned`` findings say so; the other
checks rank, and so skip them). With
``for_caller=perms`` it sees only what that caller may use, ranks as that caller's searches do,
and names no other tool in any finding.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from . import checks
from .arguments import count
from .callers import Caller
from .checks import CONFUSABLE_SHARE, NEIGHBOURS, PIN_SHARE, Diagnosis, View
from .errors import InvalidParameterError
from .eval.datasets import Dataset, LabelledQuery
from .index import Index
from .plan import DEFAULT_LIMIT
from .registry import Catalog, Tool
from .report import Markup, codes, escape, page, table
from .tiers import ToolTierOptions
from .usage import RedisUsageStore, UsageStore

__all__ = ["CONFUSABLE_SHARE", "KINDS", "NEIGHBOURS", "PIN_SHARE", "Checkup", "Diagnosis", "doctor"]

KINDS = ("poisoned", "confusable", "unreachable", "miss", "vague", "token_hog", "pin")
"""Finding kinds, in the order a report lists them (most urgent first)."""


@dataclass(frozen=True)
class Checkup:
    """The result of :func:`doctor`: what was examined and every finding, most urgent kind first."""

    tools: int
    queries: int
    k: int
    budget_tokens: int
    diagnoses: tuple[Diagnosis, ...]

    def counts(self) -> dict[str, int]:
        """Findings per kind, every kind listed."""
        found = Counter(d.kind for d in self.diagnoses)
        return {kind: found[kind] for kind in KINDS}

    def of(self, kind: str) -> list[Diagnosis]:
        """The findings of one kind."""
        return [d for d in self.diagnoses if d.kind == kind]

    def to_dict(self) -> dict[str, Any]:
        """The checkup as JSON-ready values."""
        return {
            "tools": self.tools,
            "queries": self.queries,
            "k": self.k,
            "budget_tokens": self.budget_tokens,
            "thresholds": {"confusable_share": CONFUSABLE_SHARE, "neighbours": NEIGHBOURS, "pin_share": PIN_SHARE},
            "counts": self.counts(),
            "findings": [d.to_dict() for d in self.diagnoses],
        }

    def to_json(self) -> str:
        """The checkup as JSON: the same input gives the same bytes."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    def to_html(self) -> str:
        """The checkup as one self-contained HTML page."""
        return checkup_html(self)


def doctor(
    catalog: Catalog | Iterable[Tool] | Index,
    *,
    index: Index | None = None,
    queries: Dataset | Iterable[LabelledQuery] | None = None,
    usage: UsageStore | RedisUsageStore | None = None,
    for_caller: Caller | None = None,
    k: int = DEFAULT_LIMIT,
    budget_tokens: int | None = None,
) -> Checkup:
    """Checks ``catalog`` and returns every finding (see the module's table).

    Args:
        catalog: The tools, or a built :class:`Index` (then ranked with it).
        index: An index of the same tools to rank with (its options: field weights, ``k1``...);
            default an :class:`Index` with default options.
        queries: Labelled requests (``toolsift eval``'s, or a gateway log's through
            :func:`toolsift.eval.load_gateway_log`, which also says what was offered) for misses
            and pins; a :class:`~toolsift.eval.Dataset` also gives its labels.
        usage: Per-user usage, for pins.
        for_caller: ``None`` (default): the owner's view, every tool. Permissions: only the tools
            that caller may use (``()``: public tools only), and no other tool is ever named.
        k: Shortlist size for reachability and misses (default ``tool_search``'s 5).
        budget_tokens: Token budget for token hogs (default :class:`ToolTierOptions`').

    Raises:
        InvalidParameterError: ``index`` holds other tools than ``catalog``, or ``k`` or
            ``budget_tokens`` is not a non-negative int.
    """
    k = max(count("k", k), 1)
    budget = (
        ToolTierOptions().effective_budget_tokens() if budget_tokens is None else count("budget_tokens", budget_tokens)
    )
    index = _index(catalog, index)
    view = View(index, for_caller)
    labelled = list(queries.queries if isinstance(queries, Dataset) else queries or ())
    labels = queries.labels if isinstance(queries, Dataset) else {}
    own = [f"{t.name}\n{t.description}" for t in view.tools]
    asked = [(t, list(t.examples) or [t.name]) for t in view.tools if not t.core]
    fresh = [q.text for q in labelled if q.offered is None]
    work = [(own, NEIGHBOURS + 1), ([q for _, qs in asked for q in qs], k), (fresh, k)]
    # the searches run in the core with the GIL released, beside the scanner's Python
    with ThreadPoolExecutor(max_workers=1) as pool:
        searched = pool.submit(lambda: [view.index.search_many(texts, k=n, caller=view.perms) for texts, n in work])
        poisoned, vague = list(checks.poisoned(view)), list(checks.vague(view))
        near, reach, offered = searched.result()
    found = [
        *poisoned,
        *checks.confusable(view, near),
        *checks.unreachable(asked, reach, k),
        *checks.misses(view, labelled, labels, iter(offered)),
        *vague,
        *checks.token_hogs(view, budget, k),
        *checks.pins(view, labelled, labels, usage),
    ]
    return Checkup(len(view.scanned), len(labelled), k, budget, tuple(found))


def _index(catalog: Catalog | Iterable[Tool] | Index, index: Index | None) -> Index:
    if isinstance(catalog, Index):
        tools, index = Catalog(catalog.tool(i) for i in range(len(catalog))), index or catalog
    else:
        tools = catalog if isinstance(catalog, Catalog) else Catalog(catalog)
    if index is None:
        return Index(tools)
    if index.names != list(tools.names):
        where = next((i for i, (a, b) in enumerate(zip(index.names, tools.names, strict=False)) if a != b), None)
        at = f"at position {where} ({index.names[where]!r} in the index)" if where is not None else "in number"
        raise InvalidParameterError(f"the index holds other tools than the catalog: they differ {at}")
    for i, tool in enumerate(tools):  # the same names, from an older catalog, would be checked as they were
        if index.tool(i).to_json() != tool.to_json():
            raise InvalidParameterError(
                f"the index holds another definition of {tool.name!r} than the catalog (saved from an older one?)"
            )
    return index


_TITLES = {
    "poisoned": "Poisoned or shadowing definitions",
    "confusable": "Confusable tools",
    "unreachable": "Unreachable tools",
    "miss": "Misses",
    "vague": "Vague descriptions",
    "token_hog": "Token hogs",
    "pin": "Pin suggestions",
}


def checkup_html(checkup: Checkup) -> str:
    """The doctor's findings as a page: counts per kind, then a table per kind."""
    counts = checkup.counts()
    titles = ((Markup(f'<a href="#{k}">{escape(_TITLES[k])}</a>') if n else _TITLES[k], n) for k, n in counts.items())
    body = [table(["finding", "count"], titles, numeric=(1,), cls="counts")]
    for kind, n in counts.items():
        if not n:
            continue
        rows = ((codes(d.tools), d.why, d.fix) for d in checkup.of(kind))
        body += [f'<h2 id="{kind}">{escape(_TITLES[kind])} ({n:,})</h2>', table(["tools", "why", "fix"], rows)]
    lead = (
        f"{checkup.tools:,} tools, {checkup.queries:,} requests; shortlist k={checkup.k}, "
        f"budget {checkup.budget_tokens:,} tokens"
    )
    return page("toolsift doctor", lead, body)
