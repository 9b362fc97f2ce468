"""Index files: round trips, atomic writes, and refusal of anything that is not a good snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import toolsift as ts
from helpers import AGENT
from toolsift import _core
from toolsift.errors import SnapshotError

QUERIES = ["refund the payment of this order", "where is my order shipping status", "delete account", ""]


def answers(idx: ts.Index) -> str:
    out = []
    for q in QUERIES:
        out.append([(h.tool.name, h.score) for h in idx.search(q, k=10, caller=AGENT)])
        out.append(idx.select(q, AGENT, budget=400).to_openai())
    return json.dumps(out)


def test_a_saved_index_loads_and_answers_byte_identically(support: ts.Index, tmp_path: Path) -> None:
    path = tmp_path / "support.tsidx"
    support.save(path)
    loaded = ts.Index.load(path)
    assert answers(loaded) == answers(support)
    assert loaded.names == support.names and loaded.get("order_status", AGENT) == support.get("order_status", AGENT)
    assert [t.name for t in loaded._tools] == support.names


@pytest.mark.parametrize("statistics", ["shared", "caller"])
def test_a_loaded_index_keeps_its_prefix_weight(tmp_path: Path, statistics: str) -> None:
    tools = [ts.Tool("multiply", "Multiplies two integers"), ts.Tool("add", "Adds two integers")]
    for weight in (0.0, 0.25, 1.0):
        built = ts.Index(tools, prefix_weight=weight, statistics=statistics)
        built.save(tmp_path / "i.tsidx")
        loaded = ts.Index.load(tmp_path / "i.tsidx")
        want = [(h.tool.name, h.score) for h in built.search("multiplication of integers")]
        assert [(h.tool.name, h.score) for h in loaded.search("multiplication of integers")] == want
        assert [h.tool.name for h in loaded.search("multiplication")] == ([] if weight == 0 else ["multiply"])


def test_saving_replaces_the_file_atomically_and_leaves_no_temporary_files(support: ts.Index, tmp_path: Path) -> None:
    path = tmp_path / "idx.tsidx"
    path.write_bytes(b"old contents")
    support.save(path)
    ts.Index.load(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx.tsidx"]


def test_a_hybrid_index_keeps_its_vectors(tmp_path: Path) -> None:
    from test_dense import TOOLS, ConceptEmbedder

    idx = ts.Index(TOOLS, embedder=ConceptEmbedder())
    idx.save(tmp_path / "h.tsidx")
    back = ts.Index.load(tmp_path / "h.tsidx", embedder=ConceptEmbedder())
    assert back.search("acquire something", k=3) == idx.search("acquire something", k=3)
    assert ts.Index.load(tmp_path / "h.tsidx").search("acquire something") == []  # no embedder: lexical only


def corruptions(good: bytes) -> dict[str, bytes]:
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0x20
    future = bytearray(good)
    future[8] = 99
    return {
        "empty": b"",
        "foreign": b"\x89PNG\r\n\x1a\n" + good[8:],
        "future": bytes(future),
        "truncated": good[:-7],
        "padded": good + b"\0",
        "flipped": bytes(flipped),
    }


def test_truncated_corrupted_foreign_and_future_files_are_refused(support: ts.Index, tmp_path: Path) -> None:
    path = tmp_path / "good.tsidx"
    support.save(path)
    for name, data in corruptions(path.read_bytes()).items():
        bad = tmp_path / f"{name}.tsidx"
        bad.write_bytes(data)
        with pytest.raises(SnapshotError):
            ts.Index.load(bad)
    with pytest.raises(SnapshotError, match="cannot read"):
        ts.Index.load(tmp_path / "missing.tsidx")
    assert answers(support) == answers(ts.Index.load(path))  # the index in memory is untouched


def test_the_core_refuses_damaged_snapshots_with_a_typed_error(support: ts.Index) -> None:
    good = support._core.to_bytes()
    for data in (b"", b"TSIFTIDX", good[:-1], good[:20] + bytes([good[20] ^ 1]) + good[21:]):
        with pytest.raises(SnapshotError):
            _core.Index.from_bytes(data)
    assert isinstance(SnapshotError("x"), ValueError)
