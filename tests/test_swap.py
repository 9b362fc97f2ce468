"""Selections on many threads while the index is replaced: no errors, no torn reads, every
result is exactly the result of the one index version that thread picked up."""

from __future__ import annotations

import threading

import toolsift as ts

THREADS, OPS = 8, 1500
QUERIES = ["refund the order", "ship a parcel", "export the report", "delete a user", "track shipment"]
WORDS = "refund order ship parcel export report delete user track shipment invoice email".split()  # noqa: SIM905


def version(n: int) -> list[ts.Tool]:
    """Version n: a different catalog (size, text and permissions) per version."""
    tools = []
    for i in range(200 + 50 * n):
        words = [WORDS[(i * 7 + j * (n + 3)) % len(WORDS)] for j in range(3 + (i + n) % 5)]
        tools.append(ts.Tool(f"v{n}_t{i}", " ".join(words), permissions=f"p{(i + n) % 3}"))
    return tools


def test_selects_during_index_swaps_see_exactly_one_version() -> None:
    catalogs = [version(n) for n in range(4)]
    expected = []
    for tools in catalogs:
        index = ts.Index(tools)
        expected.append(
            {
                q: (index.select(q, caller=["p0", "p1"], budget_tokens=300).names, index.search(q, k=5, caller=["p0"]))
                for q in QUERIES
            }
        )
    live: dict[str, tuple[int, ts.Index]] = {"current": (0, ts.Index(catalogs[0]))}
    stop = threading.Event()
    errors: list[str] = []
    done = [0] * THREADS

    def swapper() -> None:
        n = 0
        while not stop.is_set():
            n = (n + 1) % len(catalogs)
            live["current"] = (n, ts.Index(catalogs[n]))  # built while readers run; the old one is dropped

    def reader(t: int) -> None:
        for i in range(OPS):
            n, index = live["current"]  # one atomic read of (version, index)
            q = QUERIES[(t + i) % len(QUERIES)]
            try:
                names = index.select(q, caller=["p0", "p1"], budget_tokens=300).names
                hits = index.search(q, k=5, caller=["p0"])
            except Exception as e:
                errors.append(repr(e))
                return
            want_names, want_hits = expected[n][q]
            if names != want_names or [(h.position, h.score) for h in hits] != [
                (h.position, h.score) for h in want_hits
            ]:
                errors.append(f"thread {t} op {i}: result differs from version {n}")
                return
            if any(not name.startswith(f"v{n}_") for name in names):
                errors.append(f"thread {t} op {i}: mixed versions")
                return
            done[t] += 1

    swap = threading.Thread(target=swapper)
    readers = [threading.Thread(target=reader, args=(t,)) for t in range(THREADS)]
    swap.start()
    for r in readers:
        r.start()
    for r in readers:
        r.join()
    stop.set()
    swap.join()
    assert errors == []
    assert sum(done) == THREADS * OPS
