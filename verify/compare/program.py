"""The whole program beyond the delegates: the serialized `.pte` and the top-level constants.

The other checks stop at the delegates and the graphs; a change in what the partitioner
leaves on the CPU (a weight, an exir pass's rewrite, memory planning) shows only here.
`program` compares the bytes a user ships and, when they differ, deserializes both with
executorch's own schema to name the first differing field; `constants` compares every
top-level parameter, buffer and lifted constant by name, metadata and exact bytes.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from verify.compare.payloads import bytes_difference
from verify.lowering.constants import ConstantTensor

# The top-level fields of executorch's schema `Program`, named for a reader.
_PROGRAM_PARTS = {
    "execution_plan": "execution plan",
    "constant_buffer": "constant data",
    "backend_delegate_data": "delegate payload",
    "segments": "segment table",
    "constant_segment": "constant segment",
    "mutable_data_segments": "mutable data segments",
    "named_data": "named data",
    "version": "schema version",
}


def serialized_program_differences(left: bytes, right: bytes) -> list[str]:
    """Where two `.pte` buffers part: bytes first, then the first differing schema field."""
    found = bytes_difference(left, right)
    if found is None:
        return []
    return [f".pte: {found}", _first_schema_difference(left, right)]


def _first_schema_difference(left: bytes, right: bytes) -> str:
    from executorch.exir._serialize._program import deserialize_pte_binary

    parsed = []
    for side, data in (("first", left), ("second", right)):
        try:
            parsed.append(deserialize_pte_binary(data))
        except Exception as exc:  # noqa: BLE001 - an unreadable program is itself the finding
            return f"the {side} program does not deserialize: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    path = _first_field_difference(parsed[0], parsed[1], "pte")
    if path is None:
        return "deserialized, the programs are equal: the bytes differ in padding, alignment or the header"
    part = next((name for field, name in _PROGRAM_PARTS.items() if path.startswith(f"pte.program.{field}")), None)
    return f"first differing field ({part}): {path}" if part else f"first differing field: {path}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _first_field_difference(x: Any, y: Any, path: str) -> str | None:
    """The path of the first leaf where two deserialized schema trees differ, with both values."""
    if type(x) is not type(y):
        return f"{path}: {type(x).__name__} vs {type(y).__name__}"
    if dataclasses.is_dataclass(x):
        for f in dataclasses.fields(x):
            sub_x, sub_y = getattr(x, f.name), getattr(y, f.name)
            label = f"{path}.{f.name}"
            if dataclasses.is_dataclass(sub_x) and type(sub_x) is type(sub_y) and f.name == "val":
                label += f"<{type(sub_x).__name__}>"  # an EValue's union member: Tensor, Int, ...
            found = _first_field_difference(sub_x, sub_y, label)
            if found:
                return found
        return None
    if isinstance(x, (bytes, bytearray)):
        found = bytes_difference(bytes(x), bytes(y))
        return f"{path}: {found}" if found else None
    if isinstance(x, (list, tuple)):
        for i, (item_x, item_y) in enumerate(zip(x, y)):
            found = _first_field_difference(item_x, item_y, f"{path}[{i}]")
            if found:
                return found
        return f"{path}: {len(x)} vs {len(y)} entries" if len(x) != len(y) else None
    if isinstance(x, dict):
        if list(x) != list(y):
            return f"{path}: keys {_short(list(x))} vs {_short(list(y))}"
        for key in x:
            found = _first_field_difference(x[key], y[key], f"{path}[{key!r}]")
            if found:
                return found
        return None
    if isinstance(x, float) and math.isnan(x) and math.isnan(y):
        return None
    return None if x == y else f"{path}: {_short(x)} vs {_short(y)}"


def constants_differences(left: list[ConstantTensor], right: list[ConstantTensor]) -> list[str]:
    """Every difference between two programs' top-level constants, by name: presence, order,
    metadata (source, role, placeholder, type, dtype, shape, stride, offset, requires_grad), bytes."""
    by_name_left = {c.name: c for c in left}
    by_name_right = {c.name: c for c in right}
    details = [f"{name}: only in the {side} program"
               for side, names in (("first", [n for n in by_name_left if n not in by_name_right]),
                                   ("second", [n for n in by_name_right if n not in by_name_left]))
               for name in names]
    for name, a in by_name_left.items():
        b = by_name_right.get(name)
        if b is None:
            continue
        meta_a, meta_b = a.metadata(), b.metadata()
        details += [f"{name}: {key} {meta_a[key]!r} vs {meta_b[key]!r}" for key in meta_a if meta_a[key] != meta_b[key]]
        found = bytes_difference(a.data, b.data)
        if found:
            details.append(f"{name}: values differ, {found}{_element_hint(a, b)}")
    common = [n for n in by_name_left if n in by_name_right]
    if not details and common != [n for n in by_name_right if n in by_name_left]:
        details.append(f"same constants in another order: {_short(common)} vs "
                       f"{_short([n for n in by_name_right if n in by_name_left])}")
    return details


def _element_hint(a: ConstantTensor, b: ConstantTensor) -> str:
    """For same-dtype, same-shape tensors: which element differs first, and its two values."""
    if a.data is None or b.data is None or a.dtype != b.dtype or a.shape != b.shape or len(a.data) != len(b.data):
        return ""
    import torch

    dtype = getattr(torch, a.dtype.removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype) or dtype.is_complex or dtype.itemsize == 0:
        return ""
    x = torch.frombuffer(bytearray(a.data), dtype=torch.uint8).view(dtype).reshape(a.shape)
    y = torch.frombuffer(bytearray(b.data), dtype=torch.uint8).view(dtype).reshape(b.shape)
    differing = (x.reshape(-1).view(torch.uint8).reshape(-1, dtype.itemsize)
                 != y.reshape(-1).view(torch.uint8).reshape(-1, dtype.itemsize)).any(dim=1).nonzero()
    if not len(differing):
        return ""
    flat = int(differing[0])
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), x.shape)) if x.dim() else ()
    return (f"; {len(differing)} of {x.numel()} elements, first at {index}: "
            f"{x.reshape(-1)[flat].item()!r} vs {y.reshape(-1)[flat].item()!r}")
