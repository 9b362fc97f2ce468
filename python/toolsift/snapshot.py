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

import itertools
import json
import struct
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np

from ._atomic import write_atomic
from .errors import SnapshotError, ToolsiftError
from .registry import Tool

MAGIC = b"TOOLSIFT"
FORMAT = 1
_HEAD = struct.Struct("<8sI4QI")


class LazyTools(Sequence[Tool]):
    """Tools of a loaded index, each parsed from its JSON line on first use."""

    def __init__(self, names: list[str], blob: bytes, offsets: list[int]) -> None:
        self.names, self._blob, self._offsets = names, blob, offsets
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
            line = self._blob[self._offsets[i] : self._offsets[i + 1]]
            try:
                tool = self._made[i] = Tool.from_dict(json.loads(line), position=i)
            except (ValueError, ToolsiftError) as e:
                raise SnapshotError(f"tool #{i} of the index file cannot be read: {e}") from None
        return tool

    def __iter__(self) -> Iterator[Tool]:
        return (self[i] for i in range(len(self)))


def save(
    path: str | Path, tools: Sequence[Tool], core: bytes, vectors: np.ndarray | None, options: dict[str, Any]
) -> None:
    """Writes an index file atomically (see :func:`toolsift._atomic.write_atomic`)."""
    lines = [t.to_json().encode() + b"\n" for t in tools]
    offsets = np.cumsum([0, *map(len, lines)]).tolist()
    vec = b"" if vectors is None else np.ascontiguousarray(vectors, dtype="<f4").tobytes()
    dim = 0 if vectors is None else int(vectors.shape[1])
    header = {"options": options, "names": [t.name for t in tools], "offsets": offsets, "dim": dim}
    sections = [json.dumps(header).encode(), b"".join(lines), core, vec]
    crc = 0
    for s in (sections[0], sections[1], sections[3]):
        crc = zlib.crc32(s, crc)
    head = _HEAD.pack(MAGIC, FORMAT, *map(len, sections), crc)
    write_atomic(path, [head, *sections])


def load(path: str | Path) -> tuple[LazyTools, bytes, np.ndarray | None, dict[str, Any]]:
    """``(tools, core snapshot, vectors, options)`` of an index file, every check passed."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise SnapshotError(f"cannot read {path}: {e.strerror}") from None
    if len(data) < _HEAD.size or not data.startswith(MAGIC):
        raise SnapshotError(f"{path} is not a toolsift index file")
    _, fmt, *lengths, crc = _HEAD.unpack_from(data)
    if fmt != FORMAT:
        raise SnapshotError(f"{path} has index format {fmt}; this toolsift reads format {FORMAT}")
    if _HEAD.size + sum(lengths) != len(data):
        raise SnapshotError(f"{path} is truncated or has trailing data")
    body = memoryview(data)[_HEAD.size :]
    cuts = np.cumsum([0, *lengths]).tolist()
    header_b, tools_b, core_b, vec_b = (body[a:b] for a, b in itertools.pairwise(cuts))
    if zlib.crc32(vec_b, zlib.crc32(tools_b, zlib.crc32(header_b))) != crc:
        raise SnapshotError(f"{path} is corrupted (checksum mismatch)")
    header = json.loads(bytes(header_b))
    names, offsets, dim = header["names"], header["offsets"], header["dim"]
    vectors = np.frombuffer(vec_b, dtype="<f4").reshape(-1, dim) if dim else None
    return LazyTools(names, bytes(tools_b), offsets), bytes(core_b), vectors, header["options"]
