"""Copying an intercepted call's inputs: the fastpass run and the reproducer each get their own."""

from __future__ import annotations

import copy
from typing import Any


def copy_inputs(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A deep copy of a call's inputs that shares nothing with them.

    `copy.deepcopy` copies a function as itself, and with it everything its closure holds.
    ExportedProgramPassManager wraps every graph pass in such a closure (torch's
    `pass_result_wrapper`), and some passes hold more than their graph: executorch's
    QuantizeInputs works on the EdgeProgramManager it was given, not on the graph it is called
    with. A plain deep copy would run the fastpass lowering on the caller's objects (found by the
    peer run: the fastpass side of test_ioquantization_pass's `edge.transform` quantized the
    program stock had already quantized). So each wrapper is rebuilt around a copy of its pass,
    in the same memo as the rest, so that the copied pass and the copied program agree."""
    from torch.fx.passes.infra.pass_manager import pass_result_wrapper

    memo: dict[int, Any] = {}
    for function in _pass_wrappers((args, kwargs)):
        memo[id(function)] = pass_result_wrapper(copy.deepcopy(function.__wrapped__, memo))
    return copy.deepcopy((args, kwargs), memo)


def _pass_wrappers(inputs: Any) -> list[Any]:
    """The pass_result_wrapper closures in the pass managers among a call's inputs."""
    from torch.fx.passes.infra.pass_manager import PassManager

    found = []
    stack = [inputs]
    while stack:
        item = stack.pop()
        if isinstance(item, (tuple, list)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, PassManager):
            found.extend(p for p in item.passes if is_pass_wrapper(p))
    return found


def is_pass_wrapper(function: Any) -> bool:
    return getattr(function, "__qualname__", "") == "pass_result_wrapper.<locals>.wrapped_fn"
