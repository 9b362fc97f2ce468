"""Groups of tools: each tool's group (``Index(group_by=...)``), for searches and selections
limited to some groups and for the hierarchical step (the best groups first, then tools)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from .arguments import count
from .errors import InvalidParameterError
from .plan import default_group, group_name, namespace
from .registry import Tool

Groups = str | Iterable[str] | None
"""The groups a search or selection is limited to: a group's name, several, or ``None`` (all)."""


class GroupTable(NamedTuple):
    """Every tool's group: the group names (sorted), each tool's group id, each group's tools."""

    names: tuple[str, ...]
    of: np.ndarray  # group id per registry position
    ids: Mapping[str, int]
    members: tuple[np.ndarray, ...]  # registry positions per group id, ascending


class Grouping:
    """The groups of an index's tools: computed now for a ``group_by`` of the owner's, so that
    what it fails on fails the build (or the load) the owner runs, never a caller's first
    grouped query with an error naming another caller's tool; on first use for the default
    (a tool's namespace, from its name alone: a loaded index then parses no tool)."""

    def __init__(self, group_by: Callable[[Tool], str], tools: Sequence[Tool], names: Iterable[str]) -> None:
        self.group_by = group_by
        self._tools, self._names = tools, names
        self._table: GroupTable | None = None
        if group_by is not default_group:
            self.table()

    def table(self) -> GroupTable:
        """Every tool's group (see ``group_by``)."""
        table = self._table
        if table is None:
            if self.group_by is default_group:  # the name is enough: a loaded index parses no tool
                found = [namespace(name) for name in self._names]
            else:
                found = [group_name(self.group_by, t) for t in self._tools]
            names = tuple(sorted(set(found)))
            ids = {g: i for i, g in enumerate(names)}
            of = np.fromiter((ids[g] for g in found), dtype=np.int64, count=len(found))
            order = np.argsort(of, kind="stable").astype(np.uint32)
            members = tuple(np.split(order, np.cumsum(np.bincount(of, minlength=len(names)))[:-1]))
            table = self._table = GroupTable(names, of, ids, members)
        return table

    def counts(self, allowed: np.ndarray) -> dict[str, int]:
        """Each group holding a tool of ``allowed`` (one bool per position), with how many."""
        table = self.table()
        counts = np.bincount(table.of[allowed], minlength=len(table.names)).tolist()
        return {g: c for g, c in zip(table.names, counts, strict=True) if c}

    def members(self, group: Groups) -> np.ndarray | None:
        """The registry positions of the tools of ``group``, ascending (``None``: no limit). A
        group that does not exist holds no tool, like one whose tools the caller may not use."""
        if group is None:
            return None
        names = [group] if isinstance(group, str) else _group_names(group)
        table = self.table()
        found = [table.members[table.ids[g]] for g in dict.fromkeys(names) if g in table.ids]
        return np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.uint32)

    def best(self, order: list[int], groups: int) -> np.ndarray:
        """The registry positions, ascending, of the tools of the first ``groups`` groups that
        the ranking ``order`` reaches."""
        table = self.table()
        best = list(dict.fromkeys(int(table.of[i]) for i in order))[:groups]
        found = [table.members[g] for g in best]
        return np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.uint32)


def group_function(group_by: Callable[[Tool], str] | None) -> Callable[[Tool], str]:
    """``group_by`` of an index, checked: a function of a tool, or ``None`` for
    :func:`toolsift.plan.default_group`."""
    if group_by is not None and not callable(group_by):
        raise InvalidParameterError(f"group_by must be a function of a tool, not {type(group_by).__name__}")
    return default_group if group_by is None else group_by


def groups_arg(groups: int | None) -> int | None:
    """``groups`` of a search or selection: ``None`` or at least 1."""
    if groups is None:
        return None
    if count("groups", groups) < 1:
        raise InvalidParameterError("groups must be at least 1 (None: no limit)")
    return groups


def _group_names(group: object) -> list[str]:
    if isinstance(group, Mapping) or not isinstance(group, Iterable):
        raise InvalidParameterError(f"group must be a group's name or several, not {type(group).__name__}")
    names = list(group)
    for g in names:
        if not isinstance(g, str):
            raise InvalidParameterError(f"group names must be strings, found {type(g).__name__}")
    return [str.__str__(g) for g in names]
