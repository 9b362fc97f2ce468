"""Catalogs, queries and callers shared by the benchmark suite and the comparison script.

* ``zipf(n)``: a synthetic catalog of ``n`` tools whose 10-30 word descriptions are drawn from a
  20,000-word vocabulary with Zipf-distributed frequencies; 4-8 word queries drawn the same way;
  20 permission groups of which the caller holds half.
* ``aws(n)``: the ~18,000 AWS API operations in botocore (the demo catalog), with natural-language
  requests; the caller holds every other service's permission. With ``n`` below the catalog size
  a fixed random sample of ``n`` operations (registry order kept); above it, the catalog repeated
  (copies renamed ``<name>_<copy>``) up to ``n`` tools.

Both engines see the same text, permissions and token costs ((name + description + schema
bytes) / 4 + 1, the seed's estimate) so that only the algorithms differ.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import toolsift as ts

BUDGET = 4000
SYLLABLES = [c + v for c in "bdfgklmnprtvz" for v in "aeiou"]

AWS_QUERIES = [
    "upload a file to an S3 bucket",
    "list my running EC2 instances",
    "rotate the database password stored in secrets manager",
    "send a confirmation email to a customer",
    "invoke a lambda function asynchronously",
    "create a new DynamoDB table with on demand capacity",
    "publish a message to an SNS topic",
    "read messages from an SQS queue",
    "stop a running RDS database instance",
    "get the current cost and usage for this month",
    "create an IAM user and attach a policy",
    "describe the autoscaling groups in my account",
    "start a step functions state machine execution",
    "invalidate the CloudFront cache for a distribution",
    "translate text from English to French",
    "detect faces in an image",
    "get the logs of a CloudWatch log group",
    "register a new domain name",
    "scale an ECS service to five tasks",
    "tag all resources of a stack",
]


@dataclass(frozen=True)
class Workload:
    name: str
    tools: list[ts.Tool]
    queries: list[str]
    caller: tuple[str, ...]  # immutable, as a gateway would keep a session's permissions

    @functools.cached_property
    def index(self) -> ts.Index:
        return ts.Index(self.tools)

    @functools.cached_property
    def seed(self):  # type: ignore[no-untyped-def]
        from toolsift_seedref import SeedIndex

        t = self.tools
        return SeedIndex(
            [x.name for x in t],
            [x.description for x in t],
            [x.permissions[0] if x.permissions else "" for x in t],
            [len(json.dumps(x.parameters)) for x in t],
            [x.core for x in t],
        )


def _words(count: int, rng: np.random.Generator) -> list[str]:
    out: set[str] = set()
    while len(out) < count:
        out.add("".join(rng.choice(SYLLABLES, size=int(rng.integers(2, 5)))))
    return sorted(out)


@functools.cache
def zipf(n: int, seed: int = 7) -> Workload:
    rng = np.random.default_rng(seed)
    vocab = np.array(_words(20_000, rng))
    p = 1.0 / np.arange(1, len(vocab) + 1) ** 1.07
    p /= p.sum()

    def text(lo: int, hi: int) -> str:
        return " ".join(rng.choice(vocab, size=int(rng.integers(lo, hi + 1)), p=p))

    schema = {"type": "object", "properties": {"id": {"type": "string"}}}
    tools = []
    for i in range(n):
        name = f"{'_'.join(rng.choice(vocab[:2000], size=2))}_{i}"
        desc = text(10, 30)
        cost = (len(name) + len(desc) + len(json.dumps(schema))) // 4 + 1
        tools.append(ts.Tool(name, desc, schema, permissions=f"group{i % 20}", cost_tokens=cost))
    queries = [text(4, 8) for _ in range(200)]
    return Workload(f"zipf-{n // 1000}k", tools, queries, tuple(f"group{g}" for g in range(0, 20, 2)))


@functools.cache
def _aws_tools() -> tuple[ts.Tool, ...]:
    from toolsift.catalogs import aws_catalog

    base = []
    for t in aws_catalog():
        cost = (len(t.name) + len(t.description) + len(json.dumps(t.parameters))) // 4 + 1
        base.append(ts.Tool(t.name, t.description, t.parameters, permissions=t.permissions, cost_tokens=cost))
    return tuple(base)


def aws_size() -> int:
    """Operations in the botocore catalog."""
    return len(_aws_tools())


@functools.cache
def aws(n: int | None = None) -> Workload:
    base = _aws_tools()
    n = len(base) if n is None else n
    if n <= len(base):
        keep = np.sort(np.random.default_rng(11).choice(len(base), size=n, replace=False))
        tools = [base[i] for i in keep]
    else:
        tools = [
            t if copy == 0 else dataclasses.replace(t, name=f"{t.name}_{copy}")
            for copy in range(-(-n // len(base)))
            for t in base
        ][:n]
    services = sorted({p for t in base for p in t.permissions})
    return Workload(f"aws-{len(tools) // 1000}k", tools, AWS_QUERIES, tuple(services[::2]))


#: The workloads by the names the benchmarks print (``aws-18k`` is the whole botocore catalog).
NAMED: dict[str, Callable[[], Workload]] = {
    "aws-10k": lambda: aws(10_000),
    "aws-18k": lambda: aws(),
    "aws-100k": lambda: aws(100_000),
    "zipf-10k": lambda: zipf(10_000),
    "zipf-100k": lambda: zipf(100_000),
}
