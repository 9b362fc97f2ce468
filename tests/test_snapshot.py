"""Index files: round trips, atomic writes, and refusal of anything that is not a good snapshot."""

from __future__ import annotations

import itertools
import json
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

import toolsift as ts
from helpers import AGENT
from toolsift import _core, snapshot
from toolsift.errors import InvalidParameterError, SnapshotError

QUERIES = ["refund the payment of this order", "where is my order shipping status", "delete account", ""]


def answers(idx: ts.Index) -> str:
    out = []
    for q in QUERIES:
        out.append([(h.tool.name, h.score) for h in idx.search(q, k=10, caller=AGENT)])
        out.append(idx.select(q, caller=AGENT, budget_tokens=400).to_openai())
    return json.dumps(out)


def test_a_saved_index_loads_and_answers_byte_identically(support: ts.Index, tmp_path: Path) -> None:
    path = tmp_path / "support.tsidx"
    support.save(path)
    loaded = ts.Index.load(path)
    assert answers(loaded) == answers(support)
    assert loaded.names == support.names and loaded.get("order_status", caller=AGENT) == support.get(
        "order_status", caller=AGENT
    )
    assert [t.name for t in loaded._tools] == support.names


def test_a_saved_tool_keeps_its_keys_in_order_so_prompts_stay_byte_identical(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
        "required": ["to"],
    }
    tool = ts.Tool("send_mail", "Send an e-mail", schema, annotations={"title": "Mail", "destructiveHint": False})
    built = ts.Index([tool])
    built.save(tmp_path / "mail.tsidx")
    ts.Catalog([tool]).save(tmp_path / "mail.jsonl")
    for loaded in (ts.Index.load(tmp_path / "mail.tsidx"), ts.Index(ts.Catalog.from_file(tmp_path / "mail.jsonl"))):
        for emit in ("to_openai", "to_mcp", "to_anthropic"):
            assert json.dumps(getattr(loaded.select("mail"), emit)()) == json.dumps(
                getattr(built.select("mail"), emit)()
            )
        assert list(loaded.get("send_mail").parameters["properties"]) == ["to", "body"]


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


def test_an_index_loaded_with_another_embedder_is_refused_at_load(tmp_path: Path) -> None:
    """Before, another size loaded and then failed every query; another model of the same size
    loaded and ranked by vectors unrelated to the queries'."""
    from test_dense import TOOLS, ConceptEmbedder

    class Other:  # the same size, another model
        def embed(self, texts: list[str]) -> np.ndarray:
            rows = [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(64) for t in texts]
            return np.array(rows, dtype=np.float32).reshape(len(texts), 64)

    class Wider(Other):
        def embed(self, texts: list[str]) -> np.ndarray:
            return np.tile(super().embed(texts), 2)

    ts.Index(TOOLS, embedder=ConceptEmbedder()).save(tmp_path / "h.tsidx")
    assert ConceptEmbedder().embed(["x"]).shape[1] == Other().embed(["x"]).shape[1]
    with pytest.raises(InvalidParameterError, match="does not give the vectors the index was built with"):
        ts.Index.load(tmp_path / "h.tsidx", embedder=Other())
    with pytest.raises(InvalidParameterError, match="the embedder gives 128-number vectors, the index holds 64"):
        ts.Index.load(tmp_path / "h.tsidx", embedder=Wider())


def corruptions(good: bytes) -> dict[str, bytes]:
    flipped, flipped_core = bytearray(good), bytearray(good)
    flipped[snapshot._HEAD.size + 3] ^= 0x20  # in the header (a flip in a tool line: below)
    flipped_core[-3] ^= 0x20  # in the core, which has no vectors after it here
    future = bytearray(good)
    future[8] = 99
    return {
        "empty": b"",
        "foreign": b"\x89PNG\r\n\x1a\n" + good[8:],
        "future": bytes(future),
        "truncated": good[:-7],
        "padded": good + b"\0",
        "flipped": bytes(flipped),
        "flipped core": bytes(flipped_core),
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


def test_a_file_of_an_earlier_format_is_refused_with_a_note_to_rebuild_it(support: ts.Index, tmp_path: Path) -> None:
    # format 3 files hold impacts scored with the old mean field length: loading one would rank
    # differently from the same catalog built today (and from its own per-caller rebuilds)
    path = tmp_path / "old.tsidx"
    support.save(path)
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, len(snapshot.MAGIC), snapshot.FORMAT - 1)
    path.write_bytes(bytes(data))
    with pytest.raises(SnapshotError, match=f"format {snapshot.FORMAT - 1}.*rebuild"):
        ts.Index.load(path)


def test_the_core_refuses_damaged_snapshots_with_a_typed_error(support: ts.Index) -> None:
    good = support._core.to_bytes()
    for data in (b"", b"TSIFTIDX", good[:-1], good[:20] + bytes([good[20] ^ 1]) + good[21:]):
        with pytest.raises(SnapshotError):
            _core.Index.from_bytes(data)
    assert isinstance(SnapshotError("x"), ValueError)


# Forgeries: files edited by hand and resealed with every checksum recomputed exactly as `save`
# computes them, so only the cross-checks between the header, the tool lines and the core can
# refuse them.


class Parts(NamedTuple):
    header: dict[str, Any]
    lines: list[bytes]
    core: bytes
    vectors: bytes


def parts(path: Path) -> Parts:
    data = path.read_bytes()
    _, _, *lengths, _ = snapshot._HEAD.unpack_from(data)
    cuts = np.cumsum([snapshot._HEAD.size, *lengths]).tolist()
    header, _, tools, core, vectors = (data[a:b] for a, b in itertools.pairwise(cuts))
    return Parts(json.loads(header), tools.splitlines(keepends=True), core, vectors)


def reseal(path: Path, p: Parts, *, starts: list[int] | None = None) -> Path:
    """Writes ``p`` back with valid checksums; the lines table follows the lines unless given
    other ``starts`` (whose pieces then get their CRCs, as a forger would give them)."""
    tools = b"".join(p.lines)
    if starts is None:
        starts = [0, *itertools.accumulate(map(len, p.lines))]
    crcs = [zlib.crc32(tools[a:b]) for a, b in itertools.pairwise(starts)]
    table = struct.pack(f"<{len(starts)}Q{len(crcs)}I", *starts, *crcs)
    sections = [json.dumps(p.header).encode(), table, tools, p.core, p.vectors]
    crc = 0
    for s in (sections[0], sections[1], sections[4]):
        crc = zlib.crc32(s, crc)
    path.write_bytes(
        snapshot._HEAD.pack(snapshot.MAGIC, snapshot.FORMAT, *map(len, sections), crc) + b"".join(sections)
    )
    return path


def edit_line(p: Parts, i: int, **changes: Any) -> Parts:
    tool = json.loads(p.lines[i])
    tool.update(changes)
    lines = list(p.lines)
    lines[i] = json.dumps(tool, ensure_ascii=False, sort_keys=True).encode() + b"\n"
    return p._replace(lines=lines)


def with_options(p: Parts, **changes: Any) -> Parts:
    options = {**p.header["options"], **changes}
    return p._replace(header={**p.header, "options": {k: v for k, v in options.items() if v is not DROP}})


class _Drop:
    def __repr__(self) -> str:
        return "DROP"


DROP = _Drop()  # an option left out


@pytest.fixture
def saved(support: ts.Index, tmp_path: Path) -> Path:
    path = tmp_path / "support.tsidx"
    support.save(path)
    return path


def test_a_resealed_copy_of_a_good_file_still_loads(saved: Path, support: ts.Index) -> None:
    # the forging helpers change nothing by themselves
    assert answers(ts.Index.load(reseal(saved, parts(saved)))) == answers(support)


def refused_when_used(index: ts.Index, positions: list[int]) -> None:
    """The tools at ``positions`` raise SnapshotError naming their position whenever they are
    reached; every other tool of the file still serves."""
    for i in range(len(index)):
        if i in positions:
            with pytest.raises(SnapshotError, match=f"tool #{i} "):
                index.tool(i)
        else:
            assert index.tool(i).name == index.names[i]
    with pytest.raises(SnapshotError):
        list(index._tools)


def test_swapped_names_in_the_header_are_refused_when_the_tools_are_used(saved: Path) -> None:
    p = parts(saved)
    names = list(p.header["names"])
    names[1], names[3] = names[3], names[1]  # lookup_account <-> issue_refund
    index = ts.Index.load(reseal(saved, p._replace(header={**p.header, "names": names})))
    refused_when_used(index, [1, 3])
    with pytest.raises(SnapshotError, match="another name"):
        index.get("issue_refund", caller=["billing.refund"])


def test_swapped_tool_lines_are_refused_when_the_tools_are_used(saved: Path) -> None:
    p = parts(saved)
    lines = list(p.lines)
    lines[1], lines[3] = lines[3], lines[1]
    refused_when_used(ts.Index.load(reseal(saved, p._replace(lines=lines))), [1, 3])


def test_a_header_name_that_is_not_unicode_text_is_refused(saved: Path) -> None:
    p = parts(saved)
    names = ["\ud800", *p.header["names"][1:]]  # a lone surrogate, as JSON can spell it
    with pytest.raises(SnapshotError, match="Unicode"):
        ts.Index.load(reseal(saved, p._replace(header={**p.header, "names": names})))


def test_a_repeated_name_in_the_header_is_refused(saved: Path) -> None:
    p = parts(saved)
    names = [*p.header["names"][:-1], p.header["names"][0]]
    with pytest.raises(SnapshotError, match="alike"):
        ts.Index.load(reseal(saved, p._replace(header={**p.header, "names": names})))


def refused_on_every_use(index: ts.Index, name: str, position: int) -> None:
    """Every way to reach the tool at ``position`` raises SnapshotError, naming only its position."""
    everyone = ["crm.read", "orders.read", "billing.refund", "admin"]
    uses = [
        lambda: index.tool(position),
        lambda: index.name(position),
        lambda: index.get(name, caller=everyone),
        lambda: index.allows(name, caller=everyone),
        lambda: index.search(name.replace("_", " "), k=10, caller=everyone),
        lambda: index.select(name.replace("_", " "), caller=everyone, budget_tokens=None).names,
        lambda: list(index._tools),
    ]
    for use in uses:
        with pytest.raises(SnapshotError, match=f"tool #{position}") as e:
            use()
        # raised on lookups too, whoever asks: it names no tool or permission
        assert not any(word in str(e.value) for word in [*everyone, "impostor", *index.names]), e.value


@pytest.mark.parametrize(
    ("position", "changes"),
    [
        (3, {"permissions": []}),  # issue_refund shown as public; the core requires billing.refund
        (4, {"permissions": ["admin"]}),  # refund_policy shown as admin-only; the core lets anyone use it
        (3, {"permissions": ["billing.refund", "admin"]}),
        (0, {"core": False}),  # search_help
        (2, {"core": True}),
        (2, {"cost_tokens": 1}),
    ],
)
def test_a_tool_line_that_disagrees_with_the_core_is_refused_before_it_is_used(
    saved: Path, position: int, changes: dict[str, Any]
) -> None:
    index = ts.Index.load(reseal(saved, edit_line(parts(saved), position, **changes)))
    refused_on_every_use(index, index.names[position], position)


def test_a_name_borrowed_by_a_crafted_line_is_refused_when_looked_up(saved: Path) -> None:
    # line 5 really names itself "refund_policy" (the last member wins) but also holds the
    # header's "delete_account", so the search for the name at load time passes; the parse
    # catches it before the header's name can answer with this line's permissions
    p = parts(saved)
    lines = list(p.lines)
    lines[5] = lines[5].replace(b'"name": "delete_account"', b'"name": "delete_account", "name": "impostor"')
    index = ts.Index.load(reseal(saved, p._replace(lines=lines)))
    refused_on_every_use(index, "delete_account", 5)


@pytest.mark.parametrize(
    "changes",
    [
        {"statistics": DROP},
        {"statistics": "per-tenant"},
        {"statistics": None},
        {"statistics": ["caller"]},
        {"alpha": "0.5"},
        {"alpha": True},
        {"alpha": 1.5},
        {"alpha": DROP},
        {"depth": 100.0},
        {"depth": "100"},
        {"depth": -1},
        {"scoring": {"weights": [], "b": [], "k1": 0.9}},
        {"scoring": None},
        {"unknown": 1},
        {"learned": {"delete_account": "close \ud800"}},  # a lone surrogate: not text the core reads
    ],
    ids=repr,
)
def test_bad_options_are_refused(saved: Path, changes: dict[str, Any]) -> None:
    with pytest.raises(SnapshotError):
        ts.Index.load(reseal(saved, with_options(parts(saved), **changes)))


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: s.update(k1="0.9"),
        lambda s: s.update(k1=1.5),
        lambda s: s["weights"].__setitem__(0, "2.0"),
        lambda s: s["weights"].__setitem__(0, 7.0),
        lambda s: s["b"].pop(),
        lambda s: s.update(b=None),
    ],
)
def test_scoring_options_of_the_wrong_type_or_other_than_the_cores_are_refused(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None]
) -> None:
    path = tmp_path / "i.tsidx"
    ts.Index([ts.Tool("a", "refund"), ts.Tool("b", "order")], statistics="caller").save(path)
    p = parts(path)
    scoring = json.loads(json.dumps(p.header["options"]["scoring"]))
    edit(scoring)
    with pytest.raises(SnapshotError, match="scoring"):
        ts.Index.load(reseal(path, with_options(p, scoring=scoring)))


@pytest.mark.parametrize(
    "header",
    [[], "header", None, {"names": [], "offsets": [0], "dim": 0}, {"names": [], "dim": 0}],
    ids=repr,
)
def test_a_header_that_is_not_the_expected_object_is_refused(tmp_path: Path, header: object) -> None:
    path = tmp_path / "i.tsidx"
    ts.Index([]).save(path)
    with pytest.raises(SnapshotError, match="header"):
        ts.Index.load(reseal(path, parts(path)._replace(header=header)))  # type: ignore[arg-type]


def test_a_dim_that_does_not_match_the_vectors_is_refused(tmp_path: Path) -> None:
    from test_dense import TOOLS, ConceptEmbedder

    path = tmp_path / "h.tsidx"
    ts.Index(TOOLS, embedder=ConceptEmbedder()).save(path)
    p = parts(path)
    dim = p.header["dim"]
    for wrong in (dim + 1, dim - 1, 0, -dim, str(dim), float(dim)):
        with pytest.raises(SnapshotError, match="dim"):
            ts.Index.load(reseal(path, p._replace(header={**p.header, "dim": wrong})), embedder=ConceptEmbedder())
    nan = p._replace(vectors=struct.pack("<f", float("nan")) + p.vectors[4:])
    with pytest.raises(SnapshotError, match="NaN"):
        ts.Index.load(reseal(path, nan), embedder=ConceptEmbedder())


@pytest.mark.parametrize(
    "edit",
    [
        lambda o: o.__setitem__(0, 1),
        lambda o: o.__setitem__(-1, o[-1] - 1),
        lambda o: o.__setitem__(2, o[3]),  # an empty line
        lambda o: o.__setitem__(slice(2, 4), [o[3], o[2]]),  # out of order
        lambda o: o.__setitem__(2, 2**64 - 1),
        lambda o: o.append(o[-1]),
        lambda o: o.pop(3),
    ],
)
def test_an_edited_lines_table_is_refused(saved: Path, edit: Callable[[list[int]], None]) -> None:
    p = parts(saved)
    starts = [0, *itertools.accumulate(map(len, p.lines))]
    edit(starts)
    with pytest.raises(SnapshotError, match="lines table"):
        ts.Index.load(reseal(saved, p, starts=starts))


# moved back, tool #2's line starts with the newline of #1's: JSON whitespace, its tool unchanged
@pytest.mark.parametrize(("move", "refused"), [(1, [1, 2]), (-1, [1])])
def test_a_line_boundary_moved_is_refused_where_it_changes_a_tool(saved: Path, move: int, refused: list[int]) -> None:
    p = parts(saved)
    starts = [0, *itertools.accumulate(map(len, p.lines))]
    starts[2] += move
    refused_when_used(ts.Index.load(reseal(saved, p, starts=starts)), refused)


def test_a_flipped_byte_in_a_tool_line_is_refused_when_that_tool_is_used(saved: Path) -> None:
    data = bytearray(saved.read_bytes())
    table_at = snapshot._HEAD.size + snapshot._HEAD.unpack_from(data)[2]
    line_2 = table_at + snapshot._HEAD.unpack_from(data)[3] + len(b"".join(parts(saved).lines[:2]))
    data[line_2 + 20] ^= 0x01  # inside the description of tool #2; every checksum left as it was
    saved.write_bytes(bytes(data))
    refused_when_used(ts.Index.load(saved), [2])


def test_a_loaded_index_serves_its_version_when_the_file_is_replaced_or_cut(support: ts.Index, tmp_path: Path) -> None:
    path = tmp_path / "i.tsidx"
    support.save(path)
    loaded = ts.Index.load(path)
    ts.Index([ts.Tool("other", "another catalog")]).save(path)  # a save replaces the file whole
    assert answers(loaded) == answers(support)
    cut = tmp_path / "cut.tsidx"
    support.save(cut)
    early = ts.Index.load(cut)
    with open(cut, "r+b") as f:  # changed in place under the loaded index
        f.truncate(snapshot._HEAD.size + 10)
    with pytest.raises(SnapshotError, match="tool #0 "):
        early.tool(0)


def test_statistics_forged_from_caller_to_shared_are_overridden_by_the_loader(tmp_path: Path) -> None:
    # "shared" is a valid value: a forger who reseals the file cannot be told from an honest
    # save. The deployment decides instead: load(..., statistics="caller") isolates whatever the
    # file says.
    visible = [ts.Tool("refunds", "refund an order"), ts.Tool("orders", "list orders")]
    hidden = [ts.Tool(f"secret_{i}", "refund refund", permissions="admin") for i in range(20)]
    path = tmp_path / "i.tsidx"
    ts.Index(visible + hidden, statistics="caller").save(path)
    reseal(path, with_options(parts(path), statistics="shared"))
    alone = [h.score for h in ts.Index(visible).search("refund")]
    assert [h.score for h in ts.Index.load(path).search("refund")] != alone  # the forgery works...
    assert [h.score for h in ts.Index.load(path, statistics="caller").search("refund")] == alone  # ...not here
    with pytest.raises(ts.errors.InvalidParameterError):
        ts.Index.load(path, statistics="tenant")


def test_a_loaded_index_is_opened_like_a_built_one(tmp_path: Path, support: ts.Index) -> None:
    path = tmp_path / "support.tsidx"
    support.save(path)
    loaded = ts.Index.load(path)
    assert sorted(vars(loaded)) == sorted(vars(support))  # one construction path: Index._open
    assert {k: type(v) for k, v in vars(loaded).items() if k != "_tools" and k != "_positions"} == {
        k: type(v) for k, v in vars(support).items() if k != "_tools" and k != "_positions"
    }


@pytest.mark.parametrize("bad", ["nan", "set", "cycle"])
def test_a_schema_changed_into_something_not_json_is_refused_and_the_old_file_kept(tmp_path: Path, bad: str) -> None:
    """A schema changed after the tool was built to hold NaN was saved as bare NaN (the good
    file replaced by one that cannot be read back); a set or a cycle raised a raw TypeError or
    ValueError."""
    tool = ts.Tool("t", "demo", {"type": "object", "properties": {"x": {"type": "number"}}})
    index = ts.Index([tool, ts.Tool("u", "other")])
    saved, catalog = tmp_path / "i.tsidx", tmp_path / "c.jsonl"
    index.save(saved)
    ts.Catalog([tool]).save(catalog)
    before = saved.read_bytes(), catalog.read_bytes()
    x: Any = tool.parameters["properties"]["x"]
    x["default"] = {"nan": float("nan"), "set": {1, 2}, "cycle": x}[bad]
    for save in (index.save, ts.Catalog([tool]).save, lambda path: tool.to_json()):
        with pytest.raises(ts.errors.SchemaError) as e:
            save(saved if save is index.save else catalog)
        assert (e.value.tool, e.value.field) == ("t", "parameters")
    assert (saved.read_bytes(), catalog.read_bytes()) == before
    assert ts.Index.load(saved).tool(0).name == "t" and len(ts.Catalog.from_file(catalog)) == 1


def test_a_corrupted_core_section_or_tool_line_names_the_file(tmp_path: Path) -> None:
    """The core section's error (at load) and a tool line's (when the tool is first used) did
    not say which file."""
    path = tmp_path / "i.tsidx"
    ts.Index([ts.Tool("t", "refund order"), ts.Tool("u", "list orders")]).save(path)
    data = path.read_bytes()
    _, _, header, lines, tools, core, _, _ = snapshot._HEAD.unpack_from(data)
    tools_at = snapshot._HEAD.size + header + lines
    for what, at in (("core", tools_at + tools + core - 3), ("tool_line", tools_at + 5)):
        broken = bytearray(data)
        broken[at] ^= 0x01
        bad = tmp_path / f"{what}.tsidx"
        bad.write_bytes(bytes(broken))
        with pytest.raises(SnapshotError) as e:
            ts.Index.load(bad).tool(0)
        assert str(bad) in str(e.value), what


@pytest.mark.parametrize("path", [None, 3, b"index.tsidx", "a\x00b"])
def test_a_path_that_is_no_file_name_is_refused_with_a_typed_error(path: object) -> None:
    """os raised a raw TypeError (None, a number) or ValueError (a NUL character)."""
    index, catalog = ts.Index([ts.Tool("a", "b")]), ts.Catalog([ts.Tool("a", "b")])
    for use in (ts.Index.load, index.save, ts.Catalog.from_file, catalog.save):
        with pytest.raises(InvalidParameterError, match="path"):
            use(path)  # type: ignore[arg-type]
