"""Index files: the catalog, the core index snapshot and the tool vectors in one checked file.

Layout: ``TOOLSIFT``, a format version (u32), the lengths (u64) of five sections, the CRC-32 of
the header, lines and vector sections, then the sections: a JSON header (options and tool
names), the lines table (where each tool's line starts, as little-endian u64s, one more than
the tools, then the CRC-32 of each line as u32s), the tools as JSON Lines in toolsift's own form,
the core index snapshot (versioned and CRC-checked by the core) and the tool vectors (raw
float32, possibly empty). Writes go to a temporary file that replaces the target only once
complete, so a crash never leaves a half-written index.

Loading reads and checks everything but the tools section, which stays on disk: a tool's line is
read, checked against its CRC and parsed only when that tool is first needed, so a large index
loads in about the time it takes to read its core and keeps only the tools it used in memory.
The loaded index holds the file open; a file replaced by a later save (a rename) keeps serving
the version that was loaded, and one changed in place is refused tool by tool.
"""

from __future__ import annotations

import json
import os
import struct
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict, overload

import numpy as np

from . import _core
from ._atomic import write_atomic
from .callers import WITHHELD
from .errors import InvalidParameterError, SnapshotError, ToolsiftError
from .query import check_text
from .registry import Tool, json_lines
from .text import FIELDS

MAGIC = b"TOOLSIFT"
FORMAT = 4
_HEAD = struct.Struct("<8sI5QI")


class LazyTools(Sequence[Tool]):
    """Tools of a loaded index, each read from its line in the file and parsed on first use.

    A tool is checked when it is read, before anyone sees it: its line must have the CRC-32 the
    lines table gives it, hold the name the header gives it, and the permissions, core flag and
    explicit ``cost_tokens`` that the core index enforces at its position. A line that disagrees
    (or a file cut short since it was loaded) raises :class:`~toolsift.errors.SnapshotError`,
    then and on every later use.
    """

    def __init__(self, names: list[str], file: _File, lines: _Lines, core: _core.Index) -> None:
        self.names, self._file, self._lines, self._core = names, file, lines, core
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
        start, end, crc = self._lines.line(i)
        line = self._file.read(start, end - start)
        if len(line) != end - start or _core.crc32(line) != crc or not line.endswith(b"\n"):
            raise SnapshotError(
                f"{self._file.path}: tool #{i} of the index file is corrupted (changed since it was loaded?)"
            )
        try:
            tool = Tool.from_dict(json.loads(line), position=i)
        except (ValueError, RecursionError, ToolsiftError) as e:
            raise SnapshotError(
                f"{self._file.path}: tool #{i} of the index file cannot be read ({type(e).__name__})"
            ) from None
        problem = self._disagreement(i, tool)
        if problem:
            raise SnapshotError(f"{self._file.path}: tool #{i} of the index file: {problem}")
        return tool

    def _disagreement(self, i: int, tool: Tool) -> str | None:
        """How tool ``i``'s line disagrees with the header and the core, if it does."""
        core = self._core  # WITHHELD is added by Index(scan="withhold"): indexed, never emitted
        if tool.name != self.names[i]:
            return "its line holds another name than the header's"
        if sorted(p for p in core.permissions(i) if p != WITHHELD) != list(tool.permissions):
            return "its line lists other permissions than the core index enforces"
        if core.is_core(i) != tool.core:
            return "its line and the core index disagree on whether it is a core tool"
        if tool.cost_tokens is not None and tool.cost_tokens != core.cost(i):
            return "its line gives another cost_tokens than the core index"
        return None


class _File:
    """The tools section of an open index file, read at an offset; the file is closed when this
    object is collected."""

    def __init__(self, fd: int, base: int, path: str) -> None:
        self._fd, self._base, self._lock, self.path = fd, base, threading.Lock(), path
        weakref.finalize(self, os.close, fd)

    def read(self, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes from ``offset`` of the tools section (fewer at the file's end)."""
        try:
            if hasattr(os, "pread"):
                return os.pread(self._fd, size, self._base + offset)
            with self._lock:  # no pread (Windows): seek and read as one step
                os.lseek(self._fd, self._base + offset, os.SEEK_SET)
                return os.read(self._fd, size)
        except OSError as e:
            raise SnapshotError(f"{self.path}: the index file cannot be read any more: {e.strerror}") from None


class _Lines:
    """Where each tool's line is in the tools section, and its CRC-32."""

    def __init__(self, starts: np.ndarray, crcs: np.ndarray) -> None:
        self._starts, self._crcs = starts, crcs

    def line(self, i: int) -> tuple[int, int, int]:
        """``(start, end, crc)`` of line ``i``."""
        return int(self._starts[i]), int(self._starts[i + 1]), int(self._crcs[i])


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
    pieces, starts, crcs = [], [0], []
    for piece, ends in json_lines(tools):
        base = starts[-1]
        starts.extend(base + end for end in ends[1:])
        crcs.append(_core.crc32_each(piece, ends))
        pieces.append(piece)
    lines_b = np.asarray(starts, dtype="<u8").tobytes() + b"".join(crcs)
    vec = b"" if vectors is None else np.ascontiguousarray(vectors, dtype="<f4").tobytes()
    dim = 0 if vectors is None else int(vectors.shape[1])
    header = {"options": options, "names": [t.name for t in tools], "dim": dim}
    head_b = json.dumps(header).encode()
    crc = _core.crc32(vec, _core.crc32(lines_b, _core.crc32(head_b)))
    head = _HEAD.pack(MAGIC, FORMAT, len(head_b), len(lines_b), starts[-1], len(core), len(vec), crc)
    write_atomic(path, [head, head_b, lines_b, *pieces, core, vec])


def load(path: str | Path, *, vectors: bool = True) -> tuple[Positions, _core.Index, np.ndarray | None, Options]:
    """``(tools by name, core index, vectors, options)`` of an index file (the tools themselves,
    in registry order, are ``positions.tools``).

    Refused with :class:`~toolsift.errors.SnapshotError` before anything is used: a bad magic,
    format, length or checksum; a header that is not exactly ``options``, ``names`` and ``dim``;
    names that are not one distinct string per tool of the core index; a lines table that does
    not cut the tools section into one non-empty line per tool, from 0 to its end; options of
    the wrong type or range, missing or unknown, or scoring parameters other than the core's; a
    vector section that is not ``dim`` finite float32 values per tool. What needs a tool's line
    (its CRC, its name against the header's, its permissions, core flag and cost against the
    core's) is checked when that tool is first used (:class:`LazyTools`), so loading takes about
    the time it takes to read everything but the tools. With ``vectors=False`` the vector
    section is only checksummed, not decoded.
    """
    fd, (header_b, lines_b, core_b, vec_b), tools_at, crc = _sections(path)
    try:
        if _core.crc32(vec_b, _core.crc32(lines_b, _core.crc32(header_b))) != crc:
            raise SnapshotError(f"{path} is corrupted (checksum mismatch)")
        try:
            core = _core.Index.from_bytes(core_b)
            header = _header(header_b)
            names, by_name = _names(header["names"], len(core))
            lines = _lines(lines_b, tools_at[1], len(names))
            options = _options(header["options"], core, by_name)
            kept = _vectors(header["dim"], vec_b, len(names), decode=vectors)
        except SnapshotError as e:
            raise SnapshotError(f"{path}: {e}") from None
    except BaseException:
        os.close(fd)
        raise
    tools = LazyTools(names, _File(fd, tools_at[0], str(path)), lines, core)
    return Positions(tools, by_name), core, kept, options


def _sections(path: str | Path) -> tuple[int, tuple[bytes, bytes, bytes, bytes], tuple[int, int], int]:
    """An open descriptor of the index file; its header, lines, core and vector sections, each
    read into its own bytes; where its tools section starts and how long it is; and the
    checksum its head gives the sections it covers."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise SnapshotError(f"cannot read {path}: {e.strerror}") from None
    try:
        with os.fdopen(os.dup(fd), "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(_HEAD.size)
            if len(head) < _HEAD.size or not head.startswith(MAGIC):
                raise SnapshotError(f"{path} is not a toolsift index file")
            _, fmt, *lengths, crc = _HEAD.unpack(head)
            if fmt != FORMAT:
                raise SnapshotError(
                    f"{path} has index format {fmt}; this toolsift reads format {FORMAT} "
                    "(rebuild it with `toolsift index` or Index.save)"
                )
            if _HEAD.size + sum(lengths) != size:
                raise SnapshotError(f"{path} is truncated or has trailing data")
            header_len, lines_len, tools_len, core_len, vec_len = lengths
            header_b, lines_b = f.read(header_len), f.read(lines_len)
            tools_at = _HEAD.size + header_len + lines_len
            f.seek(tools_len, os.SEEK_CUR)
            core_b, vec_b = f.read(core_len), f.read(vec_len)
    except OSError as e:
        os.close(fd)
        raise SnapshotError(f"cannot read {path}: {e.strerror}") from None
    except BaseException:
        os.close(fd)
        raise
    if [len(header_b), len(lines_b), len(core_b), len(vec_b)] != [header_len, lines_len, core_len, vec_len]:
        os.close(fd)
        raise SnapshotError(f"{path} is truncated or has trailing data")  # changed while read
    return fd, (header_b, lines_b, core_b, vec_b), (tools_at, tools_len), crc


class Options(TypedDict):
    """The index options an index file carries (checked by :func:`load`)."""

    alpha: float
    depth: int
    statistics: str
    scoring: Scoring
    min_evidence: float | None
    intents: bool
    learned: dict[str, str]


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
    if type(header) is not dict or set(header) != {"options", "names", "dim"}:
        raise SnapshotError("the header is not an object of options, names and dim")
    return header


def _names(names: object, n: int) -> tuple[list[str], dict[str, int]]:
    """The header's names, and the position of each."""
    if type(names) is not list or len(names) != n or not set(map(type, names)) <= {str}:
        raise SnapshotError(f"the header's names are not {n} strings, one per tool of the core index")
    try:
        "".join(names).encode()
    except UnicodeEncodeError:  # a lone surrogate, as JSON can spell it
        raise SnapshotError("the header's names are not all Unicode text") from None
    by_name = dict(zip(names, range(n), strict=True))
    if len(by_name) != n:
        raise SnapshotError("the header names two tools alike")
    return names, by_name


def _lines(raw: bytes, size: int, n: int) -> _Lines:
    """The lines table of ``n`` tools in a tools section of ``size`` bytes: ``n + 1`` starts
    from 0 to ``size``, each line non-empty, then ``n`` CRCs."""
    if len(raw) != 12 * n + 8:
        raise SnapshotError(f"the lines table is {len(raw)} bytes, not {12 * n + 8} for {n} tools")
    starts = np.frombuffer(raw, dtype="<u8", count=n + 1)
    if int(starts[0]) != 0 or int(starts[-1]) != size or not (np.diff(starts.astype(np.int64)) > 0).all():
        raise SnapshotError("the lines table does not cut the tools section into one line per tool")
    return _Lines(starts, np.frombuffer(raw, dtype="<u4", offset=8 * (n + 1)))


def _number(value: object) -> bool:
    return type(value) in (int, float)


def _same_f32(value: object, stored: float) -> bool:
    """True when ``value`` is a number that rounds to the core's float32 ``stored``."""
    try:
        return _number(value) and struct.unpack("<f", struct.pack("<f", value))[0] == stored
    except OverflowError:
        return False


def _options(options: object, core: _core.Index, by_name: Mapping[str, int]) -> Options:
    names = ("alpha", "depth", "statistics", "scoring", "min_evidence", "intents", "learned")
    if type(options) is not dict or set(options) != set(names):
        raise SnapshotError(f"the options are not exactly {', '.join(names)}")
    alpha, depth, statistics, scoring, min_evidence, intents, learned = (options[k] for k in names)
    if type(learned) is not dict or not all(type(k) is str and type(v) is str and v for k, v in learned.items()):
        raise SnapshotError("option learned must map tool names to non-empty texts")
    for tool, text in learned.items():  # a lone surrogate: the core reads UTF-8 only
        try:
            check_text(f"option learned's text for {tool!r}", text)
        except InvalidParameterError as e:
            raise SnapshotError(str(e)) from None
    unknown = next((k for k in learned if k not in by_name), None)
    if unknown is not None:
        raise SnapshotError(f"option learned names the tool {unknown!r}, which the file does not hold")
    if type(intents) is not bool:
        raise SnapshotError(f"option intents must be true or false, not {intents!r}")
    if min_evidence is not None and (not _number(min_evidence) or not 0.0 <= min_evidence < float("inf")):
        raise SnapshotError(f"option min_evidence must be a number >= 0 or null, not {min_evidence!r}")
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
    if len(fields) != len(FIELDS):
        raise SnapshotError(f"the core index has {len(fields)} fields, not {len(FIELDS)}")
    if type(weights) is not list or type(bs) is not list or not len(weights) == len(bs) == len(fields):
        raise SnapshotError(f"option scoring must give {len(fields)} field weights and b values")
    same = _same_f32(k1, core.k1) and all(
        _same_f32(w, weight) and _same_f32(b, b_core)
        for w, b, (weight, b_core) in zip(weights, bs, fields, strict=True)
    )
    if not same:
        raise SnapshotError("option scoring disagrees with the core index's parameters")
    return Options(
        alpha=float(alpha),
        depth=depth,
        statistics=statistics,
        scoring=Scoring(weights=weights, b=bs, k1=k1),
        min_evidence=None if min_evidence is None else float(min_evidence),
        intents=intents,
        learned=learned,
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
