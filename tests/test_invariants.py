"""The invariants every selection keeps: filter before rank, registry order, determinism."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import toolsift as ts
from toolsift.errors import UnknownToolError

QUERIES = [
    "refund the payment of this order",
    "delete a customer account",
    "customer account order refund delete policy help",
    "",
    "nothing matches zzz",
]


def test_forbidden_tool_is_never_returned_counted_or_named(support: ts.Index) -> None:
    caller = ["crm.read", "orders.read"]
    forbidden = {"issue_refund", "delete_account"}
    for q in QUERIES:
        assert not forbidden & {h.tool.name for h in support.search(q, k=10, caller=caller)}
        sel = support.select(q, caller=caller, budget_tokens=130)
        emitted = json.dumps([sel.to_openai(), sel.to_anthropic(), sel.to_mcp(), repr(sel), sel.note])
        assert not forbidden & set(sel.names)
        assert not forbidden & {d.tool.name for d in sel.dropped}
        assert all(name not in emitted for name in forbidden)
        assert sel.tokens == sum(support.cost(i) for i in sel)


def test_forbidden_and_unknown_tools_raise_the_same_error(support: ts.Index) -> None:
    errors = []
    for name in ("delete_account", "no_such_tool"):
        with pytest.raises(UnknownToolError) as e:
            support.get(name, caller=["crm.read"])
        errors.append(str(e.value).replace(name, "NAME"))
    assert errors[0] == errors[1]
    assert support.get("delete_account", caller=["admin"]).name == "delete_account"


def test_forbidden_tool_never_changes_scores_of_allowed_tools(support: ts.Index) -> None:
    narrow, wide = ["orders.read"], ["orders.read", "billing.refund", "admin", "crm.read"]
    for q in QUERIES:
        allowed = [h for h in support.search(q, k=10, caller=wide) if support.allows(h.tool.name, caller=narrow)]
        assert support.search(q, k=10, caller=narrow) == allowed


def test_a_tool_requiring_several_permissions_needs_all_of_them() -> None:
    idx = ts.Index([ts.Tool("wire_money", "wire money abroad", permissions=["billing", "kyc"])])
    assert idx.search("wire money", caller=["billing"]) == []
    assert [h.tool.name for h in idx.search("wire money", caller=["kyc", "billing", "other"])] == ["wire_money"]


def test_a_remembered_caller_is_checked_again_and_only_works_on_its_own_index(support: ts.Index) -> None:
    from toolsift.errors import InvalidParameterError

    assert support.search("refund", caller=["orders.read"]) == support.search("refund", caller=("orders.read",))
    for _ in range(2):  # the second call is answered from the caller cache: still refused
        with pytest.raises(InvalidParameterError):
            support.search("refund", caller=["orders.read", 7])  # type: ignore[list-item]
        with pytest.raises(InvalidParameterError):
            support.search("refund", caller=["toolsift:withheld"])
    other = ts.Index([ts.Tool("refund", "refund an order", permissions="orders.read")])
    compiled = support._core.caller(["orders.read"])
    with pytest.raises(ValueError, match="another index"):
        other._core.search([("refund", 1.0)], compiled, 5)


class Liar(str):
    """A permission that claims to equal (and hashes like) "guest", and never to start with anything."""

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return hash("guest")

    def startswith(self, *args: object) -> bool:  # type: ignore[override]
        return False


def _admin_and_hello() -> ts.Index:
    return ts.Index([ts.Tool("admin_delete", "delete everything", permissions="admin"), ts.Tool("hello", "say hello")])


def test_a_str_subclass_cannot_poison_the_caller_caches() -> None:
    from toolsift.errors import InvalidParameterError

    idx = _admin_and_hello()
    assert [h.tool.name for h in idx.search("delete everything", caller=[Liar("admin")])] == ["admin_delete"]
    assert [h.tool.name for h in idx.search("delete everything", caller=["guest"])] == []
    with pytest.raises(InvalidParameterError):
        idx.search("hello", caller=[Liar("toolsift:withheld")])
    with pytest.raises(InvalidParameterError):
        idx.search("hello", caller=["toolsift:withheld"])


def test_callers_that_join_to_the_same_text_stay_apart() -> None:
    # The caller caches key a caller by its permissions joined with NUL; permissions holding a
    # NUL must not be taken for another caller's.
    idx = ts.Index(
        [
            ts.Tool("read_a", "read the ledger", permissions="a"),
            ts.Tool("read_ab", "read the ledger", permissions=["a", "b"]),
            ts.Tool("read_c", "read the ledger", permissions="c"),
        ]
    )

    def seen(caller: list[str]) -> set[str]:
        return {h.tool.name for h in idx.search("read ledger", caller=caller)}

    assert seen(["a", "b"]) == {"read_a", "read_ab"}
    assert seen(["a\0b"]) == set()
    assert seen(["a\0", "b"]) == set()
    assert seen(["c", "a"]) == {"read_a", "read_c"}
    assert seen(["c\0a"]) == set()
    assert seen(["a", "b\0c"]) == {"read_a"}
    assert seen(["a\0b", "c"]) == {"read_c"}
    # one list object, changed between calls, is looked up by what it holds now
    caller = ["a"]
    assert seen(caller) == {"read_a"}
    caller.append("b")
    assert seen(caller) == {"read_a", "read_ab"}
    caller[:] = ["c"]
    assert seen(caller) == {"read_c"}


def test_a_tuple_or_frozenset_caller_is_remembered_by_identity_without_cross_talk() -> None:
    from toolsift.errors import InvalidParameterError

    idx = _admin_and_hello()

    def seen(caller: object) -> list[str]:
        return [h.tool.name for h in idx.search("delete everything hello", caller=caller)]  # type: ignore[arg-type]

    admin, guest, liar = ("admin",), ("guest",), (Liar("admin"),)
    for _ in range(2):  # the second time from the cache
        assert seen(admin) == ["admin_delete", "hello"]
        assert seen(guest) == ["hello"]
        assert seen(liar) == ["admin_delete", "hello"]  # what it holds, not what it claims
        assert seen(frozenset({"admin"})) == ["admin_delete", "hello"]
        assert seen(frozenset({"guest"})) == ["hello"]
    assert seen(tuple(["admin"])) == seen(admin)  # an equal tuple, another object
    bad = ("toolsift:withheld",)
    for _ in range(2):  # a refused caller is never cached
        with pytest.raises(InvalidParameterError):
            seen(bad)


def test_no_caller_sees_public_tools_only(support: ts.Index) -> None:
    names = {h.tool.name for h in support.search("customer account order refund help", k=10)}
    assert names == {"search_help", "refund_policy"}


def test_output_lists_core_tools_first_then_the_rest_in_registry_order() -> None:
    tools = [ts.Tool(f"send_{w}", f"send a {w} message", cost_tokens=10) for w in ("sms", "email", "fax", "page")]
    tools.append(ts.Tool("ask_user", "ask the user a question", core=True, cost_tokens=10))
    sel = ts.Index(tools).select("send an email message or sms or fax", budget_tokens=1000)
    assert sel.names[0] == "ask_user"
    assert list(sel.positions[1:]) == sorted(sel.positions[1:])
    assert sel.core == ("ask_user",)


def test_appending_tools_never_reorders_an_unchanged_selection() -> None:
    base = [ts.Tool(f"tool_{i}", f"manage widget number {i} and gadgets", cost_tokens=20) for i in range(20)]
    before = ts.Index(base).select("manage widget gadgets", budget_tokens=200)
    more = base + [ts.Tool(f"zz_{i}", f"unrelated lorem ipsum {i}", cost_tokens=20) for i in range(30)]
    after = ts.Index(more).select("manage widget gadgets", budget_tokens=200)
    assert set(after.names) == set(before.names)
    assert after.names == before.names and after.to_openai() == before.to_openai()


def test_empty_query_and_no_match_return_core_tools_only(support: ts.Index) -> None:
    for q in ("", "   ", "zzz qqq", "!!!"):
        assert support.select(q, caller=["crm.read"], budget_tokens=10_000).names == ("search_help",)
        assert support.search(q, caller=["crm.read"]) == []


def test_k_above_the_hits_returns_fewer_and_k_zero_returns_none(support: ts.Index) -> None:
    assert len(support.search("refund", k=1000, caller=["billing.refund"])) == 2
    assert support.search("refund", k=0) == []
    assert support.select("refund order", caller=["orders.read"], budget_tokens=10_000, max_tools=0).names == (
        "search_help",
    )


def test_zero_budget_keeps_core_tools_and_says_why(support: ts.Index) -> None:
    sel = support.select("refund order", caller=["orders.read"], budget_tokens=0)
    assert sel.names == ("search_help",)
    assert sel.note and "core" in sel.note


def test_a_candidate_too_big_for_the_budget_is_skipped_and_smaller_ones_still_taken() -> None:
    idx = ts.Index(
        [
            ts.Tool("refund_big", "refund refund refund", cost_tokens=500),
            ts.Tool("refund_small", "refund a payment", cost_tokens=50),
        ]
    )
    sel = idx.select("refund", budget_tokens=100)
    assert sel.names == ("refund_small",)
    assert [(d.tool.name, d.reason) for d in sel.dropped] == [("refund_big", "over_budget")]


SCRIPT = textwrap.dedent(
    """
    import json, toolsift as ts
    tools = [ts.Tool(f"t{i}", " ".join(f"w{(i * j) % 17}" for j in range(1, 9)),
                     permissions=[f"p{i % 3}"] if i % 4 else [], core=i % 11 == 0, cost_tokens=10 + i % 7)
             for i in range(300)]
    idx = ts.Index(tools)
    out = []
    for q in ["w1 w2 w3", "w5 w5 w16", "w0"]:
        out.append([(h.position, h.score) for h in idx.search(q, k=20, caller=["p1", "p2"])])
        out.append(idx.select(q, caller=["p0", "p1"], budget_tokens=200).to_openai())
    print(json.dumps(out))
    """
)


def test_same_catalog_query_and_caller_give_byte_identical_output_across_processes() -> None:
    runs = [
        subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, check=True, env={"PYTHONHASHSEED": seed})
        for seed in ("1", "2", "3")
    ]
    assert runs[0].stdout and runs[0].stdout == runs[1].stdout == runs[2].stdout


SETS = textwrap.dedent(
    """
    import json, toolsift as ts
    from toolsift.scan import scan
    seen = []
    box = ts.Toolbox(ts.Catalog([ts.Tool("a", "refund", permissions=["p3"])]), caller={f"p{i}" for i in range(8)},
                     hooks=ts.Hooks(before_tool=lambda e: seen.append(e.caller)), handlers={"a": lambda args: "ok"})
    box.call("a", {})
    learned = ts.Learned(cap=2)
    learned.add("s", {"t": {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}})
    tools = [ts.Tool("read_file", "read"), ts.Tool("Read-File", "read")]
    print(json.dumps([
        list(box.perms), [list(c) for c in seen], learned.texts("s"),
        [[f.tool, f.detail] for f in scan(tools, trusted={"read_file", "readfile", "READFILE"})],
        ts.Query.from_messages([{"role": "user", "content": "go"}], recent_tools={"x1", "x2", "x3", "x4"}).parts,
    ]))
    """
)


def test_inputs_given_as_sets_give_the_same_output_in_every_process() -> None:
    """A set of strings iterates in an order that changes with the process's hash seed."""
    env = {k: v for k, v in os.environ.items() if k == "PYTHONPATH"}
    runs = [
        subprocess.run([sys.executable, "-c", SETS], capture_output=True, check=True, env={**env, "PYTHONHASHSEED": s})
        for s in ("0", "1", "2", "3", "4")
    ]
    assert runs[0].stdout and all(r.stdout == runs[0].stdout for r in runs), [r.stdout for r in runs]


def test_scan_reports_no_trusted_tool_as_a_copy_of_another_trusted_name() -> None:
    from toolsift.scan import scan

    tools = [ts.Tool("read_file", "read"), ts.Tool("Read-File", "read")]
    found = scan(tools, trusted=["readfile", "read_file"])  # two alike names, both accepted before
    assert [(f.tool, f.detail) for f in found] == [("Read-File", "looks like 'readfile'")]


def test_a_budget_the_core_tools_leave_no_room_in_says_so() -> None:
    index = ts.Index(
        [
            ts.Tool("search_help", "Search the help center articles", core=True, cost_tokens=30),
            ts.Tool("order_status", "Get the shipping status of an order", cost_tokens=31),
        ]
    )
    for budget in (30, 35):
        sel = index.select("where is my order", budget_tokens=budget)
        assert sel.names == ("search_help",) and sel.note is not None
        assert f"{budget - 30} tokens left after the core tools" in sel.note
    assert index.select("where is my order", budget_tokens=61).note is None
    assert index.select("where is my order", budget_tokens=61).names == ("search_help", "order_status")


@pytest.mark.parametrize("statistics", ["shared", "caller"])
def test_a_cheap_tool_the_caller_may_not_use_changes_nothing_it_sees(statistics: str) -> None:
    """The packer stops once less budget is left than the cheapest candidate costs: the
    caller's own cheapest, else a forbidden tool's cost would change what a selection drops,
    says and (by probing budgets) reveal that such a tool exists."""
    tools = [
        ts.Tool("search_help", "Search the help center articles", core=True, cost_tokens=10),
        ts.Tool("order_status", "Get the shipping status of an order", cost_tokens=50),
        ts.Tool("order_refund", "Refund an order. Check the status of a refund", cost_tokens=60),
    ]
    secret = ts.Tool("order_secret", "Order status override", permissions="admin", cost_tokens=3)
    seen = []
    for catalog in (tools, [*tools, secret]):
        index = ts.Index(catalog, statistics=statistics)
        seen.append(
            [
                (sel.names, [d.tool.name for d in sel.dropped], sel.note)
                for query in ("order status", "zzz nothing", "Refund my order. What is the order status?")
                for budget in (12, 15, 55, 65, 200)
                for sel in [index.select(query, budget_tokens=budget)]
            ]
        )
    assert seen[0] == seen[1]
    assert ("search_help",) in [names for names, _, _ in seen[0]]
    assert any(note and "5 tokens left" in note for _, _, note in seen[0])


def test_a_batch_given_as_an_iterator_is_answered_and_a_lone_string_refused() -> None:
    """search_many / select_many answered [] for a generator (a first look used it up) and read
    a string as one query per letter."""
    index = ts.Index([ts.Tool("a", "refund an order"), ts.Tool("b", "book a flight")])
    queries = ["refund", "flight"]
    want = [[h.tool.name for h in hits] for hits in index.search_many(queries)]
    assert [[h.tool.name for h in hits] for hits in index.search_many(iter(queries))] == want
    assert [s.names for s in index.select_many(q for q in queries)] == [s.names for s in index.select_many(queries)]
    for batch in (index.search_many, index.select_many):
        with pytest.raises(ts.errors.InvalidParameterError, match="list of queries"):
            batch("refund")  # type: ignore[arg-type]
