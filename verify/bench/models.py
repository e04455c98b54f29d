"""What the bench lowers: the model references `verify bench --models` accepts.

Every reference `verify run` accepts (a built-in name from generators.models, `file.py:factory`,
`module:factory`, `graphspec:FILE`), plus `randomN:SEED`: a random graph of exactly N ops from
generators.random's vocabulary, the same graph for the same N and SEED (and vocabulary). The
bench needs graphs of a fixed size (the small-graph regime of `verify run --random`, where
fixed costs dominate), which a Hypothesis draw does not give reproducibly from a seed: the
first example of a seeded draw is the simplest one whatever the seed. So the genes are drawn
from `random.Random(SEED)` and turned into a graph by `generators.random.interpret`, which is
valid for any genes. The graph is saved as JSON and lowered as `graphspec:FILE`, so a worker
builds it through the same path as any saved random graph.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RANDOM_REFERENCE = re.compile(r"random(?P<ops>\d+):(?P<seed>\d+)")
MAX_RANDOM_OPS = 40  # generators.random.graphs' own default ceiling
# x0 = [1, C, H, W] in the ranges generators.random.graphs draws (C <= 8, even H <= 12, 2 <= W <= 12).
_CHANNELS, _HALF_HEIGHTS, _WIDTHS = range(1, 9), range(1, 7), range(2, 13)
_SELECTOR, _PARAMS = 2**16, 2**32  # the gene integers' ranges in generators.random's strategy


@dataclass(frozen=True)
class BenchModel:
    """A model as the user named it, and the reference a worker builds it from."""

    name: str
    worker_reference: str
    graph_spec: dict[str, Any] | None = None  # a random graph's GraphSpec.to_dict()


def random_reference(name: str) -> tuple[int, int] | None:
    """(ops, seed) of a `randomN:SEED` reference, None for any other reference."""
    match = RANDOM_REFERENCE.fullmatch(name)
    return (int(match["ops"]), int(match["seed"])) if match else None


def usage_problem(name: str) -> str | None:
    """What is wrong with a bench model reference on its face (before any work), or None."""
    from verify.cases import usage_problem as run_usage_problem

    if name.startswith("random") and ":" in name and not name.endswith(".py") and "/" not in name:
        parsed = random_reference(name)
        if parsed is None:
            return f"model {name!r}: a random graph is 'randomN:SEED' (N ops, SEED an integer), e.g. random10:1"
        if not 1 <= parsed[0] <= MAX_RANDOM_OPS:
            return f"model {name!r}: a random graph has 1 to {MAX_RANDOM_OPS} ops, not {parsed[0]}"
        return None
    return run_usage_problem(name)


def random_graph(ops: int, seed: int):
    """The GraphSpec of `randomN:SEED`: one input, `ops` genes drawn from Random(seed)."""
    from generators.random import interpret, ops_in_vocabulary

    vocabulary = list(ops_in_vocabulary())  # registry order: deterministic, quarantined ops left out
    draw = random.Random(seed)
    shape = (1, draw.choice(_CHANNELS), 2 * draw.choice(_HALF_HEIGHTS), draw.choice(_WIDTHS))
    genes = [(draw.choice(vocabulary), draw.randrange(_SELECTOR), draw.randrange(_PARAMS)) for _ in range(ops)]
    return interpret([shape], genes, seed)


def resolve(name: str, folder: Path) -> BenchModel:
    """The model a worker builds for `name`; a random graph is written to `folder` first."""
    parsed = random_reference(name)
    if parsed is None:
        return BenchModel(name, name)
    from verify.report.atomic import write_text

    spec = random_graph(*parsed)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"random{parsed[0]}-{parsed[1]}-{spec.fingerprint()}.json"
    write_text(path, spec.to_json(indent=1))
    return BenchModel(name, f"graphspec:{path}", spec.to_dict())
