"""Delegate bytes: what the backend emitted (TOSA flatbuffer, or Vela command stream for
Ethos-U), the intermediate TOSA of each delegate, and the reference model's outputs."""

from __future__ import annotations

import numpy as np


def bytes_difference(left: bytes | None, right: bytes | None) -> str | None:
    if left == right:
        return None
    if left is None or right is None:
        return f"present {left is not None} vs {right is not None}"
    offset = next((i for i, (x, y) in enumerate(zip(left, right)) if x != y), min(len(left), len(right)))
    return f"{len(left)} vs {len(right)} bytes, first difference at offset {offset}"


def _bit_identical(x: np.ndarray, y: np.ndarray) -> bool:
    return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


def outputs_difference(left, right) -> str | None:
    """Compare the outputs of one input set; None if bit-identical."""
    if left is None or right is None:
        return None if left is None and right is None else "ran in one mode only"
    if len(left) != len(right):
        return f"{len(left)} vs {len(right)} outputs"
    for i, (x, y) in enumerate(zip(left, right)):
        if not _bit_identical(x, y):
            detail = f"{x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)}"
            if x.shape == y.shape and x.dtype == y.dtype:
                diff = np.argwhere(x != y)
                detail = f"{len(diff)} elements differ, first at {tuple(int(i) for i in diff[0]) if len(diff) else '?'}"
            return f"output {i}: {detail}"
    return None
