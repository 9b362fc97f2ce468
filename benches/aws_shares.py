"""Hybrid top 10 on the AWS catalog (18,378 tools, MiniLM onnx fp32) for callers allowed part of
it, three dense rules on one index side by side: the shipped one, the one before 2026-12-03
(the graph unless the caller is allowed under 10 %) and exact search. Prints, per share, how
many requests get the exact search's top 10 and the milliseconds per request (query vectors
cached first: the dense search and the fusion are timed, not the encoder). Embeds the catalog
once (about 6 minutes on 2 cores), kept in ``--vectors`` for the next run.

    pip install '.[demo,dense]' && python benches/aws_shares.py [--vectors /tmp/aws_vectors.npy]
"""

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from embedders import Prefilled  # benches/ is on the path when a script there runs

import toolsift as ts
from toolsift.catalogs import aws_catalog
from toolsift.text import dense_text

parser = argparse.ArgumentParser()
parser.add_argument("--vectors", default="/tmp/aws_vectors.npy", help="the catalog's vectors, made once")
args = parser.parse_args()

tools = list(aws_catalog())
texts = [dense_text(t) for t in tools]
inner = ts.default_embedder()
path = args.vectors
if os.path.exists(path):
    vectors = np.load(path)
else:
    t = time.perf_counter()
    vectors = inner.embed(texts)
    np.save(path, vectors)
    print(f"embedded in {time.perf_counter() - t:.0f} s")
idx = ts.Index(tools, embedder=Prefilled(inner, texts, vectors))
dense = idx._hybrid.dense
assert dense.graph is not None
requests = Path(__file__).with_name("aws_requests.jsonl").read_text(encoding="utf-8").splitlines()
queries = [json.loads(line)["query"] for line in requests if line.strip()]
queries += [t.description.split(".")[0] for t in tools[::61] if t.description]
services = sorted({p for t in tools for p in t.permissions})
rng = np.random.default_rng(0)
rules = {"shipped": (dense.exact_below, dense.exact_fraction), "before": (0, 0.1), "exact": (10**9, 0.0)}
print(f"{len(tools)} tools, {len(queries)} queries")
print("| share | tools allowed | shipped = exact | before = exact | shipped ms | before ms | exact ms |")
print("|---|---|---|---|---|---|---|")
for share in (0.8, 0.5, 0.3, 0.15):
    order = rng.permutation(services)
    perms, n = set(), 0
    count = {s: sum(1 for t in tools if s in t.permissions) for s in services}
    for s in order:
        if n >= share * len(tools):
            break
        perms.add(s)
        n += count[s]
    got, ms = {}, {}
    for q in queries:  # every query embedded once for this caller (its cache), before any timing
        idx.search(q, k=10, caller=perms)
    for name, (below, fraction) in rules.items():
        dense.exact_below, dense.exact_fraction = below, fraction
        t = time.perf_counter()
        got[name] = [[h.tool.name for h in idx.search(q, k=10, caller=perms)] for q in queries]
        ms[name] = (time.perf_counter() - t) / len(queries) * 1e3
    same = {name: sum(x == y for x, y in zip(got[name], got["exact"], strict=True)) for name in rules}
    cells = [f"{same[name]}/{len(queries)}" for name in ("shipped", "before")]
    cells += [f"{ms[name]:.2f}" for name in ("shipped", "before", "exact")]
    print(f"| {share:.2f} | {n} | " + " | ".join(cells) + " |", flush=True)
dense.exact_below, dense.exact_fraction = rules["shipped"]
