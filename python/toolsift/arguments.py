"""Checks of the plain arguments of an index and its queries: counts, numbers, flags, queries.

Each returns the value in the form the core takes, or raises
:class:`~toolsift.errors.InvalidParameterError` naming the argument.
"""

from __future__ import annotations

import os
import sys
import unicodedata
from collections.abc import Container, Iterable, Mapping
from pathlib import Path
from typing import Any

from .errors import InvalidParameterError
from .query import Query, check_text

UNLIMITED = 2**64 - 1
"""The largest count the core takes, and what a count past it means: no limit."""


def count(name: str, value: object) -> int:
    """``value`` as a non-negative int; counts past 2**64 - 1 mean the same as it, no limit."""
    if type(value) is int and 0 <= value <= UNLIMITED:  # the common case, checked first
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParameterError(f"{name} must be an int, not {type(value).__name__}")
    if value < 0:
        raise InvalidParameterError(f"{name} must be >= 0, got {value}")
    return min(value, UNLIMITED)


def limit(name: str, value: int | None) -> int:
    """A limit that ``None`` lifts: :data:`UNLIMITED` for ``None``, else :func:`count`."""
    return UNLIMITED if value is None else count(name, value)


def number(name: str, value: object) -> float:
    """``value`` as a float (an int or float, not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidParameterError(f"{name} must be a number, not {type(value).__name__}")
    try:
        return float(value)
    except OverflowError:  # an int past the largest float
        raise InvalidParameterError(f"{name} is too large a number (past {sys.float_info.max:.3g})") from None


def flag(name: str, value: object) -> bool:
    """``value``, which must be ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise InvalidParameterError(f"{name} must be True or False, not {value!r}")
    return value


def tool_names(what: str, names: object) -> list[str]:
    """``names`` as a list of tool names; raises :class:`InvalidParameterError` for a single
    string (whose letters would otherwise be read as names) or anything but strings. A set's
    names come sorted: its own order changes from process to process (string hashing)."""
    if isinstance(names, str | bytes) or not isinstance(names, Iterable):
        raise InvalidParameterError(f"{what} must be a list of tool names, not {type(names).__name__}")
    out = list(names)
    for name in out:
        if not isinstance(name, str):
            raise InvalidParameterError(f"{what} must hold tool names (strings), not {name!r}")
    return sorted(out) if isinstance(names, set | frozenset) else out


def evidence_floor(min_evidence: object) -> float | None:
    """The relevance gate's floor: ``None`` (off) or a finite number >= 0."""
    if min_evidence is None:
        return None
    value = number("min_evidence", min_evidence)
    if not value >= 0.0 or value == float("inf"):
        raise InvalidParameterError(f"min_evidence must be a finite number >= 0 or None, not {min_evidence!r}")
    return value


def query_parts(query: str | Query) -> str | list[tuple[str, float]]:
    """A query as the core takes it: a string as it is, else its weighted pieces."""
    if type(query) is str:  # the common case: the core takes the text as it is
        return query
    return list(Query.of(query).parts)


def query_batch(queries: object) -> list[Any]:
    """A batch of queries as a list, read once (an iterator would be used up by a first look
    and answer nothing); a lone string is refused, not read as one query per letter."""
    if isinstance(queries, str | bytes | Mapping) or not isinstance(queries, Iterable):
        raise InvalidParameterError(f"queries must be a list of queries, not {type(queries).__name__}")
    return list(queries)


def check_queries(queries: Iterable[object]) -> None:
    """Raises :class:`InvalidParameterError` for the first query string that is not valid Unicode.

    Called only once the core has refused a query: a string query goes to the core as it is,
    and the core's own check of its text costs nothing more.
    """
    for query in queries:
        if isinstance(query, str):
            check_text("query", query)


def file_path(value: object) -> Path:
    """A file's path: a non-empty ``str`` or ``os.PathLike`` without a NUL character (``os`` raises
    ``TypeError`` or ``ValueError`` for the rest)."""
    if not isinstance(value, str | os.PathLike):
        raise InvalidParameterError(f"path must be a str or a pathlib.Path, not {type(value).__name__}")
    if not os.fspath(value):  # Path("") is the working folder, no file's name
        raise InvalidParameterError("path is empty: give a file's name")
    path = Path(value)
    if "\0" in str(path):
        raise InvalidParameterError(f"path {str(path)!r} holds a NUL character, which no file name may")
    return path


def folded_name(name: str) -> str:
    """``name`` as a reader tells names apart: NFKC-normalised, so "café" composed and
    decomposed, or "search" in full-width letters and in ASCII, are one name (two tools whose names fold
    alike are duplicates)."""
    return name if name.isascii() else unicodedata.normalize("NFKC", name)


def name_forms(names: Iterable[object]) -> dict[str, list[str]]:
    """The string names of ``names`` by their :func:`folded_name`, for :func:`matching_names`."""
    forms: dict[str, list[str]] = {}
    for name in names:
        if isinstance(name, str):
            forms.setdefault(folded_name(name), []).append(name)
    return forms


def matching_names(name: str, names: Container[object], forms: Mapping[str, list[str]]) -> list[str]:
    """The names of ``names`` (a mapping's keys, a set) that name tool ``name``: itself when
    there, else every one that folds like it (``forms``: :func:`name_forms` of ``names``). A
    list of several is a tool named in several Unicode forms, for the caller to refuse: a
    server or file may spell "café" decomposed where a config has it composed, and a lookup
    by exact name would leave that tool without its permissions."""
    if name in names:
        return [name]
    return forms.get(folded_name(name), [])
