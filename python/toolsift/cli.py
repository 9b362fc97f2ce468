"""Command line: ``toolsift demo``, ``search``, ``index``, ``eval``, ``doctor`` and ``serve``.

Progress bars and tables use ``rich`` when it is installed (``pip install 'toolsift[demo]'``) and
fall back to plain text otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .catalogs import aws_catalog
from .errors import MissingExtraError, ToolsiftError
from .index import Index
from .progress import Progress
from .registry import Catalog

DEMO_QUERIES = (
    "upload a file to an S3 bucket",
    "list my running EC2 instances",
    "rotate the database password stored in secrets manager",
    "send a confirmation email to a customer",
    "invoke a lambda function asynchronously",
)


def _console() -> Any:
    try:
        from rich.console import Console
    except ImportError:
        return None
    return Console()


@contextmanager
def _progress(label: str) -> Iterator[Progress]:
    """A progress callback: a rich bar when available, else one line at the end."""
    try:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    except ImportError:
        yield lambda done, total, item: None
        print(f"{label}: done", file=sys.stderr)
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total, item: bar.update(task, completed=done, total=total, description=f"{label} {item}")


def _timed(fn: Callable[[], Any], repeat: int) -> tuple[Any, float]:
    """Result of ``fn`` and its median wall time in microseconds over ``repeat`` runs."""
    times = []
    result = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return result, sorted(times)[len(times) // 2] * 1e6


def demo(args: argparse.Namespace) -> int:
    """Index every AWS API operation in botocore and answer a few requests."""
    t0 = time.perf_counter()
    with _progress("Converting AWS service models") as progress:
        catalog = aws_catalog(progress)
    t1 = time.perf_counter()
    index = Index(catalog)
    t2 = time.perf_counter()
    stats = index.stats
    services = sorted({p for t in catalog for p in t.permissions})
    caller = services[::2] if args.half else services
    print(
        f"catalog: {stats['tools']:,} AWS operations from {len(services)} services "
        f"(loaded in {t1 - t0:.1f} s); index: {stats['terms']:,} terms, {stats['postings']:,} postings, "
        f"built in {(t2 - t1) * 1e3:.0f} ms"
    )
    print(
        f"caller holds {len(caller)} of {len(services)} service permissions; budget {args.budget_tokens} tokens, "
        f"at most {args.max_tools} tools\n"
    )
    rows = []
    for query in args.query or DEMO_QUERIES:
        select = functools.partial(
            index.select, query, caller=caller, budget_tokens=args.budget_tokens, max_tools=args.max_tools
        )
        sel, us = _timed(select, args.repeat)
        rows.append((query, _best_first(index, query, caller, sel), sel.tokens, us))
    _print_demo(rows)
    return 0


def _best_first(index: Index, query: str, caller: Sequence[str], sel: Any) -> list[tuple[str, float]]:
    """The selected tools best first, with their scores, for a person to read (the selection
    itself is in registry order, which is what keeps a prompt's prefix stable)."""
    chosen = set(sel.names)
    hits = index.search(query, k=max(len(index), 1), caller=caller) if chosen else []
    ranked = [(h.tool.name, h.score) for h in hits if h.tool.name in chosen]
    return ranked + [(n, 0.0) for n in sel.names if n not in {r for r, _ in ranked}]  # core tools


def _print_demo(rows: list[tuple[str, list[tuple[str, float]], int, float]]) -> None:
    console = _console()
    if console is None:
        for query, ranked, tokens, us in rows:
            picks = ", ".join(f"{name} ({score:.1f})" for name, score in ranked) or "-"
            print(f"{query!r}: {picks}  [{tokens} tokens, {us:.0f} µs]")
        return
    from rich.text import Text

    # a block per request, each tool on a line of its own with its score first: AWS names run to
    # 64 characters, which a table column of an 80-column terminal cut in two
    console.print(Text("selected tools, best first (score)", style="bold"))
    for query, ranked, tokens, us in rows:
        console.print()
        heading = Text(query, style="bold cyan")  # a request's text is not markup
        heading.append(f"   {len(ranked)} tools, {tokens:,} tokens, {us:.0f} µs", style="dim")
        console.print(heading)
        for name, score in ranked or [("-", 0.0)]:
            console.print(Text(f"  {score:5.1f}  {name}"), no_wrap=True, overflow="ellipsis")


def version() -> str:
    """The installed toolsift's version."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("toolsift")
    except PackageNotFoundError:  # run from a checkout without installing
        return "unknown (not installed)"


def _write_report(path: str, text: str) -> None:
    """Writes a report file atomically: a write that fails leaves the old report whole."""
    from ._atomic import write_atomic

    try:
        write_atomic(path, [text.encode("utf-8")])
    except OSError as e:
        raise ToolsiftError(f"cannot write {path}: {e.strerror or e}") from None


def _saved(path: str) -> bool:
    """Whether ``path`` is an index file (written by ``toolsift index`` or :meth:`Index.save`)."""
    from .snapshot import MAGIC

    try:
        if stat.S_ISFIFO(os.stat(path).st_mode):  # the bytes read here would be lost to the loader
            raise ToolsiftError(f"{path}: a pipe, which cannot be read twice: give a file")
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError as e:
        raise ToolsiftError(f"cannot read {path}: {e.strerror}") from None


def open_index(path: str) -> Index:
    """The index saved at ``path`` (by ``toolsift index`` or :meth:`Index.save`), or one built
    from the catalog file there (JSON or JSONL in any shape :meth:`Catalog.from_file` reads)."""
    return Index.load(path) if _saved(path) else Index(Catalog.from_file(path))


def _tools(index: Index) -> Catalog:
    """The tools of an index, as a catalog."""
    return Catalog(index.tool(i) for i in range(len(index)))


def _catalog(path: str) -> Catalog:
    """The tools of a catalog or saved index file."""
    return _tools(open_index(path))


def search(args: argparse.Namespace) -> int:
    """Select tools from a catalog or index file for one query."""
    index = open_index(args.catalog)
    group = args.group or None
    sel = index.select(
        args.query,
        caller=args.caller,
        budget_tokens=args.budget_tokens,
        max_tools=args.max_tools,
        group=group,
        groups=args.groups,
    )
    if args.format == "names":
        for name in sel.names:
            print(name)
        print(f"# {len(sel)} tools, {sel.tokens} tokens" + (f"; {sel.note}" if sel.note else ""), file=sys.stderr)
        return 0
    emit = {"openai": sel.to_openai, "anthropic": sel.to_anthropic, "mcp": sel.to_mcp}[args.format]
    print(json.dumps(emit(), indent=2, ensure_ascii=False))
    return 0


def build_index(args: argparse.Namespace) -> int:
    """Index a catalog file and save the index, for ``search``, ``eval`` or ``Index.load``."""
    index = Index(Catalog.from_file(args.catalog), statistics=args.statistics)
    try:
        index.save(args.output)
    except OSError as e:  # named by the target, not the temporary file the save wrote
        print(f"toolsift: error: cannot write {args.output}: {e.strerror or e}", file=sys.stderr)
        return 2
    size = Path(args.output).stat().st_size
    print(f"{args.output}: {len(index):,} tools, {size:,} bytes", file=sys.stderr)
    return 0


def evaluate(args: argparse.Namespace) -> int:
    """Score toolsift and the baselines on a labelled dataset."""
    from . import eval as ev

    if args.min_evidence is not None and (args.replay is not None or "toolsift" not in args.systems):
        raise ToolsiftError(
            "--min-evidence runs toolsift with the gate beside toolsift: not with --replay, "
            "and only when --systems includes toolsift"
        )
    makers: dict[str, Callable[[ev.Dataset], ev.System | None]] = {"toolsift": ev.toolsift_system, **ev.BASELINES}
    saved = False
    if args.dataset == "bfcl":
        extra = ev.BFCL_IRRELEVANCE if args.irrelevance else ()
        dataset = ev.load_bfcl((*ev.BFCL_SINGLE_TURN, *extra))
    elif args.irrelevance:
        raise ToolsiftError("--irrelevance adds BFCL's irrelevance categories: use it with --dataset bfcl")
    elif args.tools and args.queries:
        opened = open_index(args.tools)
        dataset = ev.load_files(args.tools, args.queries, catalog=_tools(opened))
        if _saved(args.tools):  # ranked as saved: its options, learned text and gate
            if args.min_evidence is not None or args.replay is not None:
                raise ToolsiftError(
                    "--min-evidence and --replay build indexes of their own from the tools, not the saved "
                    "index's options: give the catalog file instead"
                )
            makers["toolsift"] = functools.partial(ev.toolsift_system, saved=opened)
            saved = True
    elif args.gateway_log:
        dataset = ev.load_gateway_log(args.gateway_log)
    else:
        raise ToolsiftError("give --dataset bfcl, both --tools FILE and --queries FILE, or --gateway-log FILE")
    # requests no tool fits score the relevance gate, not the rankings
    irrelevant = [q for q in dataset.queries if not q.relevant]
    dataset.queries = [q for q in dataset.queries if q.relevant]
    replayed = None
    if args.replay is not None:  # toolsift as built and with what the log taught, on the rest
        with _progress("Playing the log") as progress:
            replayed = ev.replay(dataset, args.replay, seed=args.seed, progress=lambda d, t: progress(d, t, ""))
        dataset = replayed.scored
        named: list[tuple[str, ev.System | None]] = [(s.name, s) for s in replayed.systems]
    else:
        named = [(name, makers[name](dataset)) for name in args.systems]
        if args.min_evidence is not None and "toolsift" in args.systems:
            gated = ev.toolsift_system(dataset, min_evidence=args.min_evidence)
            gated.name = f"toolsift, min_evidence {args.min_evidence:g}"
            named.insert(args.systems.index("toolsift") + 1, (gated.name, gated))
    results = []
    for name, system in named:
        if system is None:
            print(f"skipping {name}: its packages are not installed (pip install '.[eval,dense]')", file=sys.stderr)
            continue
        with _progress(f"Evaluating {name}") as progress:
            results.append(
                ev.evaluate(system, dataset, budget_tokens=args.budget_tokens, progress=lambda d, t: progress(d, t, ""))
            )
    print(ev.markdown(results, dataset))
    gate_rows: list[Any] = []
    if irrelevant and saved:
        print(
            f"no relevance gate table (requests without a relevant tool: {len(irrelevant):,}): it builds "
            "indexes of its own, not the saved index's; give the catalog file for it",
            file=sys.stderr,
        )
    elif irrelevant and replayed is None:
        from .eval.gate import gate
        from .eval.gate import markdown as gate_markdown

        floors = [None] if args.min_evidence is None else [None, args.min_evidence]
        with _progress("Relevance gate"):
            gate_rows = [gate(dataset, irrelevant, min_evidence=f) for f in floors]
        print(gate_markdown(gate_rows))
    if replayed is not None:
        order = "shuffled with seed " + str(args.seed) if args.seed is not None else "in the dataset's order"
        print(
            f"\nReplay: the first {replayed.played:,} requests ({order}) played as the log; "
            f"{replayed.learned_tools:,} tools learned words; the other {len(dataset.queries):,} scored."
        )
    if args.json:
        _write_report(args.json, ev.to_json(results, dataset, gate=gate_rows))
    if args.report:
        from .eval.report import html_report, token_curve

        with _progress("Token curve"):
            curve = token_curve(dataset, args.budget_tokens)
        _write_report(args.report, html_report(results, dataset, curve))
        print(f"report: {args.report}", file=sys.stderr)
    return 0


def run_doctor(args: argparse.Namespace) -> int:
    """Findings a catalog owner should act on (see :mod:`toolsift.doctor`)."""
    from . import eval as ev
    from .doctor import doctor
    from .errors import InvalidParameterError, SnapshotError
    from .usage import RedisUsageStore, UsageStore

    started = time.perf_counter()
    if bool(args.catalog) == bool(args.dataset):
        raise ToolsiftError("give a CATALOG file or --dataset (bfcl or aws), not both")
    queries: ev.Dataset | None = None
    if args.dataset == "bfcl":
        queries = ev.load_bfcl()
        catalog = queries.catalog
    elif args.dataset == "aws":
        with _progress("Converting AWS service models") as progress:
            catalog = aws_catalog(progress)
    else:
        catalog = _catalog(args.catalog)
    if args.queries:
        queries = ev.load_files(args.catalog or "catalog", args.queries, catalog=catalog)
    elif args.gateway_log:
        queries = ev.load_gateway_log(args.gateway_log, catalog=catalog)
    index = Index.load(args.index) if args.index else None
    usage: UsageStore | RedisUsageStore | None = None
    if args.usage and args.usage.startswith(("redis://", "rediss://", "unix://")):
        usage = RedisUsageStore(args.usage, prefix=args.usage_prefix)  # a gateway cluster's counts, read
    elif args.usage:
        if not Path(args.usage).is_file():
            raise ToolsiftError(f"{args.usage}: no such usage database")
        usage = UsageStore(args.usage, read_only=True)  # a report: the file is left as it is
    caller = args.caller if args.caller or args.public else None
    try:
        checkup = doctor(catalog, index=index, queries=queries, usage=usage, for_caller=caller, k=args.k)
    except InvalidParameterError as e:
        raise SnapshotError(f"{args.index}: {e}") if args.index else e from None
    finally:
        if usage is not None:
            usage.close()
    _print_checkup(checkup, args.limit)
    print(f"doctor: {checkup.tools:,} tools checked in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    if args.json:
        _write_report(args.json, checkup.to_json() + "\n")
    if args.html:
        _write_report(args.html, checkup.to_html())
    return 0


def _print_checkup(checkup: Any, limit: int) -> None:
    """The first ``limit`` findings of each kind as rich tables (plain lines without rich), then
    one line counting every kind."""
    console = _console()
    counts = {kind: n for kind, n in checkup.counts().items() if n}
    for kind, n in counts.items():
        shown = checkup.of(kind)[:limit]
        if not shown:
            continue
        more = f" (first {len(shown)})" if n > len(shown) else ""
        if console is None:
            print(f"{kind}: {n:,}{more}")
            for d in shown:
                print(f"  {', '.join(d.tools)}: {d.why}\n    fix: {d.fix}")
            continue
        from rich.table import Table
        from rich.text import Text

        fixes = {d.fix for d in checkup.of(kind)}
        common = f"\nfix: {fixes.pop()}" if len(fixes) == 1 else ""
        # cells as plain text: a tool's name or the text a finding quotes is the catalog's own, and
        # rich would read "[/b]" in it as markup (a crash) or "[red]" as a style
        table = Table(title=Text(f"{kind}: {n:,}{more}{common}"), show_lines=True, title_justify="left")
        table.add_column("tools", ratio=2, overflow="fold")
        table.add_column("why", ratio=3)
        if not common:
            table.add_column("fix", ratio=2)
        for d in shown:
            table.add_row(*map(Text, ("\n".join(d.tools), d.why, *([] if common else [d.fix]))))
        console.print(table)
    found = ", ".join(f"{n:,} {kind}" for kind, n in counts.items()) or "no findings"
    print(f"{checkup.tools:,} tools, {checkup.queries:,} requests: {found}")


def serve(args: argparse.Namespace) -> int:
    """Run the MCP gateway described by a TOML config."""
    import os
    import signal

    from .gateway import load_config

    config = load_config(args.config)
    overrides = {k: v for k, v in (("transport", args.transport), ("host", args.host), ("port", args.port)) if v}
    if args.port == 0:
        overrides["port"] = 0
    if args.reuse_port:
        overrides["reuse_port"] = True
    if overrides:
        import dataclasses

        config = dataclasses.replace(config, **overrides)
    if args.replicas != 1:
        from .gateway.supervisor import check, supervise

        check(config, args.replicas)
        options = [("--config", args.config), ("--transport", args.transport), ("--host", args.host)]
        passed = [x for option in options if option[1] for x in option] + (["--verbose"] if args.verbose else [])
        return supervise(config, args.replicas, passed)
    try:  # the MCP SDK only here: a supervisor of replicas does not need it (2.5 s of imports)
        import anyio

        from .gateway.server import Gateway
    except ImportError as e:
        raise MissingExtraError(f"the gateway needs the MCP SDK: pip install 'toolsift[gateway]' ({e})") from None
    token = args.token or os.environ.get("TOOLSIFT_TOKEN")
    gateway = Gateway(config, token=token if config.transport == "stdio" else None)

    async def until_terminated() -> None:
        """The gateway until it stops or SIGTERM comes (systemd, Docker, a supervisor): then it
        is cancelled, so that it shuts down as on Ctrl-C (the cluster lock given up, the usage
        queue flushed, its temporary files removed) instead of dying where it stands."""
        async with anyio.create_task_group() as tg:

            async def on_sigterm() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM) as received:
                    async for _ in received:
                        tg.cancel_scope.cancel()

            tg.start_soon(on_sigterm)
            await gateway.run()
            tg.cancel_scope.cancel()

    try:
        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(until_terminated)
    except Exception as group:  # a task group's (an exception group): toolsift's own error is said as such
        if not isinstance(getattr(group, "exceptions", None), tuple):
            raise
        raise next(_leaves(group)) from None
    return 0


def _leaves(error: BaseException) -> Iterator[BaseException]:
    """The exceptions a group holds, at any depth, toolsift's own first."""
    found: list[BaseException] = []
    stack = [error]
    while stack:
        e = stack.pop()
        inner = getattr(e, "exceptions", None)  # BaseExceptionGroup (the exceptiongroup backport before 3.11)
        if isinstance(inner, tuple):
            stack.extend(reversed(inner))
        else:
            found.append(e)
    yield from sorted(found, key=lambda e: not isinstance(e, ToolsiftError))


class _Renamed(argparse.Action):
    """The old spelling of an option that was renamed: still accepted, with a note on stderr
    that names the new spelling, so a script written for the old one keeps working."""

    def __init__(self, option_strings: Sequence[str], dest: str, new: str = "", **kwargs: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, type=_at_least(0), help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: str | None = None) -> None:
        print(f"toolsift: {option} is now {self.new} (the old spelling will be removed)", file=sys.stderr)
        setattr(namespace, self.dest, values)


def _at_least(low: int) -> Callable[[str], int]:
    """An argparse ``type``: an int >= ``low``, checked before any work starts."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, not {value}")
        return value

    parse.__name__ = f"int >= {low}"
    return parse


def _renamed(parser: argparse.ArgumentParser, *pairs: str) -> None:
    """Registers each ``old, new`` pair of option names as a :class:`_Renamed` alias of ``new``."""
    for old, new in zip(pairs[::2], pairs[1::2], strict=True):
        parser.add_argument(old, dest=new.lstrip("-").replace("-", "_"), action=_Renamed, new=new)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toolsift", description="Pick the tools an LLM agent sees.")
    parser.add_argument("--version", action="version", version=f"toolsift {version()}")
    verbose = "log what takes time (builds, embedding progress) to stderr"
    parser.add_argument("-v", "--verbose", action="store_true", help=verbose)
    # also after the command (`toolsift eval -v`); SUPPRESS keeps a command's default from
    # overwriting a -v given before it
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=verbose)
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser(
        "demo", parents=[common], help="index the ~18k AWS API operations in botocore and answer a few requests"
    )
    d.add_argument("query", nargs="*", help="requests to answer (default: a few examples)")
    d.add_argument("--budget-tokens", type=_at_least(0), default=4000, help="token budget per request (default 4000)")
    d.add_argument("--max-tools", type=_at_least(0), default=8, help="most tools selected per request (default 8)")
    _renamed(d, "--budget", "--budget-tokens", "-k", "--max-tools")
    d.add_argument("--half", action="store_true", help="caller holds only every other service's permission")
    d.add_argument("--repeat", type=_at_least(1), default=200, help="selections timed per request (default 200)")
    d.set_defaults(run=demo)
    s = sub.add_parser("search", parents=[common], help="select tools from a catalog or saved index file for a query")
    s.add_argument(
        "catalog", help="catalog file (JSON or JSONL in toolsift, MCP, OpenAI or Anthropic shape) or saved index"
    )
    s.add_argument("query")
    s.add_argument("--caller", action="append", default=[], metavar="PERM", help="a permission the caller holds")
    s.add_argument("--budget-tokens", type=_at_least(0), default=None, help="token budget (default: unlimited)")
    s.add_argument(
        "--max-tools", type=_at_least(0), default=10, help="most tools selected besides core ones (default 10)"
    )
    _renamed(s, "--budget", "--budget-tokens", "-k", "--max-tools")
    s.add_argument("--format", choices=("names", "openai", "anthropic", "mcp"), default="names")
    s.add_argument("--group", action="append", default=[], metavar="GROUP", help="only tools of this group")
    s.add_argument(
        "--groups", type=_at_least(1), default=None, metavar="N", help="hierarchical: the N best groups first"
    )
    s.set_defaults(run=search)
    b = sub.add_parser(
        "index", parents=[common], help="index a catalog file and save the index (loads in milliseconds)"
    )
    b.add_argument("catalog", help="catalog file: JSON or JSONL in toolsift, MCP, OpenAI or Anthropic shape")
    b.add_argument("-o", "--output", required=True, help="index file to write (atomically)")
    b.add_argument("--statistics", choices=("shared", "caller"), default="shared", help="see Index(statistics=...)")
    b.set_defaults(run=build_index)
    e = sub.add_parser(
        "eval", parents=[common], help="score retrieval on a labelled dataset, with baselines side by side"
    )
    e.add_argument("--dataset", choices=("bfcl",), help="a public benchmark (downloaded once into the cache)")
    e.add_argument("--tools", help="catalog or saved index file (with --queries)")
    e.add_argument("--queries", help='JSONL of {"id", "query", "relevant": [names], "category"?, "available"?}')
    e.add_argument("--gateway-log", metavar="FILE", help="a gateway's JSONL log: searches labelled by the calls after")
    systems = ("toolsift", "bm25s", "rank_bm25", "dense", "hybrid")
    e.add_argument(
        "--systems",
        nargs="+",
        default=list(systems),
        choices=(*systems, "hybrid-int8"),
        help="dense, hybrid, hybrid-int8 (queries through int8 weights, not run by default): need the dense extra",
    )
    e.add_argument(
        "--budget-tokens", type=_at_least(0), default=2000, help="token budget for the selection figures (default 2000)"
    )
    _renamed(e, "--budget", "--budget-tokens")
    e.add_argument(
        "--irrelevance",
        action="store_true",
        help="bfcl: add its irrelevance categories (their functions join the catalog, 3,417 tools, "
        "so the main table ranks over more) and score the relevance gate",
    )
    e.add_argument(
        "--min-evidence",
        type=float,
        metavar="X",
        help="also run toolsift with the relevance gate Index(min_evidence=X)",
    )
    e.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    e.add_argument("--report", metavar="FILE", help="also write an HTML report with charts (needs matplotlib)")
    e.add_argument(
        "--replay",
        type=float,
        metavar="FRACTION",
        help="learning from use: play the first FRACTION of the requests as the log, score the rest with and without",
    )
    e.add_argument("--seed", type=int, default=None, help="with --replay: shuffle the requests with this seed first")
    e.set_defaults(run=evaluate)
    r = sub.add_parser(
        "doctor", parents=[common], help="what to fix in a catalog: confusable, unreachable, vague tools, misses, pins"
    )
    r.add_argument("catalog", nargs="?", help="catalog file (any shape `search` reads) or saved index")
    r.add_argument("--dataset", choices=("bfcl", "aws"), help="BFCL (with its queries) or the demo's AWS catalog")
    source = r.add_mutually_exclusive_group()
    source.add_argument("--queries", metavar="FILE", help='labelled requests: JSONL of {"query", "relevant": [names]}')
    source.add_argument("--gateway-log", metavar="FILE", help="a gateway's JSONL log: searches and the calls after")
    r.add_argument("--index", metavar="FILE", help="a saved index of the catalog to rank with (its options)")
    r.add_argument(
        "--usage",
        metavar="FILE|URL",
        help="usage counts for pin suggestions: a UsageStore SQLite file, or a gateway cluster's Redis (redis://...)",
    )
    r.add_argument(
        "--usage-prefix",
        default="toolsift",
        metavar="NAME",
        help="with a Redis --usage: its key prefix ([cluster] prefix)",
    )
    r.add_argument("--caller", action="append", default=[], metavar="PERM", help="check only this caller's tools")
    r.add_argument("--public", action="store_true", help="check only the public tools (no permission needed)")
    r.add_argument("-k", type=_at_least(1), default=5, help="shortlist size for reachability and misses (default 5)")
    r.add_argument(
        "--limit", type=_at_least(0), default=10, help="findings printed per kind (default 10; files get all)"
    )
    r.add_argument("--json", metavar="FILE", help="also write every finding as JSON")
    r.add_argument("--html", metavar="FILE", help="also write every finding as an HTML page")
    r.set_defaults(run=run_doctor)
    g = sub.add_parser(
        "serve", parents=[common], help="run the MCP gateway: upstream MCP servers behind tool_search + call_tool"
    )
    g.add_argument("--config", required=True, help="gateway TOML file (see README)")
    g.add_argument("--transport", choices=("http", "stdio"), help="override [gateway] transport")
    g.add_argument("--host", help="override [gateway] host")
    g.add_argument("--port", type=int, help="override [gateway] port (0: any free port)")
    g.add_argument("--token", help="stdio transport: the caller's token (default: $TOOLSIFT_TOKEN)")
    g.add_argument(
        "--replicas",
        type=_at_least(1),
        default=1,
        help="run N gateway processes on one port (SO_REUSEPORT; needs [cluster])",
    )
    g.add_argument("--reuse-port", action="store_true", help=argparse.SUPPRESS)  # set for each replica
    g.set_defaults(run=serve)
    return parser


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler ``--verbose`` adds (one, however often :func:`main` runs in a process)."""


def _log_to_stderr() -> None:
    """The ``toolsift`` loggers at INFO on stderr (``--verbose``), not also passed up to the
    root logger's handlers."""
    root = logging.getLogger("toolsift")
    if not any(isinstance(h, _Stderr) for h in root.handlers):
        handler = _Stderr(sys.stderr)
        handler.setFormatter(logging.Formatter("toolsift: %(message)s"))
        root.addHandler(handler)
    root.setLevel(logging.INFO)
    root.propagate = False


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.verbose:
        _log_to_stderr()
    try:
        return int(args.run(args))
    except ToolsiftError as e:
        print(f"toolsift: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a path that cannot be read or written: said, not a traceback
        print(f"toolsift: error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
