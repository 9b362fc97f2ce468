"""Writes a workload of ``workloads.py`` as a plain text file for the Rust examples
(``examples/ranking_bench.rs``, ``examples/tuning_ab.rs``, ``--workload FILE``), so that they
time the core on the same tools, texts, permissions, costs, queries and caller as the Python
benches, with the field weights and ``k1`` that ``toolsift.Index`` uses by default:

    python benches/export_workload.py aws-100k /tmp/aws-100k.tsv

Format, one record a line, fields separated by tabs (tabs and line breaks in texts become
spaces): ``P  k1  prefix_weight  weights,...  b,...``; then ``T  cost  core  perms  field...``
per tool (permissions joined by ``\\x1f``); ``Q  text`` per query; ``C  permission`` per
permission the caller holds.
"""

from __future__ import annotations

import argparse

import toolsift as ts
from toolsift._core import DEFAULT_K1, DEFAULT_PREFIX_WEIGHT
from toolsift.text import field_params, tool_fields
from workloads import NAMED

WORKLOADS = NAMED


def _clean(text: str) -> str:
    return text.replace("\t", " ").replace("\r", " ").replace("\n", " ")


def _tool(tool: ts.Tool) -> str:
    perms = "\x1f".join(tool.permissions)
    fields = "\t".join(_clean(f) for f in tool_fields(tool))
    return f"T\t{tool.cost_tokens}\t{int(tool.core)}\t{perms}\t{fields}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("path")
    args = parser.parse_args()
    work = WORKLOADS[args.workload]()
    weights, bs = field_params(None, None)
    with open(args.path, "w", encoding="utf-8") as out:
        out.write(
            f"P\t{DEFAULT_K1}\t{DEFAULT_PREFIX_WEIGHT}\t{','.join(map(str, weights))}\t{','.join(map(str, bs))}\n"
        )
        for tool in work.tools:
            out.write(_tool(tool) + "\n")
        for query in work.queries:
            out.write(f"Q\t{_clean(query)}\n")
        for perm in work.caller:
            out.write(f"C\t{perm}\n")
    print(f"{args.workload}: {len(work.tools)} tools, {len(work.queries)} queries -> {args.path}")


if __name__ == "__main__":
    main()
