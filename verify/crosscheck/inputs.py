"""Copying an intercepted call's inputs: the fastpass run and the reproducer each get their own."""

from __future__ import annotations

import contextlib
import copy
from typing import Any, Iterator


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
    with _operators_copied_as_themselves():
        for function in _pass_wrappers((args, kwargs)):
            memo[id(function)] = pass_result_wrapper(copy.deepcopy(function.__wrapped__, memo))
        return copy.deepcopy((args, kwargs), memo)


@contextlib.contextmanager
def _operators_copied_as_themselves() -> Iterator[None]:
    """Operators are names, not state: a copy must hold the very same operator objects.

    torch's OpOverload deep-copies to itself, executorch's EdgeOpOverload does not: its copy is
    a new object that compares unequal to the original. A graph's deep copy keeps its nodes'
    targets, but a copied pass holding a set of targets (PropagateViewCopyPermuteUpPass's
    `_targets`) then matches no node and does nothing: the copy lowers differently from the
    original, stock as well as with fastpass (found by tox -e peer: three tests of
    test_propagate_permutes_views_pass.py diverged, stock vs stock too). For the copy only,
    `copy` treats the edge operator types as atomic, as it treats functions and types; the
    previous dispatch entries are put back after it (single-threaded, like crosscheck)."""
    from executorch.exir.dialects.edge._ops import EdgeOpOverload, EdgeOpOverloadPacket

    dispatch = copy._deepcopy_dispatch  # type: ignore[attr-defined]
    saved = {cls: dispatch.get(cls) for cls in (EdgeOpOverload, EdgeOpOverloadPacket)}
    for cls in saved:
        dispatch[cls] = copy._deepcopy_atomic  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for cls, entry in saved.items():
            if entry is None:
                dispatch.pop(cls, None)
            else:
                dispatch[cls] = entry


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
