"""`meta["val"]` identity: tree structure, shape, dtype, stride, storage offset, device,
requires_grad and symbolic values, on every node (see snapshot.describe_val)."""

from __future__ import annotations

from verify.lowering.snapshot import GraphSnapshot


def val_differences(left: GraphSnapshot, right: GraphSnapshot, limit: int = 5) -> list[str]:
    out = []
    for x, y in zip(left.nodes, right.nodes):
        if x.val != y.val:
            out.append(f"{x.name}: val {x.val} != {y.val}")
            if len(out) >= limit:
                break
    return out
