"""Compound requests: every intent gets tools, a request of one intent is ranked as before."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolsift as ts
from toolsift.errors import InvalidParameterError, SnapshotError
from toolsift.intents import MAX_CLAUSES, SHARE, clauses, interleave

# three weather tools that each match more of the request than the hotel tool does
TOOLS = [
    ts.Tool("weather_radar", "Weather radar and rain forecast"),
    ts.Tool("weather_forecast", "Weather forecast for a city"),
    ts.Tool("rain_radar", "Rain radar map of a city"),
    ts.Tool("wind_speed", "Wind speed and gusts in a city"),
    ts.Tool("book_hotel", "Book a hotel room for some nights"),
    ts.Tool("send_invoice", "Send an invoice to a customer", permissions="billing"),
]
COMPOUND = "Weather forecast and rain radar for Paris. Also a hotel."


def names(hits: list[ts.Hit]) -> list[str]:
    return [h.tool.name for h in hits]


WORDS = [f"q{a}{b}vx" for a in "bcdfghjk" for b in "aeiou"][: MAX_CLAUSES + 8]  # made-up words, one per tool


def test_clauses_cut_at_sentence_ends_semicolons_commas_and_lines_in_any_script() -> None:
    assert clauses("Add 5.0 and 3.2. Then book a room; send it, please\nthanks") == [
        "Add 5.0 and 3.2.",
        "Then book a room;",
        "send it",
        "please",
        "thanks",
    ]
    assert clauses("查询天气。预订酒店，发送邮件") == ["查询天气", "预订酒店", "发送邮件"]
    assert clauses("one intent only") == ["one intent only"]
    for stop in ("\u06d4 ", "\u0965 ", "\u037e ", "\u0589 ", "\u1362 ", "\u104b ", "\u17d4 ", "\uff61", "\r", "\u2028"):
        assert clauses(f"first part{stop}second part") == ["first part", "second part"], repr(stop)
    assert clauses("ｖ１．２ of the API") == ["ｖ１．２ of the API"]  # a full-width number is one clause
    # the history is not split into intents: only the heaviest pieces are
    q = ts.Query.from_messages(
        [
            {"role": "user", "content": "Book a hotel. Send the invoice."},
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": "What is the weather in Paris?"},
        ]
    )
    assert clauses(q) == ["What is the weather in Paris?"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 30), unique=True, max_size=12),
    st.lists(st.lists(st.integers(0, 30), unique=True, max_size=8), min_size=2, max_size=4),
    st.integers(0, 20),
)
def test_interleave_keeps_every_lists_order_and_gives_each_intent_its_best(
    whole: list[int], intents: list[list[int]], k: int
) -> None:
    out = interleave(whole, intents, k)
    union = set(whole).union(*intents)
    assert len(out) == len(set(out)) == min(k, len(union)) and set(out) <= union
    if whole and k:
        assert out[0] == whole[0]  # the whole request's best comes first
    if k > len(intents):
        assert all(not r or r[0] in out for r in intents)  # then each intent's best
    if k >= 1 + len(intents) + SHARE and len(whole) > SHARE:
        assert set(whole[: 1 + SHARE]) <= set(out)  # then the whole request's next


def test_a_compound_request_gets_a_tool_for_each_intent() -> None:
    request = COMPOUND
    single, split = ts.Index(TOOLS, intents=False), ts.Index(TOOLS)
    assert "book_hotel" not in names(single.search(request, k=3))
    assert "book_hotel" in names(split.search(request, k=3))
    assert names(split.search(request, k=3))[0] == names(single.search(request, k=3))[0]
    budget = 3 * max(split.cost(i) for i in range(len(split)))
    assert "book_hotel" in split.select(request, budget_tokens=budget, max_tools=3).names
    assert "book_hotel" not in single.select(request, budget_tokens=budget, max_tools=3).names
    assert [s.names for s in split.select_many([request], budget_tokens=budget, max_tools=3)] == [
        split.select(request, budget_tokens=budget, max_tools=3).names
    ]
    assert split.search_many([request], k=3) == [split.search(request, k=3)]


def test_only_the_first_distinct_clauses_are_ranked_on_their_own() -> None:
    """A pasted table of thousands of lines is not thousands of intents: each clause ranked
    costs a search of the catalog."""
    from toolsift.intents import rank_intents

    tools = [ts.Tool(f"tool_{i}", f"Handle the {w} records") for i, w in enumerate(WORDS)]
    index = ts.Index(tools)
    rows = [f"{w} records" for w in WORDS] * 3  # each clause three times, then more than the cap
    found = rank_intents(index._lexical, ", ".join(rows), ts.callers.perms_of(None), 10, None).rankings
    assert len(found) == MAX_CLAUSES  # each a distinct clause's ranking, the first ones
    assert [r[0][0] for r in found] == list(range(MAX_CLAUSES))


def test_a_clause_only_a_core_tool_matches_is_no_intent() -> None:
    """A core tool goes out whatever the request: a clause it alone matches ("help me") is no
    evidence of a second intent, as it is none for the relevance gate."""
    from toolsift.intents import rank_intents

    tools = [
        ts.Tool("help_desk", "Get help from the help desk", core=True),
        ts.Tool("refund_order", "Refund an order"),
        ts.Tool("track_parcel", "Track a parcel"),
    ]
    index = ts.Index(tools)
    perms = ts.callers.perms_of(None)
    assert not rank_intents(index._lexical, "Refund my order, help me please", perms, 10, None)
    assert len(rank_intents(index._lexical, "Refund my order, track my parcel", perms, 10, None).rankings) == 2


def test_a_request_of_one_intent_is_ranked_as_without_intents() -> None:
    single, split = ts.Index(TOOLS, intents=False), ts.Index(TOOLS)
    for request in [
        "weather in Paris",
        "Book a hotel room. For 2 nights, 3 people.",
        "",
        "hotel; 42, 7",
        COMPOUND[:-14],
    ]:
        assert split.search(request) == single.search(request)
        assert (
            split.select(request, budget_tokens=500).to_openai()
            == single.select(request, budget_tokens=500).to_openai()
        )


def test_intents_never_bring_in_a_tool_the_caller_may_not_use() -> None:
    index = ts.Index(TOOLS)
    request = "Book a hotel room for two nights. Send an invoice to the customer."
    assert "send_invoice" in names(index.search(request, caller="billing"))
    assert "send_invoice" not in names(index.search(request))
    assert "send_invoice" not in index.select(request, budget_tokens=None).names


def test_the_setting_is_saved_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "i.tsidx"
    request = COMPOUND
    ts.Index(TOOLS, intents=False).save(path)
    assert "book_hotel" not in names(ts.Index.load(path).search(request, k=3))
    assert "book_hotel" in names(ts.Index.load(path, intents=True).search(request, k=3))
    with pytest.raises(InvalidParameterError, match="intents"):
        ts.Index(TOOLS, intents="yes")  # type: ignore[arg-type]
    from test_snapshot import parts, reseal, with_options

    reseal(path, with_options(parts(path), intents=1))
    with pytest.raises(SnapshotError, match="intents"):
        ts.Index.load(path)


def test_a_tool_the_rerank_hook_dropped_is_not_brought_back_by_an_intent() -> None:
    def drop_hotel(query: ts.Query, hits: list[ts.Hit]) -> list[ts.Hit]:
        return [h for h in hits if h.tool.name != "book_hotel"]

    index = ts.Index(TOOLS, rerank=drop_hotel)
    assert "book_hotel" in names(ts.Index(TOOLS).search(COMPOUND, k=4))  # the hotel intent's tool
    assert "book_hotel" not in names(index.search(COMPOUND, k=4))
    assert "book_hotel" not in index.select(COMPOUND).names


def test_a_query_whose_pieces_all_weigh_zero_matches_nothing_with_intents_too() -> None:
    index = ts.Index(TOOLS)
    silent = ts.Query(((COMPOUND, 0.0),))
    assert clauses(silent) == []
    assert index.search(silent) == [] and index.select(silent).names == ()


def test_core_tools_take_no_candidate_place_of_a_compound_request() -> None:
    """A compound request is ranked here, `depth` deep, core tools included; they are packed
    anyway and left out of the candidates, so each core tool the caller may use cost one."""
    tools = [ts.Tool(f"queue_{i}", f"Send a message to queue number {i}") for i in range(30)]
    tools += [ts.Tool(f"table_{i}", f"Put an item into table number {i}") for i in range(30)]
    tools += [ts.Tool("zebra_queue", "Send a zebra message"), ts.Tool("yak_table", "Put a yak item")]
    tools += [ts.Tool(f"core_{i}", "Send a message and put an item", core=True) for i in range(5)]
    tools += [ts.Tool("secret_core", "Send a message and put an item", core=True, permissions=["admin"])]
    index = ts.Index(tools, depth=20)
    request = "Send the zebra message. Put the yak item."
    sel = index.select(request, max_tools=20)
    assert len(sel.core) == 5 and len(sel) - len(sel.core) == 20  # was 15
    admin = index.select(request, max_tools=20, caller=["admin"])
    assert len(admin.core) == 6 and len(admin) - len(admin.core) == 20


def test_a_core_tool_an_intent_ranks_first_takes_no_place_of_that_intents_best() -> None:
    """A core tool at the head of one intent's own ranking took that intent's early place of the
    merge: it is selected anyway, so a selection of two tools got two for the first intent and
    none for the second."""
    fill = [ts.Tool(f"fill_{i}", " ".join(f"w{(i * 7 + j) % 3000}" for j in range(8))) for i in range(300)]
    mail = "send an email with the invoice attached, to one recipient or many, from the default outbox"
    cal = "book a meeting on the calendar of the team, with a room and a video link and reminders"
    tools = [*fill, *(ts.Tool(f"mail_{i}", f"{mail}, variant {i}") for i in range(3))]
    tools += [ts.Tool(f"cal_{i}", f"{cal}, variant {i}") for i in range(3)]
    tools += [ts.Tool("assistant", "send email invoice book meeting calendar", core=True)]
    request = "Send an email with the invoice. Book a meeting on the calendar."
    index = ts.Index(tools)
    assert names(index.search(request, k=3))[0] == "assistant"  # a search ranks it, as any tool
    sel = index.select(request, max_tools=2)
    assert sel.core == ("assistant",) and {n[:3] for n in sel.names if n != "assistant"} == {"mai", "cal"}
    without = ts.Index([t for t in tools if not t.core]).select(request, max_tools=2)
    assert tuple(n for n in sel.names if n != "assistant") == without.names


def test_a_compound_request_selects_past_the_depth_when_the_budget_holds_more() -> None:
    """The intents rank the first `depth` candidates, and packing stopped there: a full stop in
    a request cut an unbounded or large selection to `depth` tools (on BFCL, 312 of 2,501
    requests went from about 1,700 tools to 100 with no budget). The whole request's own
    ranking now goes on past them, as for a request of one intent."""
    tools = [ts.Tool(f"queue_{i}", f"Send a message to queue number {i}") for i in range(30)]
    tools += [ts.Tool(f"table_{i}", f"Put an item into table number {i}") for i in range(30)]
    tools += [ts.Tool("zebra_queue", "Send a zebra message"), ts.Tool("yak_table", "Put a yak item")]
    index, single = ts.Index(tools, depth=20), ts.Index(tools, depth=20, intents=False)
    request = "Send the zebra message. Put the yak item."
    for budget in (None, 10**6):
        sel = index.select(request, budget_tokens=budget)
        assert set(sel.names) == set(single.select(request, budget_tokens=budget).names) and len(sel) == 62
    small = index.select(request, max_tools=2)
    assert set(small.names) == {"zebra_queue", "yak_table"}  # the intents still choose the head

    # core tools leave the intents' rankings, not the depth: when those hold nothing past the
    # whole request's head, a selection still goes on past it
    fill = [ts.Tool(f"fill_{i}", " ".join(f"w{(i * 7 + j) % 3000}" for j in range(8))) for i in range(300)]
    mail, cal = "send an email with the invoice attached to one recipient", "book a meeting on the calendar"
    tools = [*fill, *(ts.Tool(f"mail_{i}", f"{mail} variant {i}") for i in range(60))]
    tools += [ts.Tool(f"both_{i}", f"{mail} {cal} variant {i}") for i in range(5)]
    cores = [ts.Tool(f"core_{i}", "send email invoice book meeting calendar", core=True) for i in range(3)]
    request = "Send an email with the invoice. Book a meeting on the calendar."
    with_cores, without = ts.Index([*tools, *cores], depth=20), ts.Index(tools, depth=20)
    for budget in (None, 10**6):
        sel = with_cores.select(request, budget_tokens=budget)
        assert len(sel.core) == 3 and len(sel) - 3 == len(without.select(request, budget_tokens=budget)) == 65


def test_quoted_text_numbers_and_abbreviations_are_not_cut_into_intents() -> None:
    """A message to send, a number with a thousands comma or a list written without spaces,
    and "e.g." each made clauses of their own: on a catalog of SNS and SQS tools, "bucket
    deleted, queue purged" made an intent that brought in the SQS delete tools."""
    assert clauses('Publish to the topic: "bucket deleted, queue purged"') == [
        'Publish to the topic: "bucket deleted, queue purged"'
    ]
    assert clauses("Send «oui, non» to the queue, then list the topics") == [
        "Send «oui, non» to the queue",
        "then list the topics",
    ]
    assert clauses('"Book a room. Then send the invoice."') == ['"Book a room.', 'Then send the invoice."']
    assert clauses("Sum 3,4,5 and 1,000. Use a tool, e.g. the adder.") == [
        "Sum 3,4,5 and 1,000.",
        "Use a tool",
        "e.g. the adder.",
    ]
    assert clauses("Add 5.0 and 3.2. Then stop") == ["Add 5.0 and 3.2.", "Then stop"]


def test_commas_next_to_other_scripts_and_inch_marks_still_cut() -> None:
    """The first version cut an ASCII comma only before a space: CJK and Hangul typed with a
    half-width comma became one clause, and an inch mark (5") opened a quote to the next one."""
    assert clauses("查询北京的天气,然后给张三发邮件") == ["查询北京的天气", "然后给张三发邮件"]
    assert clauses("서울 날씨를 확인하고,김철수에게 이메일을 보내") == [
        "서울 날씨를 확인하고",
        "김철수에게 이메일을 보내",
    ]
    assert clauses('Buy a 5" screen, then a 7" tablet, then email Bob') == [
        'Buy a 5" screen',
        'then a 7" tablet',
        "then email Bob",
    ]


def test_many_quoted_pieces_are_split() -> None:
    """Each cut was checked against every quoted span, so 80,000 characters of `"a", ` took
    18 s (a gateway worker thread held as long); one pass now (``python -c`` on this text:
    0.03 s). The pieces between quotes are cut; commas inside a quote are not."""
    assert clauses('"a", ' * 16_000) == ['"a"'] * 16_000
    assert clauses('"a, b", ' * 16_000) == ['"a, b"'] * 16_000


def _catalog_of_shared_words() -> list[ts.Tool]:
    """A large catalog's shape: 2,000 tools, each word of a short request held by a tenth of
    them or more, so that no clause of "Delete the old bucket. Publish the message" holds much
    evidence (a word only one tool has is 1)."""
    verbs = ("delete", "create", "publish", "list", "get", "update", "copy", "move", "tag", "watch")
    return [
        ts.Tool(f"s{s}_{verb}_{thing}", f"{verb.title()} {'an old' if thing == 'bucket' else 'a'} {thing}.")
        for s in range(50)
        for verb in verbs
        for thing in ("bucket", "message", "topic", "item")
    ]


def test_weak_intents_of_a_large_catalog_each_get_a_place_in_the_tail() -> None:
    """At 18k AWS tools a short request's words are each shared by hundreds of tools: only 70 %
    of the hand-written requests reached the intent floor alone, so a request of two of them was
    ranked as one and the second went unserved (200 pairs: Complete@10 0.175). Each clause
    under the floor but over WEAK_EVIDENCE now gets its best tools into the tail, never the head:
    the first clause's are in the head already, so the second's two best take the two places."""
    from toolsift.intents import WEAK_AT, WEAK_EVIDENCE, WEAK_PLACES, rank_intents

    tools = _catalog_of_shared_words()
    index, single = ts.Index(tools), ts.Index(tools, intents=False)
    request = "Delete the old bucket. Publish the message"
    perms = ts.callers.perms_of(None)
    found = rank_intents(index._lexical, request, perms, 10, None)
    evidence = [max(index._lexical.evidence(c, perms, list(range(len(tools))))) for c in clauses(request)]
    assert all(WEAK_EVIDENCE <= e < 1.0 for e in evidence) and not found.rankings and len(found.weak) == 2
    whole = [h.tool.name for h in single.search(request, k=10)]
    assert not any(n.endswith("_publish_message") for n in whole)  # the first request takes every place
    got = [h.tool.name for h in index.search(request, k=10)]
    assert got[:WEAK_AT] == whole[:WEAK_AT]  # the head is the whole request's
    served = [n for n in got if n.endswith("_publish_message")]
    assert served == got[WEAK_AT : WEAK_AT + WEAK_PLACES] and WEAK_PLACES == 2  # the second is served
    assert set(index.select(request, budget_tokens=10**6, max_tools=10).names) == set(got)
    assert index.search(request, k=WEAK_AT) == single.search(request, k=WEAK_AT)


def test_at_most_two_weak_intents_take_places_those_of_most_evidence() -> None:
    from toolsift.intents import WEAK_PLACES, rank_intents

    tools = _catalog_of_shared_words()
    index = ts.Index(tools)
    request = "Delete the old bucket. Publish the message. List the topic. Get the item"
    found = rank_intents(index._lexical, request, ts.callers.perms_of(None), 10, None)
    assert len(found.weak) == WEAK_PLACES == 2
    got = [h.tool.name for h in index.search(request, k=10)]
    assert len(got) == len(set(got)) == 10
    # the first clause holds the most evidence (0.70, "old"), the three others tie (0.51): the
    # first of them in the request takes the second place, and its tool comes into the tail
    assert [tools[w[0][0]].name for w in found.weak] == ["s0_delete_bucket", "s0_publish_message"]
    assert {n.split("_", 1)[1] for n in got} == {"delete_bucket", "publish_bucket", "publish_message"}


def test_a_clause_core_tools_answer_first_is_weighed_the_same_for_any_k() -> None:
    """A clause was searched k deep, so when k or more core tools outranked its first other
    tool its evidence was none: at k=7 "Publish the message" was no intent, at k=50 a weak one,
    and search(k=7) was not the first 7 of search(k=50)."""
    cores = [ts.Tool(f"core_{i}_publish_message", "Publish a message, publish message.", core=True) for i in range(9)]
    index = ts.Index(cores + _catalog_of_shared_words())
    request = "Delete the old bucket. Publish the message"
    deep = [h.tool.name for h in index.search(request, k=50)]
    for k in (3, 7, 10, 20):
        assert [h.tool.name for h in index.search(request, k=k)] == deep[:k]
