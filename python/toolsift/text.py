"""What of a tool is indexed: its text fields and their default weights.

The index sees six fields per tool. ``parameters`` is the text of the JSON schema: argument names,
titles, descriptions and enum values, up to three levels of nested properties (through ``items``
and ``anyOf``/``oneOf``/``allOf`` too). ``$ref`` is not followed. ``learned`` is not authored: it
holds the words that requests which led to calls of the tool added (see :mod:`toolsift.learning`),
empty unless the index was given some, and weighs least.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from . import _core
from ._core import MIN_FIELD_WEIGHT
from .errors import InvalidParameterError
from .query import MAX_WEIGHT, check_text
from .registry import Tool

FIELDS: tuple[str, ...] = ("name", "description", "parameters", "examples", "search_text", "learned")
"""Indexed fields, in the order the core receives them."""

DEFAULT_FIELD_WEIGHTS: Mapping[str, float] = {
    "name": 2.0,
    "description": 1.0,
    "parameters": 0.5,
    "examples": 1.0,
    "search_text": 1.0,
    "learned": 0.2,
}
"""Weight of each field in BM25F's pseudo term frequency (0 leaves a field out)."""

DEFAULT_FIELD_B: Mapping[str, float] = {
    "name": 0.75,
    "description": 0.75,
    "parameters": 0.5,
    "examples": 0.75,
    "search_text": 0.75,
    "learned": 0.0,  # capped and repeated by weight already: a long learned text is not a vague one
}
"""Length normalisation ``b`` of each field."""


def tokenize(text: str) -> list[str]:
    """The terms the index makes of ``text``: words split (identifiers too), accents folded,
    lower-cased and stemmed, CJK as bigrams (:class:`InvalidParameterError` for a non-string or
    a lone surrogate)."""
    return _core.tokenize(check_text("text", text))


MAX_PROPERTY_DEPTH = 3
_MAX_NESTING = 12  # bound on items/anyOf/oneOf/allOf chains between property levels
_COMBINATORS = ("anyOf", "oneOf", "allOf")


def _per_field(
    what: str,
    defaults: Mapping[str, float],
    given: float | Mapping[str, float] | None,
    upper: float,
    lowest: float = 0.0,
) -> list[float]:
    """Per-field values: 0, or a number in ``[lowest, upper]``."""
    values = dict(defaults)
    if given is None:
        overrides: Mapping[Any, Any] = {}
    elif isinstance(given, Mapping):
        overrides = given
    elif isinstance(given, int | float) and not isinstance(given, bool):
        overrides = dict.fromkeys(FIELDS, given)
    else:
        raise InvalidParameterError(f"{what} must be a number, a mapping of field to number or None, not {given!r}")
    for key, value in overrides.items():
        if key not in values:
            raise InvalidParameterError(f"unknown field {key!r} in {what}; fields are {list(FIELDS)}")
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (0 <= value <= upper and math.isfinite(value))
            or 0 < value < lowest
        ):
            span = f"0 or a number in [{lowest:g}, {upper:g}]" if lowest else f"a number in [0, {upper:g}]"
            raise InvalidParameterError(f"{what} of {key!r} must be {span}, not {value!r}")
        values[key] = float(value)
    return [values[f] for f in FIELDS]


def field_params(
    weights: Mapping[str, float] | None, b: float | Mapping[str, float] | None
) -> tuple[list[float], list[float]]:
    """Per-field weights and ``b`` in :data:`FIELDS` order: defaults, overridden where given.

    ``b`` may be one number for every field or a mapping per field.
    """
    return (
        _per_field("field_weights", DEFAULT_FIELD_WEIGHTS, weights, MAX_WEIGHT, MIN_FIELD_WEIGHT),
        _per_field("b", DEFAULT_FIELD_B, b, 1.0),
    )


def tool_fields(tool: Tool, learned: str = "") -> tuple[str, str, str, str, str, str]:
    """The texts of ``tool`` in :data:`FIELDS` order (``learned``: its learned text, if any)."""
    examples = "\n".join(tool.examples)
    return (tool.name, tool.description, schema_text(tool.parameters), examples, tool.search_text, learned)


def field_columns(tools: Sequence[Tool], learned: Mapping[str, str] | None = None) -> list[list[Any]]:
    """What the core index is given for ``tools``: one list per field in :data:`FIELDS` order,
    the texts of :func:`tool_fields` except that ``parameters`` is the schema itself, whose text
    the core extracts as :func:`schema_text` does (without a string per tool). ``learned`` maps a
    tool's name to its learned text."""
    learned = learned or {}
    return [
        [t.name for t in tools],
        [t.description for t in tools],
        [t.parameters for t in tools],
        ["\n".join(t.examples) for t in tools],
        [t.search_text for t in tools],
        [learned.get(t.name, "") for t in tools],
    ]


def schema_text(schema: Mapping[str, Any]) -> str:
    """Argument names, titles, descriptions and enum values of a JSON schema, in document order."""
    out: list[str] = []
    _walk(schema, 1, 0, out)
    return "\n".join(out)


def _walk(node: Any, depth: int, nesting: int, out: list[str]) -> None:
    if not isinstance(node, Mapping) or depth > MAX_PROPERTY_DEPTH or nesting > _MAX_NESTING:
        return
    props = node.get("properties")
    if isinstance(props, Mapping):
        for name, sub in props.items():
            out.append(str(name))
            _describe(sub, out)
            _walk(sub, depth + 1, 0, out)
    items = node.get("items")
    for sub in items if isinstance(items, list) else [items]:
        _walk(sub, depth, nesting + 1, out)
    for key in _COMBINATORS:
        variants = node.get(key)
        if isinstance(variants, list):
            for sub in variants:
                _describe(sub, out)
                _walk(sub, depth, nesting + 1, out)


def _describe(node: Any, out: list[str]) -> None:
    if not isinstance(node, Mapping):
        return
    for key in ("title", "description"):
        if isinstance(node.get(key), str):
            out.append(node[key])
    enum = node.get("enum")
    if isinstance(enum, list):
        out.extend(str(v) for v in enum if isinstance(v, str | int | float) and not isinstance(v, bool))


def dense_text(tool: Tool) -> str:
    """What the dense side embeds for a tool: its description, example queries and search-only
    text (natural language; the lexical side covers names and parameters), or the words of its
    name when it has none of those."""
    text = "\n".join(t for t in (tool.description, *tool.examples, tool.search_text) if t)
    return text or re.sub(r"[_\W]+", " ", re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", tool.name)).strip()
