"""Index files: the catalog, the core index snapshot and the tool vectors in one checked file.

Layout: ``TOOLSIFT``, a format version (u32), the lengths (u64) of four sections, the CRC-32 of
the sections other than the core's (which carries its own), then the sections: a JSON header
(options and tool names), the tools as JSON Lines in toolsift's own form, the core index snapshot
(versioned and CRC-checked by the core) and the tool vectors (raw float32, possibly empty).
Writes go to a temporary file that replaces the target only once complete, so a crash never
leaves a half-written index. Loading parses a tool's JSON only when that tool is first needed,
so a large index loads in about the time it takes to read the file.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict, overload

import numpy as np

from . import _core
from ._atomic import write_atomic
from .errors import SnapshotError, ToolsiftError
from .registry import Tool, json_lines

MAGIC = b"TOOLSIFT"
FORMAT = 1
_HEAD = struct.Struct("<8sI4QI")
_NEWLINE = 10


class LazyTools(Sequence[Tool]):
    """Tools of a loaded index, each parsed from its JSON line on first use.

    A tool is checked when it is parsed, before anyone sees it: its line must hold the name the
    header gives it, and the permissions, core flag and explicit ``cost_tokens`` that the core
    index enforces at its position. A line that disagrees raises
    :class:`~toolsift.errors.SnapshotError`, then and on every later use.
    """

    def __init__(self, names: list[str], blob: bytes, offsets: list[int], core: _core.Index) -> None:
        self.names, self._blob, self._offsets, self._core = names, blob, offsets, core
        self._made: dict[int, Tool] = {}

    def __len__(self) -> int:
        return len(self.names)

    @overload
    def __getitem__(self, i: int) -> Tool: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Tool]: ...
    def __getitem__(self, i: int | slice) -> Tool | Sequence[Tool]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = range(len(self))[i]
        tool = self._made.get(i)
        if tool is None:
            tool = self._made[i] = self._read(i)
        return tool

    def __iter__(self) -> Iterator[Tool]:
        return (self[i] for i in range(len(self)))

    def _read(self, i: int) -> Tool:
        # The messages name the position and what disagrees, not the tool's name or permissions:
        # reading happens on lookups too (``Index.allows``), for tools the caller may not use.
        line = self._blob[self._offsets[i] : self._offsets[i + 1]]
        try:
            tool = Tool.from_dict(json.loads(line), position=i)
        except (ValueError, RecursionError, ToolsiftError) as e:
            raise SnapshotError(f"tool #{i} of the index file cannot be read ({type(e).__name__})") from None
        problem = self._disagreement(i, tool)
        if problem:
            raise SnapshotError(f"tool #{i} of the index file: {problem}")
        return tool

    def _disagreement(self, i: int, tool: Tool) -> str | None:
        """How tool ``i``'s line disagrees with the header and the core, if it does."""
        from .index import WITHHELD  # added by Index(scan="withhold"): indexed, never emitted

        core = self._core
        if tool.name != self.names[i]:
            return "its line holds another name than the header's"
        if sorted(p for p in core.permissions(i) if p != WITHHELD) != list(tool.permissions):
            return "its line lists other permissions than the core index enforces"
        if core.is_core(i) != tool.core:
            return "its line and the core index disagree on whether it is a core tool"
        if tool.cost_tokens is not None and tool.cost_tokens != core.cost(i):
            return "its line gives another cost_tokens than the core index"
        return None


class Positions(Mapping[str, int]):
    """Registry positions of a loaded index by tool name. Looking a name up reads that tool
    first (see :class:`LazyTools`), so a name the header gives to another tool's line raises
    :class:`~toolsift.errors.SnapshotError` instead of answering with that tool's position."""

    def __init__(self, tools: LazyTools, by_name: dict[str, int]) -> None:
        self.tools, self._by_name = tools, by_name

    def __getitem__(self, name: str) -> int:
        i = self._by_name[name]
        self.tools[i]  # checked before its position is used
        return i

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)


def save(
    path: str | Path, tools: Sequence[Tool], core: bytes, vectors: np.ndarray | None, options: dict[str, Any]
) -> None:
    """Writes an index file atomically (see :func:`toolsift._atomic.write_atomic`)."""
    pieces, offsets = [], [0]
    for piece, ends in json_lines(tools):
        base = offsets[-1]
        offsets.extend(base + end for end in ends[1:])
        pieces.append(piece)
    vec = b"" if vectors is None else np.ascontiguousarray(vectors, dtype="<f4").tobytes()
    dim = 0 if vectors is None else int(vectors.shape[1])
    header = {"options": options, "names": [t.name for t in tools], "offsets": offsets, "dim": dim}
    head_b = json.dumps(header).encode()
    crc = _core.crc32(head_b)
    for piece in pieces:
        crc = _core.crc32(piece, crc)
    crc = _core.crc32(vec, crc)
    head = _HEAD.pack(MAGIC, FORMAT, len(head_b), offsets[-1], len(core), len(vec), crc)
    write_atomic(path, [head, head_b, *pieces, core, vec])


def load(path: str | Path, *, vectors: bool = True) -> tuple[Positions, _core.Index, np.ndarray | None, Options]:
    """``(tools by name, core index, vectors, options)`` of an index file (the tools themselves,
    in registry order, are ``positions.tools``).

    Refused with :class:`~toolsift.errors.SnapshotError` before anything is used: a bad magic,
    format, length or checksum; a header that is not exactly ``options``, ``names``, ``offsets``
    and ``dim``; names that are not one distinct string per tool of the core index; offsets that
    do not cut the tools section into one newline-terminated line per tool, from 0 to its end;
    a line that does not hold the name the header gives it; options of the wrong type or range,
    missing or unknown, or scoring parameters other than the core's; a vector section that is
    not ``dim`` finite float32 values per tool. What needs a tool parsed (its permissions, core
    flag and cost against the core's) is checked when that tool is first used
    (:class:`LazyTools`), so loading stays about as fast as reading the file. With
    ``vectors=False`` the vector section is only measured, not decoded.
    """
    header_b, tools_b, core_b, vec_b, crc = _sections(path)
    if _core.crc32(vec_b, _core.crc32(tools_b, _core.crc32(header_b))) != crc:
        raise SnapshotError(f"{path} is corrupted (checksum mismatch)")
    core = _core.Index.from_bytes(core_b)
    try:
        header = _header(header_b)
        names, by_name = _names(header["names"], len(core))
        blob = tools_b
        offsets = _offsets(header["offsets"], blob, len(names))
        _names_in_lines(names, blob, offsets)
        options = _options(header["options"], core)
        kept = _vectors(header["dim"], vec_b, len(names), decode=vectors)
    except SnapshotError as e:
        raise SnapshotError(f"{path}: {e}") from None
    return Positions(LazyTools(names, blob, offsets, core), by_name), core, kept, options


def _sections(path: str | Path) -> tuple[bytes, bytes, bytes, bytes, int]:
    """The four sections of an index file, each read into its own bytes (nothing copied twice),
    and the checksum its head gives them."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(_HEAD.size)
            if len(head) < _HEAD.size or not head.startswith(MAGIC):
                raise SnapshotError(f"{path} is not a toolsift index file")
            _, fmt, *lengths, crc = _HEAD.unpack(head)
            if fmt != FORMAT:
                raise SnapshotError(f"{path} has index format {fmt}; this toolsift reads format {FORMAT}")
            if _HEAD.size + sum(lengths) != size:
                raise SnapshotError(f"{path} is truncated or has trailing data")
            header_b, tools_b, core_b, vec_b = (f.read(n) for n in lengths)
    except OSError as e:
        raise SnapshotError(f"cannot read {path}: {e.strerror}") from None
    if [len(header_b), len(tools_b), len(core_b), len(vec_b)] != lengths:
        raise SnapshotError(f"{path} is truncated or has trailing data")  # changed while read
    return header_b, tools_b, core_b, vec_b, crc


class Options(TypedDict):
    """The index options an index file carries (checked by :func:`load`)."""

    alpha: float
    depth: int
    statistics: str
    scoring: Scoring


class Scoring(TypedDict):
    """Field weights, ``b`` per field and ``k1``: the core index's own, repeated in the header."""

    weights: list[float]
    b: list[float]
    k1: float


def _header(raw: bytes) -> dict[str, Any]:
    try:
        header = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise SnapshotError(f"the header is not valid JSON: {e}") from None
    if type(header) is not dict or set(header) != {"options", "names", "offsets", "dim"}:
        raise SnapshotError("the header is not an object of options, names, offsets and dim")
    return header


def _names(names: object, n: int) -> tuple[list[str], dict[str, int]]:
    """The header's names, and the position of each."""
    if type(names) is not list or len(names) != n or not set(map(type, names)) <= {str}:
        raise SnapshotError(f"the header's names are not {n} strings, one per tool of the core index")
    by_name = dict(zip(names, range(n), strict=True))
    if len(by_name) != n:
        raise SnapshotError("the header names two tools alike")
    return names, by_name


def _offsets(offsets: object, blob: bytes, n: int) -> list[int]:
    """The offsets of the ``n`` lines of ``blob``: ints from 0 to its length, each line
    non-empty and ending with a newline where the next begins."""
    if type(offsets) is not list or len(offsets) != n + 1 or set(map(type, offsets)) != {int}:
        raise SnapshotError(f"the header's offsets are not {n + 1} integers")
    if offsets[0] != 0 or offsets[-1] != len(blob) or min(offsets) < 0 or max(offsets) > len(blob):
        raise SnapshotError("the header's offsets do not span the tools section")
    cut = np.array(offsets, dtype=np.int64)  # each in [0, len(blob)]: no overflow
    if not (np.diff(cut) > 0).all() or not (np.frombuffer(blob, np.uint8)[cut[1:] - 1] == _NEWLINE).all():
        raise SnapshotError("the header's offsets do not cut the tools section at its line ends")
    return offsets


def _names_in_lines(names: list[str], blob: bytes, offsets: list[int]) -> None:
    """Each line holds the ``"name": ...`` member the header's name gives it (in the form
    :meth:`Tool.to_json` writes). This is a search, not a parse: a crafted line can hold the
    member elsewhere too, which :class:`LazyTools` catches when it parses the line."""
    bad = _core.line_without_name(blob, offsets, names)
    if bad is not None:
        raise SnapshotError(f"tool #{bad} is named {names[bad]!r} in the header but not in its line")


def _number(value: object) -> bool:
    return type(value) in (int, float)


def _same_f32(value: object, stored: float) -> bool:
    """True when ``value`` is a number that rounds to the core's float32 ``stored``."""
    try:
        return _number(value) and struct.unpack("<f", struct.pack("<f", value))[0] == stored
    except OverflowError:
        return False


def _options(options: object, core: _core.Index) -> Options:
    if type(options) is not dict or set(options) != {"alpha", "depth", "statistics", "scoring"}:
        raise SnapshotError("the options are not exactly alpha, depth, statistics and scoring")
    alpha, depth, statistics, scoring = (options[k] for k in ("alpha", "depth", "statistics", "scoring"))
    if not _number(alpha) or not 0.0 <= alpha <= 1.0:
        raise SnapshotError(f"option alpha must be a number in [0, 1], not {alpha!r}")
    if type(depth) is not int or depth < 0:
        raise SnapshotError(f"option depth must be an int >= 0, not {depth!r}")
    if type(statistics) is not str or statistics not in ("shared", "caller"):
        raise SnapshotError(f"option statistics must be 'shared' or 'caller', not {statistics!r}")
    if type(scoring) is not dict or set(scoring) != {"weights", "b", "k1"}:
        raise SnapshotError("option scoring is not exactly weights, b and k1")
    weights, bs, k1 = scoring["weights"], scoring["b"], scoring["k1"]
    fields = core.field_params
    if type(weights) is not list or type(bs) is not list or not len(weights) == len(bs) == len(fields):
        raise SnapshotError(f"option scoring must give {len(fields)} field weights and b values")
    same = _same_f32(k1, core.k1) and all(
        _same_f32(w, weight) and _same_f32(b, b_core)
        for w, b, (weight, b_core) in zip(weights, bs, fields, strict=True)
    )
    if not same:
        raise SnapshotError("option scoring disagrees with the core index's parameters")
    return Options(
        alpha=float(alpha), depth=depth, statistics=statistics, scoring=Scoring(weights=weights, b=bs, k1=k1)
    )


def _vectors(dim: object, raw: bytes, n: int, *, decode: bool) -> np.ndarray | None:
    """The ``n`` x ``dim`` tool vectors (``None`` for ``dim`` 0, or when not ``decode``d)."""
    if type(dim) is not int or dim < 0 or len(raw) != n * dim * 4:
        raise SnapshotError(f"dim {dim!r} does not match a vector section of {len(raw)} bytes for {n} tools")
    if not dim or not decode:
        return None
    vectors = np.frombuffer(raw, dtype="<f4").reshape(n, dim)
    if not np.isfinite(vectors).all() or not vectors.any(axis=1).all():
        raise SnapshotError("a tool vector is NaN, infinite or all zero")
    return vectors
