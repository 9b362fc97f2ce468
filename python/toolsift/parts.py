"""What an index is made of, from a catalog (:func:`build`) or from an index file (:func:`read`).

Both give :class:`Parts`; :class:`toolsift.Index` is opened on them the same way either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from . import _core
from .arguments import number
from .assemble import default_token_count
from .callers import WITHHELD
from .errors import InvalidParameterError, InvalidToolError, PoisonedToolError, SchemaError
from .query import check_text
from .registry import Catalog, Tool, name_arg
from .scan import Finding
from .scan import scan as scan_tools
from .snapshot import Options
from .snapshot import load as load_file
from .tenancy import Scoring
from .text import field_columns, field_params


class Parts(NamedTuple):
    """The tools in registry order, their positions by name, the core index and its scoring, the
    scanner's findings, the tool vectors (``None``: none, or not wanted) and the tools' learned
    texts (see :mod:`toolsift.learning`)."""

    tools: Sequence[Tool]
    positions: Mapping[str, int]
    core: Any
    scoring: Scoring
    findings: tuple[Finding, ...]
    vectors: np.ndarray | None
    learned: Mapping[str, str]


def build(
    catalog: Catalog | Iterable[Tool],
    *,
    k1: float,
    prefix_weight: float,
    b: float | Mapping[str, float] | None,
    field_weights: Mapping[str, float] | None,
    count_tokens: Callable[[dict[str, Any]], int] | None,
    scan: str,
    keep_terms: bool,
    learned: Mapping[str, str] | None = None,
) -> Parts:
    """The parts of an index of ``catalog``: tools scanned (``scan``: see :class:`~toolsift.Index`),
    each one's cost counted, the core index built."""
    given = catalog if isinstance(catalog, Catalog) else Catalog(catalog)
    tools: Sequence[Tool] = tuple(given)
    findings, withheld = _scan(tools, scan)
    positions = {t.name: i for i, t in enumerate(tools)}  # names are unique: a Catalog holds them
    costs = _costs(tools, count_tokens or default_token_count)
    texts = learned_texts(learned, positions)
    columns = field_columns(tools, texts)
    weights, bs = field_params(field_weights, b)
    core = _core.Index(
        columns,
        weights,
        bs,
        [(*t.permissions, WITHHELD) if t.name in withheld else t.permissions for t in tools],
        costs,
        [t.core for t in tools],
        k1=number("k1", k1),
        prefix_weight=number("prefix_weight", prefix_weight),
        keep_terms=keep_terms,  # the per-caller indexes are cut from its term counts
    )
    scoring = Scoring(weights, bs, float(k1), float(prefix_weight))
    return Parts(tools, positions, core, scoring, findings, None, texts)


def relearned(parts: Parts, learned: Mapping[str, str] | None, vectors: np.ndarray | None) -> Parts:
    """``parts`` with other learned texts: the core index rebuilt from the same tools, with the old
    core's own field parameters, permissions (a withheld tool's mark included), costs and core
    flags; ``vectors`` kept."""
    old, tools = parts.core, parts.tools
    texts, n = learned_texts(learned, parts.positions), len(tools)
    fields = old.field_params
    core = _core.Index(
        field_columns(tools, texts),
        [w for w, _ in fields],
        [b for _, b in fields],
        [old.permissions(i) for i in range(n)],
        [old.cost(i) for i in range(n)],
        [old.is_core(i) for i in range(n)],
        k1=old.k1,
        prefix_weight=old.prefix_weight,
        keep_terms=old.keeps_terms,
    )
    return parts._replace(core=core, vectors=vectors, learned=texts)


def learned_texts(learned: Mapping[str, str] | None, positions: Mapping[str, int]) -> dict[str, str]:
    """``learned`` checked (text for tools of the index), non-empty texts only, in registry order."""
    if learned is None:
        return {}
    if not isinstance(learned, Mapping):
        raise InvalidParameterError(f"learned must be a mapping of tool name to text, not {type(learned).__name__}")
    texts: dict[str, str] = {}
    for name, text in learned.items():
        key = name_arg(name)
        if key not in positions:
            raise InvalidParameterError(f"learned names the tool {key!r}, which the index does not hold")
        if check_text(f"the learned text of {key!r}", text):
            texts[key] = str.__str__(text)
    return {n: texts[n] for n in sorted(texts, key=positions.__getitem__)}


def read(path: str | Path, *, vectors: bool) -> tuple[Parts, Options]:
    """The parts of an index saved to ``path`` (see :func:`toolsift.snapshot.load`), and the
    options it was saved with; its tool vectors only when ``vectors``."""
    positions, core, stored, options = load_file(path, vectors=vectors)
    scoring = options["scoring"]
    # the header's scoring equals the core's own parameters (checked by load)
    build = Scoring(scoring["weights"], scoring["b"], float(scoring["k1"]), core.prefix_weight)
    return Parts(positions.tools, positions, core, build, (), stored, options["learned"]), options


def _scan(tools: Sequence[Tool], policy: str) -> tuple[tuple[Finding, ...], set[str]]:
    """The scanner's findings under ``policy``, and the tools to withhold."""
    if policy not in ("off", "report", "withhold", "refuse"):
        raise InvalidParameterError(f"scan must be 'off', 'report', 'withhold' or 'refuse', not {policy!r}")
    findings = () if policy == "off" else tuple(scan_tools(tools))
    if policy == "refuse" and findings:
        raise PoisonedToolError(findings)
    return findings, {f.tool for f in findings} if policy == "withhold" else set()


def _costs(tools: Sequence[Tool], counter: Callable[[dict[str, Any]], int]) -> list[int]:
    """Each tool's token cost: its own ``cost_tokens``, else what ``counter`` says of its
    definition. The default counter's measure (the bytes of the compact JSON) is taken by the
    core from the definitions themselves, without a JSON text per tool; a definition holding
    something else than plain JSON types is measured by the counter itself."""
    if counter is not default_token_count:
        return [t.cost_tokens if t.cost_tokens is not None else _cost(t, counter) for t in tools]
    measured = [t for t in tools if t.cost_tokens is None]
    sizes = iter(
        _core.definition_bytes(
            [t.name for t in measured], [t.description for t in measured], [t.parameters for t in measured]
        )
    )
    costs = []
    for t in tools:
        if t.cost_tokens is not None:
            costs.append(t.cost_tokens)
            continue
        size = next(sizes)
        costs.append(_cost(t, counter) if size is None else checked_tokens((size + 3) // 4, t.name))
    return costs


def _cost(tool: Tool, counter: Callable[[dict[str, Any]], int]) -> int:
    if counter is default_token_count:  # it fails only on a definition that is not JSON: the schema's fault
        definition = tool.definition()  # a schema it cannot copy raises its own SchemaError
        try:
            value = counter(definition)
        except (TypeError, ValueError, RecursionError) as e:
            raise SchemaError(
                f"not JSON ({e}), so its tokens cannot be counted", tool=tool.name, field="parameters"
            ) from e
        return checked_tokens(value, tool.name)
    return counted_tokens(counter, tool.definition(), tool.name)


def counted_tokens(
    counter: Callable[[dict[str, Any]], int],
    definition: dict[str, Any],
    tool: str,
    field: str = "cost_tokens",
    source: str = "count_tokens",
) -> int:
    """What the owner's token counter ``source`` says of ``tool``'s ``definition``, checked (see
    :func:`checked_tokens`); what it raises is an :class:`InvalidToolError` naming the tool."""
    try:
        value = counter(definition)
    except Exception as e:  # the owner's function: said as the tool it failed on
        raise InvalidToolError(f"{source} raised {type(e).__name__}: {e}", tool=tool, field=field) from e
    return checked_tokens(value, tool, field, source)


def checked_tokens(value: object, tool: str, field: str = "cost_tokens", source: str = "count_tokens") -> int:
    """``value``, what token counter ``source`` said of ``tool``, if it is an int in
    ``[0, 2**32)`` (the core's costs); :class:`InvalidToolError` naming the tool and ``field``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**32:
        raise InvalidToolError(f"{source} returned {value!r}, not an int in [0, 2**32)", tool=tool, field=field)
    return value
