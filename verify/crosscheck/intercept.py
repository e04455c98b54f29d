"""Where crosscheck catches a lowering: four patch points, installed together, restored exactly.

Every lowering and every top-level pass call in executorch 1.5.1 goes through one of these:

| object                                             | how patched            | catches |
|----------------------------------------------------|------------------------|---------|
| `exir.program._program.to_edge_transform_and_lower`| its wrapper's `func` cell | every `to_edge_transform_and_lower(...)` |
| `exir.program._program.to_edge`                    | its wrapper's `func` cell | every `to_edge(...)` |
| `exir.program._program.EdgeProgramManager`         | `to_backend` attribute | `edge.to_backend(partitioner)` |
| `exir.program._program`                            | `_transform_with_pass_manager` global | `_transform(ep, *passes)` (ArmTester's RunPasses, the test harness's RunPasses, user code) and `EdgeProgramManager.transform` |

Why these and not the names callers use: the entry points are bound by `from executorch.exir
import to_edge_transform_and_lower` in arm_tester.py, the test harness's stages and user code,
each binding made at import time, so replacing a module attribute misses every copy already
made. Both functions are wrapped by executorch's `et_logger` decorator, and every binding holds
that one wrapper object, which looks its `func` closure cell up on each call: swapping the
cell's contents intercepts every binding, past and future, with one assignment each, and
restoring it puts back the very same function object. `_transform` is bound the same way, but
it (and `EdgeProgramManager.transform`) calls `_transform_with_pass_manager` through
`_program`'s module globals, which is looked up at call time: one patch for every direct pass
call. `to_backend` is a method, looked up on the class.

Only the outermost call is crosschecked: a call made while another intercepted call runs
(to_edge_transform_and_lower's own `transform` and `to_backend`, a pass manager inside a
lowering, and the stock and fastpass runs crosscheck makes itself) goes straight to the
original. Process-global and single-threaded, like fastpass itself.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Iterator

from verify.crosscheck.record import EntryPoint

# handler(entry_point, original, args, kwargs) -> the call's value, for the outermost calls.
Handler = Callable[[EntryPoint, Callable[..., Any], tuple, dict], Any]

_depth = 0
_restore: list[Callable[[], None]] = []


def installed() -> bool:
    return bool(_restore)


@contextlib.contextmanager
def nested() -> Iterator[None]:
    """Calls made inside this block are not top-level: they go straight to the original."""
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1


def _interceptor(entry: EntryPoint, original: Callable[..., Any], handler: Handler) -> Callable[..., Any]:
    @functools.wraps(original)
    def intercepted(*args: Any, **kwargs: Any) -> Any:
        if _depth:
            return original(*args, **kwargs)
        with nested():
            return handler(entry, original, args, kwargs)

    return intercepted


def _swap_logger_cell(wrapper: Any, name: str, entry: EntryPoint, handler: Handler) -> Callable[[], None]:
    closure = getattr(wrapper, "__closure__", None) or ()
    names = getattr(getattr(wrapper, "__code__", None), "co_freevars", ())
    if names != ("func",) or len(closure) != 1 or getattr(closure[0].cell_contents, "__name__", None) != name:
        raise RuntimeError(f"verify.crosscheck: executorch's {name} is not the et_logger wrapper it was "
                           f"built against (executorch 1.5.1); its call cannot be intercepted")
    cell = closure[0]
    original = cell.cell_contents
    cell.cell_contents = _interceptor(entry, original, handler)

    def restore() -> None:
        cell.cell_contents = original

    return restore


def _swap_attribute(owner: Any, attr: str, entry: EntryPoint, handler: Handler) -> Callable[[], None]:
    original = owner.__dict__[attr]
    setattr(owner, attr, _interceptor(entry, original, handler))
    return lambda: setattr(owner, attr, original)


def install(handler: Handler) -> None:
    """Route the outermost call of every entry point through `handler`."""
    if _restore:
        raise RuntimeError("verify.crosscheck is already enabled (it does not nest)")
    from executorch.exir.program import _program

    try:
        _restore.append(_swap_logger_cell(_program.to_edge_transform_and_lower, "to_edge_transform_and_lower",
                                          EntryPoint.TO_EDGE_TRANSFORM_AND_LOWER, handler))
        _restore.append(_swap_logger_cell(_program.to_edge, "to_edge", EntryPoint.TO_EDGE, handler))
        _restore.append(_swap_attribute(_program.EdgeProgramManager, "to_backend", EntryPoint.TO_BACKEND, handler))
        _restore.append(_swap_attribute(_program, "_transform_with_pass_manager", EntryPoint.PASS_CALL, handler))
    except BaseException:
        uninstall()
        raise


def uninstall() -> None:
    while _restore:
        _restore.pop()()
