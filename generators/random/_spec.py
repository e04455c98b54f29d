"""GraphSpec: a frozen, JSON-able description of a DAG of ops over tracked shapes."""

from __future__ import annotations

import hashlib
import json
import linecache
from dataclasses import dataclass
from typing import Any

from . import _ops

FORMAT_VERSION = 1


def _freeze(v):
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    return v


def _thaw(v):
    if isinstance(v, tuple):
        return [_thaw(x) for x in v]
    return v


@dataclass(frozen=True)
class OpRecord:
    """One op: ``op`` name, value ids it consumes (primary first), params, and its output shape."""

    op: str
    inputs: tuple
    params: tuple  # sorted ((key, value), ...) with lists frozen to tuples
    shape: tuple

    @staticmethod
    def make(op: str, inputs, params: dict, shape) -> "OpRecord":
        return OpRecord(op, tuple(int(i) for i in inputs),
                        tuple(sorted((k, _freeze(v)) for k, v in params.items())),
                        tuple(int(d) for d in shape))

    @property
    def param_dict(self) -> dict:
        return {k: _thaw(v) for k, v in self.params}


@dataclass(frozen=True)
class GraphSpec:
    """A DAG: graph inputs (ids ``0..len(input_shapes)-1``) then one value per op, in order.

    Op ``k`` produces value id ``len(input_shapes) + k`` and may only consume smaller ids.
    ``outputs`` are value ids returned (as a tuple) by ``forward``.  ``seed`` seeds the weights
    and the example inputs, so ``build()`` is deterministic.
    """

    input_shapes: tuple
    ops: tuple
    outputs: tuple
    seed: int = 0

    # ---- basic protocol ---------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.ops)

    @property
    def n_inputs(self) -> int:
        return len(self.input_shapes)

    def value_shapes(self) -> list:
        return [tuple(s) for s in self.input_shapes] + [op.shape for op in self.ops]

    def value_name(self, vid: int) -> str:
        return f"x{vid}" if vid < self.n_inputs else f"v{vid - self.n_inputs}"

    def op_names(self) -> list:
        return [op.op for op in self.ops]

    def is_chain(self) -> bool:
        """True iff each op consumes only the previous value (no fan-out, no reuse, one output)."""
        for k, op in enumerate(self.ops):
            prev = self.n_inputs + k - 1 if k else 0
            if any(i != prev for i in op.inputs):
                return False
        return len(self.outputs) == 1

    def validate(self) -> None:
        n = self.n_inputs
        if n < 1:
            raise ValueError("a GraphSpec needs at least one input")
        for k, op in enumerate(self.ops):
            if op.op not in _ops.REGISTRY:
                raise ValueError(f"op {k}: unknown op {op.op!r}")
            if not op.inputs or any(not (0 <= i < n + k) for i in op.inputs):
                raise ValueError(f"op {k}: inputs {op.inputs} must reference earlier values")
        if not self.outputs or any(not (0 <= i < n + len(self.ops)) for i in self.outputs):
            raise ValueError(f"bad outputs {self.outputs}")

    # ---- serialisation ------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "format": FORMAT_VERSION,
            "seed": self.seed,
            "input_shapes": [list(s) for s in self.input_shapes],
            "ops": [{"op": o.op, "inputs": list(o.inputs), "params": o.param_dict, "shape": list(o.shape)}
                    for o in self.ops],
            "outputs": list(self.outputs),
        }

    def to_json(self, indent=None) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict) -> "GraphSpec":
        if d.get("format", FORMAT_VERSION) != FORMAT_VERSION:
            raise ValueError(f"unsupported GraphSpec format {d.get('format')}")
        spec = cls(
            input_shapes=tuple(tuple(int(x) for x in s) for s in d["input_shapes"]),
            ops=tuple(OpRecord.make(o["op"], o["inputs"], o["params"], o["shape"]) for o in d["ops"]),
            outputs=tuple(int(i) for i in d["outputs"]),
            seed=int(d.get("seed", 0)),
        )
        spec.validate()
        return spec

    @classmethod
    def from_json(cls, s: str) -> "GraphSpec":
        return cls.from_dict(json.loads(s))

    def fingerprint(self) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:12]

    # ---- human-readable -----------------------------------------------------------------------
    def describe(self) -> str:
        lines = [f"GraphSpec({len(self)} ops, seed={self.seed})"]
        for i, s in enumerate(self.input_shapes):
            lines.append(f"  x{i}: input {list(s)}")
        for k, op in enumerate(self.ops):
            args = ", ".join(self.value_name(i) for i in op.inputs)
            ps = ", ".join(f"{k2}={v!r}" for k2, v in op.param_dict.items())
            lines.append(f"  v{k} = {op.op}({args}{', ' if ps else ''}{ps}) -> {list(op.shape)}")
        lines.append("  return " + ", ".join(self.value_name(i) for i in self.outputs))
        return "\n".join(lines)

    def __repr__(self) -> str:  # keep failure output readable and replayable
        return f"GraphSpec.from_json({self.to_json()!r})"

    # ---- code generation ----------------------------------------------------------------------
    def to_python(self) -> str:
        """Source of a standalone reproducer (needs only torch) defining ``make_model()``."""
        self.validate()
        shapes = self.value_shapes()
        init, fwd = [], []
        for k, op in enumerate(self.ops):
            d = _ops.REGISTRY[op.op]
            args = [self.value_name(i) for i in op.inputs]
            expr, consts = d.emit(args, op.param_dict, [shapes[i] for i in op.inputs])
            names = {}
            for suffix, shape, lo, hi, is_buffer in consts:
                attr = f"{op.op}{k}_{suffix}"
                names[suffix] = attr
                if isinstance(lo, (list, tuple)):  # a literal tensor: (values, dtype) - indices, masks
                    t = f"torch.tensor({list(lo)!r}, dtype=torch.{hi}).reshape({_ops._fmt(tuple(shape))})"
                else:
                    t = f"_uniform(g, {_ops._fmt(tuple(shape))}, {float(lo)!r}, {float(hi)!r})"
                if is_buffer:
                    init.append(f"self.register_buffer({attr!r}, {t})")
                else:
                    init.append(f"self.{attr} = nn.Parameter({t})")
            if consts:
                expr = expr.format(**names)
            fwd.append(f"v{k} = {expr}  # {op.op} -> {list(op.shape)}")
        ins = ", ".join(self.value_name(i) for i in range(self.n_inputs))
        outs = ", ".join(self.value_name(i) for i in self.outputs)
        in_t = ", ".join(f"_uniform(g, {_ops._fmt(tuple(s))}, -2.0, 2.0)" for s in self.input_shapes)
        body_init = "\n".join("        " + l for l in init) or "        pass"
        body_fwd = "\n".join("        " + l for l in fwd)
        header = "\n".join("# " + l for l in self.describe().splitlines())
        return f'''"""Reproducer generated by generators.random (standalone: needs only torch).

Run it directly to print output shapes, or import make_model() -> (module, example_inputs).
"""
# Spec (JSON): {self.to_json()}
{header}
import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = {self.seed}


def _uniform(g, shape, lo, hi):
    return torch.rand(shape, generator=g, dtype=torch.float32) * (hi - lo) + lo


class GeneratedModel(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(SEED)
{body_init}

    def forward(self, {ins}):
{body_fwd}
        return ({outs},)


def make_model():
    model = GeneratedModel().eval()
    g = torch.Generator().manual_seed(SEED + 1)
    example_inputs = ({in_t},)
    return model, example_inputs


if __name__ == "__main__":
    model, example_inputs = make_model()
    with torch.no_grad():
        outputs = model(*example_inputs)
    for i, o in enumerate(outputs):
        print(i, tuple(o.shape), bool(torch.isfinite(o).all()))
'''

    def build(self):
        """Return ``(module, example_inputs)``; executes exactly the ``to_python()`` source."""
        src = self.to_python()
        fname = f"<generators.random.GraphSpec {self.fingerprint()}>"
        # Register the source so tracebacks and torch.export stack traces show real lines.
        linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
        ns: dict[str, Any] = {"__name__": f"generators_random_graph_{self.fingerprint()}"}
        exec(compile(src, fname, "exec"), ns)
        return ns["make_model"]()
