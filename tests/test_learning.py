"""Learning from use: attribution, only-what-was-missed, scopes, ageing, persistence, replay."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import toolsift as ts
from toolsift.errors import InvalidParameterError, StoreFormatError
from toolsift.eval import Dataset, LabelledQuery, replay
from toolsift.eval.replay import split
from toolsift.learning import KEPT_ROWS, Learned, attribute, words

TOOLS = [
    ts.Tool("dns_lookup", "Look up the DNS records of a domain"),
    ts.Tool("tls_check", "Check the TLS certificate of a host and when it expires"),
    ts.Tool("sqs_send", "Send data to an SQS endpoint"),
    ts.Tool("sns_publish", "Publish a message to a topic"),
    ts.Tool("billing", "Read the invoices of an account", permissions=["finance"]),
]


def names(index: ts.Index, query: str, caller: object = None) -> list[str]:
    return [h.tool.name for h in index.search(query, k=5, caller=caller)]  # type: ignore[arg-type]


def test_a_request_for_several_tools_teaches_each_only_its_own_clause() -> None:
    index = ts.Index(TOOLS)
    request = "look up the DNS records of example.com, then check the certificate of the host"
    got = attribute(index, request, ["dns_lookup", "tls_check"])
    assert got == {
        "dns_lookup": "look up the DNS records of example.com",
        "tls_check": "then check the certificate of the host",
    }
    # one tool called: the whole request is its
    assert attribute(index, request, ["dns_lookup"]) == {"dns_lookup": request}
    # a tool the caller may not use, or that the index does not hold, learns nothing
    assert attribute(index, "read my invoices", ["billing", "nope"]) == {}
    assert attribute(index, "read my invoices", ["billing"], caller=["finance"]) == {"billing": "read my invoices"}


def test_a_clause_no_called_tool_matches_goes_to_the_one_left_without_a_clause() -> None:
    index = ts.Index(TOOLS)
    got = attribute(index, "check the TLS certificate; then enqueue the result", ["tls_check", "sqs_send"])
    assert got == {"tls_check": "check the TLS certificate;", "sqs_send": "then enqueue the result"}


def test_words_keep_what_the_tokenizer_indexes() -> None:
    assert words("Put THE message on the queue, queue 2024 a") == ["put", "message", "on", "queue"]


def test_a_tool_learns_only_what_the_index_did_not_already_rank_near_the_top() -> None:
    index = ts.Index(TOOLS)
    assert names(index, "send a message to a topic") == ["sns_publish", "sqs_send"]
    assert Learned().observe(index, "send a message to a topic", ["sqs_send"], scope="s") == {}  # second of 3
    assert Learned(known=1).observe(index, "send a message to a topic", ["sqs_send"], scope="s")
    learned = Learned(known=1)
    assert names(index, "put a message on the queue")[0] == "sns_publish"
    assert learned.observe(index, "publish a message", ["sns_publish"], scope="s") == {}  # already first
    taught = learned.observe(index, "put a message on the queue", ["sqs_send"], scope="s")
    assert taught == {"sqs_send": ["put", "message", "on", "queue"]}
    assert learned.texts("s") == {"sqs_send": "message on put queue"}
    after = index.with_learned(learned.texts("s"))
    assert names(index, "enqueue it on the queue") == []
    assert names(after, "enqueue it on the queue") == ["sqs_send"]
    assert index.learned == {} and after.learned == {"sqs_send": "message on put queue"}  # the original stays


def test_learning_stops_once_the_tool_ranks_first_for_the_phrasing() -> None:
    index, learned = ts.Index(TOOLS), Learned(known=1)
    rounds = 0
    while names(index, "put a message on the queue")[0] != "sqs_send":
        assert learned.observe(index, "put a message on the queue", ["sqs_send"], scope="s")
        index = index.with_learned(learned.texts("s"))
        rounds += 1
        assert rounds < 10
    assert learned.observe(index, "put a message on the queue", ["sqs_send"], scope="s") == {}


def test_a_phrasing_confirmed_again_and_again_overtakes_tools_whose_text_matches_it() -> None:
    """Each event adds weight, so a tool the requests keep calling gets there in the end even
    against tools whose authored text holds every word of the request (as on the AWS catalog:
    "upload a file to an S3 bucket" and s3__PutObject, "adds an object to a bucket")."""
    catalog = [
        ts.Tool("put_object", "Adds an object to a bucket"),
        ts.Tool("cache_report", "Report the files that failed to upload to the bucket"),
        ts.Tool("list_uploads", "List the multipart uploads of a file in a bucket"),
        ts.Tool("abort_upload", "Abort a multipart upload of a file to a bucket"),
        ts.Tool("attach_file", "Upload a file as an attachment to a bucket record"),
    ]
    request = "upload a file to the bucket"
    base = ts.Index(catalog)
    index, learned, rounds = base, Learned(), 0
    assert names(index, request)[-1] == "put_object"
    while "put_object" not in names(index, request)[:3]:  # as a Toolbox or gateway rebuilds
        assert learned.observe(index, request, ["put_object"], scope="s")
        index = base.with_learned(learned.texts("s", base))
        rounds += 1
        assert rounds <= 8
    assert learned.observe(index, request, ["put_object"], scope="s") == {}  # then it stops
    assert names(index, "adds an object")[0] == "put_object"


def test_learned_words_weigh_below_authored_ones() -> None:
    index = ts.Index(TOOLS).with_learned({"sqs_send": "publish topic"})
    assert names(index, "publish to a topic")[:2] == ["sns_publish", "sqs_send"]


def test_a_forbidden_tool_stays_invisible_whatever_it_learned() -> None:
    index = ts.Index(TOOLS).with_learned({"billing": "queue message invoices"})
    assert "billing" not in names(index, "queue message invoices")
    assert names(index, "queue message invoices", ["finance"])[0] == "billing"
    assert list(index.select("invoices").names) == []


def test_an_empty_learned_field_changes_nothing() -> None:
    plain, given = ts.Index(TOOLS), ts.Index(TOOLS, learned={"dns_lookup": ""})
    assert plain._core.to_bytes() == given._core.to_bytes()
    assert given.learned == {}


def test_bad_learned_texts_are_refused_naming_the_tool() -> None:
    with pytest.raises(InvalidParameterError, match="'ghost'"):
        ts.Index(TOOLS, learned={"ghost": "words"})
    with pytest.raises(InvalidParameterError, match="dns_lookup"):
        ts.Index(TOOLS).with_learned({"dns_lookup": 3})  # type: ignore[dict-item]
    with pytest.raises(InvalidParameterError):
        Learned(cap=0)


def test_scopes_keep_one_callers_words_from_anothers_ranking() -> None:
    learned = Learned(known=1)
    handlers = {t.name: (lambda args: "ok") for t in TOOLS}

    def box(caller: list[str] | None = None, scope: str | None = None) -> ts.Toolbox:
        scope = scope or ",".join(caller or [])  # each caller its own scope, unless given one
        return ts.Toolbox(
            ts.Catalog(TOOLS), ts.ToolTierOptions(), caller=caller, handlers=handlers, learned=learned, scope=scope
        )

    alice = box(["a"])
    alice.search_tools({"query": "put a message on the queue"})
    alice.call("call_tool", {"name": "sqs_send", "arguments": {}})
    alice.reset()  # the cache-safe boundary: learned from, index rebuilt
    assert alice.index.learned == {"sqs_send": "message on put queue"}
    assert [t.name for t in alice.search_tools({"query": "enqueue on the queue"})] == ["sqs_send"]
    bob = box(["b"])
    assert bob.index.learned == {} and bob.search_tools({"query": "enqueue on the queue"}) == []
    assert box(["a"]).index.learned == alice.index.learned  # a new toolbox of alice's starts with them
    # a shared scope pools on purpose
    one, two = box(["a"], "shared"), box(["b"], "shared")
    one.search_tools({"query": "put a message on the queue"})
    one.call("sqs_send", {})
    one.reset()
    assert box(["b"], "shared").index.learned == {"sqs_send": "message on put queue"}
    assert two.index.learned == {}  # until its own reset
    two.reset()
    assert two.index.learned == {"sqs_send": "message on put queue"}


def test_a_toolbox_that_learns_is_told_whose_words_they_are() -> None:
    """By default the scope was the caller's permissions: two tenants (or users) with the same
    permissions shared their learned words, and each ranked with the other's requests."""
    with pytest.raises(InvalidParameterError, match="needs scope="):
        ts.Toolbox(ts.Catalog(TOOLS), learned=Learned())
    assert ts.Toolbox(ts.Catalog(TOOLS), learned=Learned(), user="ann").scope == "ann"


def test_a_shared_scope_never_gives_a_caller_the_words_of_a_tool_it_may_not_use() -> None:
    """In a pooled scope, what a finance user asked of ``billing`` reached a public caller's index
    (``Index.learned``), and with shared statistics changed its scores and what its gate let by."""
    q, learned = "send data to the endpoint", Learned(known=1)
    gated = ts.Index(TOOLS, min_evidence=2.5)
    handlers = {t.name: (lambda args: "ok") for t in TOOLS}
    admin = ts.Toolbox(gated, caller=["finance"], handlers=handlers, learned=learned, scope="shared")
    public = ts.Toolbox(gated, handlers=handlers, learned=learned, scope="shared")
    before = [t.name for t in public.search_tools({"query": q})]
    for _ in range(5):  # the finance user asks for its invoices in these words
        admin.search_tools({"query": "send data to the endpoint invoices"})
        admin.call("billing", {})
        admin.reset()
    public.reset()
    assert "billing" in admin.index.learned and "billing" not in public.index.learned
    assert [t.name for t in public.search_tools({"query": q})] == before == ["sqs_send"]


def test_a_failed_call_teaches_nothing() -> None:
    def broken(args: object) -> object:
        raise RuntimeError("down")

    learned = Learned(known=1)
    box = ts.Toolbox(ts.Catalog(TOOLS), ts.ToolTierOptions(), handlers={"sqs_send": broken}, learned=learned, user="u")
    box.search_tools({"query": "put a message on the queue"})
    with pytest.raises(RuntimeError):
        box.call("sqs_send", {})
    box.reset()
    assert learned.texts(box.scope or "") == {}


@pytest.mark.parametrize("lookup", [{"query": "select:sns_publish"}, {"query": "", "group": "sns"}])
def test_calls_after_a_lookup_by_name_or_group_teach_no_earlier_request(lookup: dict[str, str]) -> None:
    """The calls after a search answer it, until the next search: one that ranks nothing (a tool
    loaded by name, a group browsed) closes the pending request without teaching it."""
    learned = Learned(known=0)
    handlers = {t.name: (lambda a: "ok") for t in TOOLS}
    box = ts.Toolbox(ts.Catalog(TOOLS), ts.ToolTierOptions(), handlers=handlers, learned=learned, scope="s")
    box.search_tools({"query": "look up the DNS records of example.com"})
    box.search_tools(lookup)
    box.call("call_tool", {"name": "sns_publish", "arguments": {}})
    box.reset()
    assert learned.texts("s") == {}
    box.search_tools({"query": "fan the alert out to subscribers"})  # a ranked request still teaches
    box.call("call_tool", {"name": "sns_publish", "arguments": {}})
    box.reset()
    assert set(learned.texts("s")) == {"sns_publish"}


def test_words_age_and_each_tool_keeps_its_heaviest() -> None:
    now = [0.0]
    learned = Learned(half_life_s=10.0, cap=2, clock=lambda: now[0])
    learned.add("s", {"t": ["old"]})
    now[0] = 15.0  # old weighs 0.35 now: forgotten
    learned.add("s", {"t": ["kept", "second", "third"]})
    learned.add("s", {"t": ["kept", "second"]})
    learned.add("s", {"t": ["kept"]})
    assert learned.weights("s") == {"t": {"kept": 3.0, "second": 2.0}}
    assert learned.texts("s") == {"t": "kept kept kept second second"}
    now[0] = 15.0 + 10 * 10.0
    assert learned.texts("s") == {}


def test_learned_words_survive_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "usage.db"
    first = Learned(db)
    first.add("s", {"sqs_send": ["queue"]})
    first.close()
    again = Learned(db)
    assert again.texts("s") == {"sqs_send": "queue"}
    again.forget("s")
    assert again.texts("s") == {}
    # a saved index keeps its learned texts
    path = tmp_path / "index.tsx"
    ts.Index(TOOLS).with_learned({"sqs_send": "queue"}).save(path)
    loaded = ts.Index.load(path)
    assert loaded.learned == {"sqs_send": "queue"} and names(loaded, "queue") == ["sqs_send"]
    assert ts.Index.load(path, statistics="caller").search("queue")[0].tool.name == "sqs_send"


def test_replay_scores_the_held_out_requests_with_and_without_what_was_learned() -> None:
    queries = [
        LabelledQuery(str(i), text, (tool,))
        for i, (text, tool) in enumerate(
            [
                ("put a message on the queue", "sqs_send"),
                ("when does the cert run out", "tls_check"),
                ("queue it", "sqs_send"),
                ("does my cert run out soon", "tls_check"),
            ]
        )
    ]
    dataset = Dataset("tiny", ts.Catalog(TOOLS), queries)
    result = replay(dataset, 0.5, learned=Learned(known=1, clock=lambda: 0.0))
    assert result.played == 2 and [q.id for q in result.scored.queries] == ["2", "3"]
    plain, taught = result.systems
    assert [plain.rank(q, 1) for q in result.scored.queries] == [[], []]
    assert [taught.rank(q, 1) for q in result.scored.queries] == [["sqs_send"], ["tls_check"]]
    with pytest.raises(InvalidParameterError):
        replay(dataset, 1.0)
    with pytest.raises(InvalidParameterError, match="leaves nothing to score"):
        replay(dataset, 0.9)


@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_a_request_the_dataset_holds_twice_is_never_both_played_and_scored(seed: int | None) -> None:
    texts = ["put a message on the queue", "when does the cert run out", "queue it", "does my cert run out soon"]
    queries = [LabelledQuery(str(i), texts[i % 4], ("sqs_send",)) for i in range(12)]  # each text three times
    log, scored = split(Dataset("twice", ts.Catalog(TOOLS), queries), 0.5, seed)
    assert {q.text for q in log}.isdisjoint(q.text for q in scored.queries)
    assert len(log) == len(scored.queries) == 6 and sorted(q.id for q in [*log, *scored.queries]) == sorted(
        q.id for q in queries
    )


@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_requests_that_differ_only_by_case_quotes_or_punctuation_are_on_one_side(seed: int | None) -> None:
    """BFCL asks "...the 'R vs Adams' legal case?" and "...the R vs Adams legal case?": the same
    words, the same tool. Split by exact text, one was played while its twin was scored."""
    forms = [
        ("Put a message on the queue.", "put a message on the 'queue'"),
        ("when does the cert run out?", "When does the cert run out"),
        ("queue it", "Queue it!"),
        ("does my cert run out soon", '"does my cert run out soon"'),
    ]
    queries = [LabelledQuery(str(i), forms[i % 4][i // 4 % 2], ("sqs_send",)) for i in range(8)]
    log, scored = split(Dataset("near", ts.Catalog(TOOLS), queries), 0.5, seed)
    played = {tuple(words(q.text)) for q in log}
    assert played.isdisjoint(tuple(words(q.text)) for q in scored.queries)
    assert len(log) == len(scored.queries) == 4


def test_the_eval_command_prints_the_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from toolsift.cli import main

    tools, queries = tmp_path / "tools.json", tmp_path / "queries.jsonl"
    tools.write_text(json.dumps([json.loads(t.to_json()) for t in TOOLS]))
    rows = [("put a message on the queue", "sqs_send"), ("queue it", "sqs_send")]
    lines = [json.dumps({"id": str(i), "query": q, "relevant": [r]}) for i, (q, r) in enumerate(rows)]
    queries.write_text("\n".join(lines) + "\n")
    assert main(["eval", "--tools", str(tools), "--queries", str(queries), "--replay", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "| toolsift+learned | 1.000 |" in out and "| toolsift | 0.000 |" in out
    assert "the first 1 requests (in the dataset's order) played as the log" in out


def test_words_are_split_as_the_index_splits_them() -> None:
    # an identifier in a request teaches its parts; a CJK request teaches its bigrams
    assert words("putRecord then put_record") == ["put", "record"]
    assert words("北京天气 Café") == ["北京", "京天", "天气", "cafe"]
    tools = [ts.Tool("kinesis_write", "Write data to a stream"), ts.Tool("sns_publish", "Publish a message")]
    index = ts.Index(tools)
    learned = Learned(known=0)
    assert learned.observe(index, "call putRecord", ["kinesis_write"], scope="s") == {
        "kinesis_write": ["call", "put", "record"]
    }
    learned.observe(index, "北京天气", ["sns_publish"], scope="s")
    again = index.with_learned(learned.texts("s"))
    assert names(again, "put record")[:1] == ["kinesis_write"]
    assert names(again, "天气")[:1] == ["sns_publish"]


def test_bad_events_are_refused_naming_what_is_wrong() -> None:
    index = ts.Index(TOOLS)
    learned = Learned()
    # a single name is not read letter by letter; a name must be a string
    with pytest.raises(InvalidParameterError, match="called must be a list of tool names"):
        learned.observe(index, "put it on the queue", "sqs_send", scope="s")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="called must hold tool names"):
        learned.observe(index, "put it on the queue", [42], scope="s")  # type: ignore[list-item]
    for scope, taught, match in [
        ("s", {"sqs_send": "queue"}, "the words of 'sqs_send' must be a list"),
        ("s", {"sqs_send": ["two words"]}, "'two words' is not one word"),
        ("s", {"sqs_send": [""]}, "'' is not one word"),
        ("s", {"sqs_send": [7]}, "must hold tool names"),
        (None, {"sqs_send": ["queue"]}, "scope must be a string"),
        (5, {"sqs_send": ["queue"]}, "scope must be a string"),
        ("s", ["sqs_send"], "taught must map"),
    ]:
        with pytest.raises(InvalidParameterError, match=match):
            learned.add(scope, taught)  # type: ignore[arg-type]
    assert learned.scopes() == []  # nothing half-written


def test_a_file_that_is_not_a_store_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n" * 100)
    for open_store in (Learned, ts.UsageStore):
        with pytest.raises(StoreFormatError, match=r"notes\.txt: not a SQLite store") as raised:
            open_store(notes)
        assert raised.value.path == str(notes)
    assert notes.read_text() == "not a database\n" * 100
    with pytest.raises(StoreFormatError, match="cannot"):
        Learned(tmp_path / "missing" / "folder" / "learned.db")


def test_another_programs_database_is_refused_before_anything_is_written_to_it(tmp_path: Path) -> None:
    import sqlite3

    app, twin, cased = tmp_path / "app.db", tmp_path / "twin.db", tmp_path / "cased.db"
    with sqlite3.connect(app) as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)")
    with sqlite3.connect(twin) as db:  # a table of the store's name and other columns
        db.execute("CREATE TABLE learned (id INTEGER, body TEXT)")
        db.execute("CREATE TABLE usage (user TEXT, n INTEGER)")
    with sqlite3.connect(cased) as db:  # SQLite's names ignore case: "Usage" is the usage table
        db.execute("CREATE TABLE Learned (id INTEGER, body TEXT)")
        db.execute("CREATE TABLE Usage (user TEXT, n INTEGER)")
    before = {p: p.read_bytes() for p in (app, twin, cased)}
    refused = ((app, r"another program's tables \(orders\)|has no usage table"), (twin, "not toolsift's"))
    for path, match in (*refused, (cased, "not toolsift's")):
        for open_store in (Learned, ts.UsageStore, lambda p: ts.UsageStore(p, read_only=True)):
            with pytest.raises(StoreFormatError, match=match):
                open_store(path)
    assert {p: p.read_bytes() for p in (app, twin, cased)} == before  # not switched to WAL, no table added
    shared = tmp_path / "store.db"  # the usage and learned tables side by side: one store
    ts.UsageStore(shared).record("ann", "x")
    Learned(shared).add("s", {"x": ["queue"]})
    assert ts.UsageStore(shared, read_only=True).reach()[0] == 1 and Learned(shared).texts("s")


def test_the_table_keeps_a_bounded_number_of_words_per_tool() -> None:
    now = [0.0]
    learned = Learned(half_life_s=10.0, cap=2, clock=lambda: now[0])
    for i in range(50):
        learned.add("s", {"t": [f"word{i:02d}"], "u": ["kept"]})
    rows = learned._db.execute("SELECT tool, COUNT(*) FROM learned GROUP BY tool ORDER BY tool").fetchall()
    assert rows == [("t", 2 * KEPT_ROWS + 1), ("u", 1)]  # the kept rows, and the latest event's word
    # equal weights (the clock stood still): the first by word stay, as `weights` orders them
    assert learned.weights("s")["t"] == {"word00": 1.0, "word01": 1.0}
    now[0] = 100.0  # every row aged to about nothing: the next event of the tool deletes them
    learned.add("s", {"t": ["fresh"]})
    assert learned._db.execute("SELECT word FROM learned WHERE tool = 't'").fetchall() == [("fresh",)]


def test_a_new_phrasing_confirmed_again_and_again_climbs_past_a_full_table() -> None:
    """A tool whose table is full of words heavier than one event: a new word weighs the least,
    and was cut in the very event that brought it, every time."""
    now = [0.0]
    learned = Learned(known=0, cap=3, clock=lambda: now[0])
    old = [f"old{chr(97 + i)}" for i in range(3 * KEPT_ROWS)]
    for _ in range(2):
        learned.add("s", {"t": old})
    for _ in range(5):
        now[0] += 60.0
        learned.add("s", {"t": ["enqueue"]})
    weights = learned.weights("s")["t"]
    assert weights["enqueue"] > 4.9 and "enqueue" in learned.texts("s")["t"]
    assert len(learned._db.execute("SELECT word FROM learned").fetchall()) <= 3 * KEPT_ROWS + 1


def test_a_store_another_process_holds_costs_the_event_not_the_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    import toolsift.usage

    monkeypatch.setattr(toolsift.usage, "BUSY_TIMEOUT_S", 0.2)  # the default, 30 s, fails alike
    db = tmp_path / "usage.db"
    handlers = {t.name: (lambda a: "ok") for t in TOOLS}
    box = ts.Toolbox(
        ts.Catalog(TOOLS), ts.ToolTierOptions(), handlers=handlers, learned=Learned(db, known=0), scope="s"
    )
    box.search_tools({"query": "fan the alert out to subscribers"})
    box.call("call_tool", {"name": "sns_publish", "arguments": {}})
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # a backup, a second writer
    try:
        assert "dns_lookup" in box.call("tool_search", {"query": "look up the dns records"})  # answered
        box.reset()
    finally:
        other.execute("ROLLBACK")
        other.close()
    box.search_tools({"query": "fan the alert out to subscribers"})  # the store works again
    box.call("call_tool", {"name": "sns_publish", "arguments": {}})
    box.reset()
    assert set(Learned(db).texts("s")) == {"sns_publish"}


def test_weights_read_again_only_when_the_store_or_the_time_moved(tmp_path: Path) -> None:
    db, now = tmp_path / "usage.db", [0.0]
    mine, peer = Learned(db, half_life_s=1000.0, clock=lambda: now[0]), Learned(db, clock=lambda: now[0])
    mine.add("s", {"t": ["queue"]})
    first = mine.weights("s")
    first["t"]["tampered"] = 9.0  # a copy: the kept weights stay as read
    assert mine.weights("s") == {"t": {"queue": 1.0}}
    peer.add("s", {"t": ["topic"]})  # another connection's write
    assert set(mine.weights("s")["t"]) == {"queue", "topic"}
    now[0] = 1000.0  # a half-life later, nothing written: aged
    assert mine.weights("s")["t"]["queue"] == pytest.approx(0.5)
    # this store's own writes update the tools they touch: the same as reading everything again
    rng, fresh = random.Random(2), Learned(db, half_life_s=1000.0, clock=lambda: now[0])
    mine.weights("s")
    for _ in range(60):
        mine.add("s", {f"t{rng.randrange(8)}": [f"w{rng.randrange(30)}" for _ in range(3)]})
        kept = mine.weights("s")
        fresh._weights.clear()
        assert kept == fresh.weights("s") and list(kept) == list(fresh.weights("s"))


def test_a_toolbox_sees_ageing_and_a_peers_words_at_its_next_reset(tmp_path: Path) -> None:
    db, now = tmp_path / "usage.db", [0.0]
    mine = Learned(db, half_life_s=10.0, clock=lambda: now[0])
    peer = Learned(db, half_life_s=10.0, clock=lambda: now[0])  # another process on the same file
    box = ts.Toolbox(ts.Catalog(TOOLS), ts.ToolTierOptions(), learned=mine, scope="shared")
    peer.add("shared", {"sqs_send": ["enqueue"]})
    assert box.index.learned == {}  # until its reset
    box.reset()
    assert box.index.learned == {"sqs_send": "enqueue"}
    now[0] = 1000.0  # a hundred half-lives: forgotten
    box.reset()
    assert box.index.learned == {} and names(box.index, "enqueue") == []


def test_a_clause_several_called_tools_match_alike_teaches_none_of_them() -> None:
    tools = [ts.Tool(f"queue_{verb}", f"{verb.capitalize()} a queue") for verb in ("create", "purge", "delete")]
    index = ts.Index(tools)
    request = "make a fresh queue and wipe it out finally"
    called = ["queue_create", "queue_purge", "queue_delete"]
    assert len(set(index.evidence(request, called))) == 1  # "queue": each tool alike
    assert attribute(index, request, called) == {}
    assert Learned(known=0).observe(index, request, called, scope="s") == {}


def test_sessions_of_one_scope_share_the_index_rebuilt_with_its_texts() -> None:
    """A new Toolbox of a scope with learned texts rebuilds nothing while another session of that
    scope holds the same rebuilt index (at 50k tools a rebuild takes about 0.2 s)."""
    index = ts.Index(TOOLS)
    store = Learned(clock=lambda: 0.0)
    store.add("team", {"sqs_send": ["queue"]})
    first = ts.Toolbox(index, learned=store, scope="team")
    second = ts.Toolbox(index, learned=store, scope="team")
    assert first.index is second.index and first.index is not index
    assert names(second.index, "queue") == ["sqs_send"] == names(index.with_learned({"sqs_send": "queue"}), "queue")
    other = ts.Toolbox(index, learned=store, scope="other")
    assert other.index is index  # no texts: the index itself
    store.add("team", {"tls_check": ["zebra"]})
    second.reset()  # new texts: a new copy, the first session's is left as it is
    assert second.index is not first.index and names(first.index, "zebra") == []
    assert names(second.index, "zebra") == ["tls_check"]
    assert ts.Toolbox(index, learned=store, scope="team").index is second.index  # a new session: shared


@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_requests_that_rank_alike_are_on_one_side(seed: int | None) -> None:
    """The split told requests apart by their words in order: "now enqueue the payload" and
    "enqueue the payload now", or "renew certificate" and "renewing certificates", or requests
    that differ only by a number, rank and teach alike, yet fell on both sides."""
    forms = [
        ("now enqueue the payload", "enqueue the payload now"),
        ("renew certificate", "renewing certificates"),
        ("invoices of 2024", "invoices of 2025"),
        ("look up the domain", "the domain look up"),
    ]
    queries = [LabelledQuery(str(i), forms[i % 4][i // 4 % 2], ("sqs_send",)) for i in range(8)]
    log, scored = split(Dataset("alike", ts.Catalog(TOOLS), queries), 0.5, seed)
    for form in forms:
        played = any(q.text in form for q in log)
        held = any(q.text in form for q in scored.queries)
        assert played != held, form


def test_a_replay_given_a_store_scores_nothing_an_earlier_replay_played() -> None:
    queries = [
        LabelledQuery("0", "resolve the hostname", ("dns_lookup",)),
        LabelledQuery("1", "map a name to its address", ("dns_lookup",)),
    ]
    store = Learned()
    first = replay(Dataset("a", ts.Catalog(TOOLS), queries), 0.5, learned=store)
    again = replay(Dataset("a", ts.Catalog(TOOLS), queries[::-1]), 0.5, learned=store)  # the other half played
    assert first.learned_tools == again.learned_tools == 1
    assert sorted(store.texts("replay")["dns_lookup"].split()) == sorted(words(queries[1].text))  # the second's only


def test_one_event_teaches_a_tool_a_bounded_number_of_words() -> None:
    """A request of a megabyte, then one call, wrote a row per distinct word it held (300,000
    rows, 136 MB, in the review's run), and every later read of the scope paid for them."""
    learned = Learned(cap=3)
    learned.add("s", {"t": [f"w{i}x" for i in range(5_000)]})
    (count,) = learned._db.execute("SELECT COUNT(*) FROM learned").fetchone()
    assert count == 3 * KEPT_ROWS
    kept = {w for (w,) in learned._db.execute("SELECT word FROM learned")}
    assert kept == {f"w{i}x" for i in range(3 * KEPT_ROWS)}  # the first ones


def test_words_nobody_learns_again_are_deleted_with_their_scopes() -> None:
    """Aged-out rows were deleted only when the same tool of the same scope learned again:
    a scope no longer used kept every row, and was still listed by `scopes`."""
    from toolsift import learning

    now = [0.0]
    learned = Learned(half_life_s=10.0, clock=lambda: now[0])
    for user in range(20):
        learned.add(f"user-{user}", {"t": ["old"]})
    now[0] = 100.0
    assert learned.texts("user-0") == {} and len(learned.scopes()) == 20  # forgotten, still stored
    assert learned.prune() == 20 and learned.scopes() == []
    for user in range(20):
        learned.add(f"user-{user}", {"t": ["old"]})
    now[0] = 200.0
    for _ in range(learning.PRUNE_EVERY - 40):  # `add` does it on its own every PRUNE_EVERY events
        learned.add("busy", {"t": ["fresh"]})
    assert learned.scopes() == ["busy"]


def test_a_clock_stepped_back_ages_nothing_then_ages_from_the_new_time() -> None:
    """The row kept the time before the step: every later event added a whole 1.0 unaged until
    the clock was past it again (101 after 100 events a half-life apart, where 2 is right)."""
    now = [1e6]
    learned = Learned(half_life_s=10.0, clock=lambda: now[0])
    learned.add("s", {"t": ["glitch"]})
    for i in range(100):
        now[0] = i * 10.0  # stepped back a million seconds, then one event per half-life
        learned.add("s", {"t": ["glitch", "normal"]})
    weights = learned.weights("s")["t"]
    assert weights["glitch"] == pytest.approx(weights["normal"]) == pytest.approx(2.0)


def test_weights_are_the_same_for_a_warm_and_a_fresh_reader_at_one_time(tmp_path: Path) -> None:
    """A reader kept the weights of its last read for a ten-thousandth of a half-life and
    returned them as they were: two replicas on one file, at one clock reading, rounded a word
    to other counts, and ranked differently."""
    db, now = tmp_path / "learned.db", [0.0]
    warm = Learned(db, half_life_s=1000.0, clock=lambda: now[0])
    for _ in range(3):
        warm.add("s", {"t": ["queue"]})
    now[0] = 415.001
    warm.texts("s")
    now[0] = 415.09  # the same ten-thousandth of the half-life
    fresh = Learned(db, half_life_s=1000.0, clock=lambda: now[0])
    assert warm.weights("s") == fresh.weights("s") and warm.texts("s") == fresh.texts("s")


def test_rows_another_program_wrote_are_skipped_and_a_damaged_file_is_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "learned.db"
    learned = Learned(path)
    learned.add("s", {"t": ["good"]})
    rows = [("s", "t", "bad", "x", 1.0), ("s", "t", "huge", float("inf"), 1.0), ("other", "u", "w", 1.0, "y")]
    learned._db.executemany("INSERT INTO learned VALUES (?, ?, ?, ?, ?)", rows)
    assert learned.weights("s") == {"t": {"good": pytest.approx(1.0)}} and learned.weights("other") == {}
    # an event touching such a row replaces it; it failed (NaN: NOT NULL) with all of its words, for good
    learned.add("s", {"t": ["huge", "good"], "u": ["other"]})
    assert learned.weights("s") == {"t": {"good": pytest.approx(2.0), "huge": 1.0}, "u": {"other": 1.0}}
    assert learned.prune() == 1  # the other scope's row, whose time is text: deleted, not kept for ever
    learned.close()
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # the first page's tree gone: "database disk image is malformed"
    path.write_bytes(bytes(data))
    with pytest.raises(StoreFormatError):
        Learned(path).weights("s")


def test_odd_input_to_learning_gets_typed_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = ts.Index(TOOLS)
    monkeypatch.chdir(tmp_path)
    bad: list[tuple[str, object]] = [
        ("words(5)", lambda: words(5)),  # type: ignore[arg-type]
        (
            "a lone surrogate, one tool",
            lambda: Learned(known=0).observe(index, "dns \ud800", ["dns_lookup"], scope="s"),
        ),
        ("a lone surrogate word", lambda: Learned().add("s", {"t": ["\ud800"]})),
        ("texts(index=5)", lambda: Learned().texts("s", index=5)),  # type: ignore[arg-type]
        ("a NaN clock", lambda: Learned(clock=lambda: float("nan")).add("s", {"t": ["w"]})),
        ("a clock past any float", lambda: Learned(clock=lambda: 10**400).add("s", {"t": ["w"]})),
        ("a cap SQLite cannot bind", lambda: Learned(cap=2**62)),
        ("a clock of text", lambda: Learned(clock=lambda: "now").weights("s")),  # type: ignore[arg-type, return-value]
        ("a tiny half-life", lambda: Learned(half_life_s=1e-300)),
        ("a number as path", lambda: Learned(5)),  # type: ignore[arg-type]
    ]
    for what, run in bad:
        with pytest.raises(InvalidParameterError):
            run()  # type: ignore[operator]
        assert not (tmp_path / "5").exists(), what
