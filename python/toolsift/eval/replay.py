"""Replay evaluation of learning from use (``toolsift eval --replay FRACTION``).

A dataset's requests are split: the first ``fraction`` of its distinct requests (in the dataset's
order, or shuffled with a seed) is played as the log, each request followed by calls of the tools it needs; the rest is
scored twice, with the index as built and with the index rebuilt with what was learned, side by
side. One scope holds the whole log, as a deployment with one tenant would.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace

from .. import _core
from ..errors import InvalidParameterError
from ..index import Index
from ..learning import Learned
from .datasets import Dataset, LabelledQuery
from .systems import System

SCOPE = "replay"


@dataclass
class Replay:
    """What a replay built: the held-out requests, both systems, and what was learned."""

    scored: Dataset
    """The requests scored (the part not played as the log)."""
    systems: list[System]
    """toolsift as built, and toolsift with the learned field."""
    played: int
    """Requests played as the log."""
    learned_tools: int
    """Tools that learned words."""


def split(dataset: Dataset, fraction: float, seed: int | None = None) -> tuple[list[LabelledQuery], Dataset]:
    """The log part and the scored part of ``dataset`` (a seed shuffles the requests first).

    The cut is made between distinct requests, by their terms as the index ranks them (case,
    quotes, punctuation, word order, inflection and digits aside; the systems rank the text
    alone): a request the dataset holds twice, or twice but for those, is all on one side, so
    no scored request was played in other words that rank and teach alike."""
    if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0.0 < fraction < 1.0:
        raise InvalidParameterError(f"the replay fraction must be a number in (0, 1), not {fraction!r}")
    queries = list(dataset.queries)
    if seed is not None:
        random.Random(seed).shuffle(queries)
    requests = list(dict.fromkeys(_request(q) for q in queries))
    played = set(requests[: round(len(requests) * fraction)])
    log = [q for q in queries if _request(q) in played]
    rest = [q for q in queries if _request(q) not in played]
    if not log or not rest:
        raise InvalidParameterError(
            f"a replay fraction of {fraction!r} of {len(requests)} distinct requests leaves nothing to "
            + ("play" if not log else "score")
        )
    return log, replace(dataset, name=f"{dataset.name} (held out)", queries=rest)


def _request(q: LabelledQuery) -> tuple[str, ...]:
    """What tells requests apart: the terms the index ranks them by (stemmed, in any order,
    each once), digits aside, as learning drops them; two requests with the same terms rank
    alike and teach alike."""
    return tuple(sorted({t for t in _core.tokenize(q.text) if not t.isdigit()})) or (q.text,)


def called_tools(dataset: Dataset, query: LabelledQuery, named: dict[str, list[str]] | None = None) -> list[str]:
    """The tools a logged request led to calls of: those it needs, as catalog names (among the
    tools the dataset offered it, where it says, for labels several tools share). ``named``:
    :func:`tools_by_label` of the dataset, when already made."""
    named = tools_by_label(dataset) if named is None else named
    wanted = set(query.relevant)
    offered = [n for n in query.available if dataset.label(n) in wanted and dataset.catalog.get(n) is not None]
    if offered:
        return offered
    return sorted({n for label in wanted for n in named.get(label, ())}, key=dataset.catalog.position)


def tools_by_label(dataset: Dataset) -> dict[str, list[str]]:
    """The catalog's tool names by their label, in registry order."""
    out: dict[str, list[str]] = {}
    for name in dataset.catalog.names:
        out.setdefault(dataset.label(name), []).append(name)
    return out


def replay(
    dataset: Dataset,
    fraction: float,
    *,
    seed: int | None = None,
    learned: Learned | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Replay:
    """Plays the first ``fraction`` of ``dataset`` as the log and builds both systems."""
    log, scored = split(dataset, fraction, seed)
    index = Index(dataset.catalog)
    clock = [0.0]
    store = learned or Learned(clock=lambda: clock[0])
    store.forget(SCOPE)  # a store given twice: what an earlier replay played is not scored here
    named = tools_by_label(dataset)
    for i, q in enumerate(log):
        clock[0] = float(i)  # one event a second: the log is far younger than a half-life
        store.observe(index, q.text, called_tools(dataset, q, named), scope=SCOPE)
        if progress:
            progress(i + 1, len(log))
    texts = store.texts(SCOPE, index)
    taught = index.with_learned(texts)
    systems = [_system("toolsift", index), _system("toolsift+learned", taught)]
    return Replay(scored, systems, len(log), len(texts))


def _system(name: str, index: Index) -> System:
    def rank(q: LabelledQuery, k: int) -> list[str]:
        return [h.tool.name for h in index.search(q.text, k=k)]

    return System(name, rank, index)
