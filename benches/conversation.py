"""A conversation's per-turn cost with the quality embedder: query vectors cached or not.

An agent selects tools on every turn from the whole conversation
(:meth:`toolsift.Query.from_messages`: each earlier user message is a part of the query, with a
decaying weight), so without a cache turn ``n`` embeds ``n`` texts. The script plays
``--conversations`` conversations of ``--turns`` turns (consecutive BFCL requests as the user's
messages, a short assistant reply between them) through ``Index.select`` twice in one process:
with the index's query cache (``toolsift.hybrid.QUERY_CACHE``) and with it set to 0. It prints
the p50 per turn number and checks that both give the same selections.

    python benches/conversation.py [--conversations 30] [--turns 8]
"""

from __future__ import annotations

import argparse
import statistics
import time

from embedders import Prefilled  # benches/ is on the path when a script there runs

import toolsift as ts
import toolsift.hybrid
from toolsift.dense import default_embedder
from toolsift.eval.datasets import load_bfcl
from toolsift.text import dense_text


def play(
    index: ts.Index, conversations: list[list[str]], embedder: ts.dense.Embedder
) -> tuple[list[list[float]], list[tuple[str, ...]], list[list[float]]]:
    """Per turn number, the seconds each conversation's selection took; every selection; and
    per turn number the seconds ``embedder`` takes for the turn's query texts in one call (how
    the index embedded a query before it kept vectors)."""
    times: list[list[float]] = [[] for _ in conversations[0]]
    batched: list[list[float]] = [[] for _ in conversations[0]]
    picks = []
    for requests in conversations:
        messages: list[dict[str, str]] = []
        for turn, request in enumerate(requests):
            messages.append({"role": "user", "content": request})
            query = ts.Query.from_messages(messages)
            started = time.perf_counter()
            selection = index.select(query, max_tools=5)
            times[turn].append(time.perf_counter() - started)
            picks.append(tuple(selection.names))
            started = time.perf_counter()
            embedder.embed([text for text, _ in query.parts])
            batched[turn].append(time.perf_counter() - started)
            messages.append({"role": "assistant", "content": "Done."})
    return times, picks, batched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=30)
    parser.add_argument("--turns", type=int, default=8)
    args = parser.parse_args()
    data = load_bfcl()
    requests = [q.text for q in data.queries]
    conversations = [requests[i * args.turns : (i + 1) * args.turns] for i in range(args.conversations)]
    texts = [dense_text(t) for t in data.catalog]
    inner = default_embedder()
    embedder = Prefilled(inner, texts, inner.embed(texts))
    rows = {}
    for name, cache in (("cached", toolsift.hybrid.QUERY_CACHE), ("no cache", 0)):
        toolsift.hybrid.QUERY_CACHE = cache
        index = ts.Index(data.catalog, embedder=embedder)
        embedder.embedded = 0
        times, picks, batched = play(index, conversations, embedder.inner)
        rows[name] = (times, picks, embedder.embedded, batched)
    same = rows["cached"][1] == rows["no cache"][1]
    print(f"{args.conversations} conversations of {args.turns} turns, BFCL catalog, MiniLM onnx fp32")
    print(f"same selections with and without the cache: {same}\n")
    print(
        "| turn | query texts | select p50 ms, cached | select p50 ms, no cache | the texts in one call p50 ms "
        "| no cache / cached |\n|---|---|---|---|---|---|"
    )
    for turn in range(args.turns):
        a = statistics.median(rows["cached"][0][turn]) * 1e3
        b = statistics.median(rows["no cache"][0][turn]) * 1e3
        c = statistics.median(rows["cached"][3][turn]) * 1e3
        parts = len(ts.Query.from_messages([{"role": "user", "content": "x"}] * (turn + 1)).parts)
        print(f"| {turn + 1} | {parts} | {a:.2f} | {b:.2f} | {c:.2f} | {b / a:.1f}× |")
    print(f"\ntexts embedded: cached {rows['cached'][2]}, no cache {rows['no cache'][2]}")


if __name__ == "__main__":
    main()
