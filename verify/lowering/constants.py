"""The constant tensors of a lowered program's top level, captured as plain picklable values.

Delegates carry their own weights inside their payloads (compared by the payload and tosa
checks), but what the partitioner leaves on the CPU keeps its parameters, buffers and
lifted tensor constants in the top-level `ExportedProgram`. Nothing else compares those:
the graph checks see only placeholders and their fake `val`s, never the values. So each is
captured here with its metadata and its exact bytes, and the `constants` check compares them
by name (`verify/compare/program.py`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class ConstantRole(enum.Enum):
    """What the graph signature says a constant is (the placeholder kind that reads it)."""

    PARAMETER = "parameter"
    BUFFER = "buffer"
    LIFTED_TENSOR_CONSTANT = "lifted tensor constant"
    UNREFERENCED = "not in the graph signature"


class ConstantSource(enum.Enum):
    """Which container of the `ExportedProgram` holds the value."""

    STATE_DICT = "state_dict"
    CONSTANTS = "constants"
    MISSING = "neither (named by the signature only)"


@dataclass(frozen=True)
class ConstantTensor:
    """One top-level constant: identity, metadata and exact bytes (None for a non-tensor)."""

    name: str  # the key in state_dict / constants (a fully qualified name)
    source: ConstantSource
    role: ConstantRole
    input_name: str | None  # the placeholder that reads it, per the graph signature
    type_name: str  # Parameter, Tensor, ScriptObject, ...
    dtype: str | None
    shape: tuple[int, ...] | None
    stride: tuple[int, ...] | None
    storage_offset: int | None
    requires_grad: bool | None
    data: bytes | None

    def metadata(self) -> dict[str, Any]:
        """Everything but the bytes, in a fixed order: what the check names when it differs."""
        return {"source": self.source.value, "role": self.role.value, "input_name": self.input_name,
                "type": self.type_name, "dtype": self.dtype, "shape": self.shape, "stride": self.stride,
                "storage_offset": self.storage_offset, "requires_grad": self.requires_grad}


def tensor_bytes(tensor: Any) -> bytes:
    """The element bytes in logical (row-major) order, whatever the dtype or layout."""
    import torch

    data = tensor.detach()
    if data.is_quantized:
        data = data.int_repr()
    flat = data.contiguous().reshape(-1)
    if flat.dtype != torch.uint8:
        flat = flat.view(torch.uint8)
    return flat.cpu().numpy().tobytes()


def _roles(signature: Any) -> dict[str, tuple[ConstantRole, str]]:
    roles: dict[str, tuple[ConstantRole, str]] = {}
    for role, mapping in ((ConstantRole.PARAMETER, signature.inputs_to_parameters),
                          (ConstantRole.BUFFER, signature.inputs_to_buffers),
                          (ConstantRole.LIFTED_TENSOR_CONSTANT, signature.inputs_to_lifted_tensor_constants)):
        for input_name, name in mapping.items():
            roles[name] = (role, input_name)
    return roles


def _capture(name: str, value: Any, source: ConstantSource,
             roles: dict[str, tuple[ConstantRole, str]]) -> ConstantTensor:
    import torch

    role, input_name = roles.get(name, (ConstantRole.UNREFERENCED, None))
    if not isinstance(value, torch.Tensor):
        return ConstantTensor(name, source, role, input_name, type(value).__name__,
                              None, None, None, None, None, None)
    return ConstantTensor(name, source, role, input_name, type(value).__name__, str(value.dtype),
                          tuple(value.shape), tuple(value.stride()), value.storage_offset(),
                          value.requires_grad, tensor_bytes(value))


def capture_constants(exported_program: Any) -> list[ConstantTensor]:
    """Every entry of `state_dict`, then of `constants`, in the program's own order.

    The order is kept because it is the program's: a reordering is reported as such.
    A name in the signature but in neither container is captured with no value, so that a
    dangling reference in one lowering only is a difference too.
    """
    roles = _roles(exported_program.graph_signature)
    captured = [_capture(name, value, ConstantSource.STATE_DICT, roles)
                for name, value in exported_program.state_dict.items()]
    captured += [_capture(name, value, ConstantSource.CONSTANTS, roles)
                 for name, value in exported_program.constants.items()]
    present = {c.name for c in captured}
    for name, (role, input_name) in roles.items():
        if name not in present:
            captured.append(ConstantTensor(name, ConstantSource.MISSING, role, input_name, "<missing>",
                                           None, None, None, None, None, None))
    return captured
