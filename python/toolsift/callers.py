"""Callers: the permissions a query is asked with, validated once, and compiled per core index.

A caller is an iterable of permission strings, one string, or ``None`` (public tools only).
:func:`perms_of` validates it into :class:`Perms` (plain strings and a cache key), remembering
the answer for the very same tuple or frozenset and for the same strings; :class:`Masks` keeps
each caller compiled for one core index, so a caller reused across queries costs a lookup.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from .errors import InvalidParameterError
from .query import check_text

Caller = Iterable[str] | str | None
"""Permissions a caller holds: an iterable of strings, one string, or ``None`` (public tools only).
A mapping is refused (:class:`~toolsift.errors.InvalidParameterError`): ``{"p": False}`` does not
say whether ``p`` is held."""

PUBLIC: tuple[str, ...] = ()
"""The permissions a public tool requires, and those of a caller that holds none."""
RESERVED = "toolsift:"
"""Prefix of the permissions toolsift itself uses; no caller may hold one."""
WITHHELD = RESERVED + "withheld"
"""Held by no caller: a tool that requires it is indexed, never emitted (``Index(scan="withhold")``)."""
#: Most distinct callers whose validation (and compiled mask, per index) is remembered.
MAX_CALLERS = 1024


class Perms(NamedTuple):
    """A caller's permissions after validation: plain strings, and the key its caches use."""

    names: tuple[str, ...]
    key: str | tuple[str, ...]


_VALID: dict[str | tuple[str, ...], Perms] = {}
_BY_ID: dict[int, tuple[object, Perms]] = {}


def perms_of(caller: Caller) -> Perms:
    """``caller`` validated: :class:`~toolsift.errors.InvalidParameterError` for a mapping, a
    non-string permission, a reserved one (``toolsift:...``) or text that is not Unicode."""
    # The very same tuple or frozenset seen before (only those are stored): same strings, so the
    # same answer. The entry holds the object, so its id cannot be reused by another while cached.
    seen = _BY_ID.get(id(caller))
    if seen is not None and seen[0] is caller:
        return seen[1]
    found = _validate(caller)
    if type(caller) in (tuple, frozenset):
        if len(_BY_ID) >= MAX_CALLERS:
            _BY_ID.clear()
        _BY_ID[id(caller)] = (caller, found)
    return found


def _join(perms: Sequence[Any]) -> str | None:
    """The permissions joined by NUL, or None when one is not a string. Joining reads each
    string's own characters, so a ``str`` subclass cannot lie its way into another caller's cache
    entry through ``__eq__`` or ``__hash__``."""
    try:
        return "\0".join(perms)
    except TypeError:
        return None


def _listed(caller: Caller) -> Sequence[Any]:
    """The permissions of ``caller`` as a sequence, not yet checked one by one."""
    if caller is None:
        return ()
    if isinstance(caller, str):
        return (caller,)
    if type(caller) in (list, tuple):  # exact types: a subclass could lie in __len__
        return caller  # type: ignore[return-value]
    if isinstance(caller, Mapping):  # {"billing.refund": False} would grant it: say so instead
        raise InvalidParameterError(
            "caller must be permission strings, not a mapping: pass the permissions held, e.g. "
            "[p for p, held in caller.items() if held]"
        )
    try:
        held = list(caller)
    except TypeError:
        kind = type(caller).__name__
        raise InvalidParameterError(f"caller must be strings, a string or None, not {kind}") from None
    if isinstance(caller, set | frozenset) and all(isinstance(p, str) for p in held):
        held.sort()  # a set's order changes from process to process (string hashing): hooks see it
    return held


def _validate(caller: Caller) -> Perms:
    perms = _listed(caller)
    key = _join(perms)
    found = None if key is None else _VALID.get(key)
    # Validated before. Only callers whose strings hold no NUL are stored under their joined
    # key, so one with as many strings and the same joined text has the very same strings.
    if found is not None and len(found.names) == len(perms):
        return found
    for p in perms:
        if not isinstance(p, str):
            raise InvalidParameterError(f"caller permissions must be strings, found {type(p).__name__}")
    # plain strings only from here on: a str subclass could lie in __eq__, __hash__ or startswith
    names = tuple(str.__str__(p) for p in perms)
    for p in names:
        if p.startswith(RESERVED):
            raise InvalidParameterError(f"permissions starting with {RESERVED!r} are reserved, found {p!r}")
        check_text("a caller permission", p)
    # stored under the joined text only when it is unambiguous (no string holds a NUL)
    found = Perms(names, key if key is not None and key.count("\0") == len(names) - 1 else names)
    if len(_VALID) >= MAX_CALLERS:
        _VALID.clear()
    _VALID[found.key] = found
    return found


class Masks:
    """Callers compiled for one core index (``_core.Caller``), at most :data:`MAX_CALLERS`, the
    oldest dropped first."""

    def __init__(self, core: Any) -> None:
        self._core = core
        self._compiled: dict[str | tuple[str, ...], Any] = {}
        self._lock = threading.Lock()

    def of(self, perms: Perms) -> Any:
        """``perms`` compiled for the core index, cached: a caller reused across queries is
        looked up once per query instead of validated and interned again."""
        found = self._compiled.get(perms.key)
        if found is None:
            found = self._core.caller(perms.names)
            with self._lock:
                if len(self._compiled) >= MAX_CALLERS:
                    self._compiled.pop(next(iter(self._compiled)))
                self._compiled[perms.key] = found
        return found
