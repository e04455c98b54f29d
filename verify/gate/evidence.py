"""What one piece of gate evidence is: a *distinct* drawn graph.

Hypothesis repeats itself: its generation replays and mutates what it drew, and with a narrow
vocabulary (`--ops`, a pass with few targeted ops) the same graph comes back many times in a row
(issue 43 saw `abs,abs,abs,mul` six times running, and 26-36 distinct op lists among 60
examples per feature). Counted once per draw, such a run reads "evidence 60/5" while it tested a
handful of graphs. So the gate keys every drawn graph by its structure and counts an example as
evidence for a feature only the first time its structure acts (`verdict.Evidence.add`).

The key is the graph's structure, not its fingerprint: the ops, their edges (input value ids),
their parameters (the args the op is called with), every value's shape, and the graph's inputs
and outputs. Dtypes are part of it through the ops: the vocabulary presents a non-float dtype
only through ops of its own (`int_add`, `bool_mul`, ...), and the graph inputs are float32.
The seed is not: it draws the weights and input values, which a pass's rewrite does not see
(the gate compares graphs stock vs fastpass; values change no structure a pass matches on)."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def structural_key(spec: Any) -> str:
    """A short digest of `spec`'s structure (a `generators.random.GraphSpec`): equal for two
    graphs that differ only in their seed, different when any op, edge, parameter or shape
    differs."""
    body = {
        "inputs": [list(shape) for shape in spec.input_shapes],
        "ops": [[rec.op, list(rec.inputs), [[k, v] for k, v in rec.params], list(rec.shape)] for rec in spec.ops],
        "outputs": list(spec.outputs),
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=repr).encode()).hexdigest()[:16]
