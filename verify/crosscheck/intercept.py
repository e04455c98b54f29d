"""Where crosscheck catches a lowering: four patch points, installed together, restored exactly.

Every lowering and every top-level pass call in executorch 1.5.1 goes through one of these
(`patch_points()`, installed with `fastpass.patching`; the "why" column says what each catches):

| owner | attribute | why |
|---|---|---|
| `executorch.exir.program._program.to_edge_transform_and_lower (et_logger wrapper)` | `func` (closure cell) | every `to_edge_transform_and_lower(...)` |
| `executorch.exir.program._program.to_edge (et_logger wrapper)` | `func` (closure cell) | every `to_edge(...)` |
| `executorch.exir.program._program.EdgeProgramManager` | `to_backend` | `edge.to_backend(partitioner)` |
| `executorch.exir.program._program` | `_transform_with_pass_manager` | `_transform(ep, *passes)` (ArmTester's RunPasses, the test harness's RunPasses, user code) and `EdgeProgramManager.transform` |

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

from fastpass.patching import PatchPoint, Patches
from verify.crosscheck.record import EntryPoint

# handler(entry_point, original, args, kwargs) -> the call's value, for the outermost calls.
Handler = Callable[[EntryPoint, Callable[..., Any], tuple, dict], Any]

_depth = 0


def installed() -> bool:
    return PATCHES.active


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


def _logger_wrapper(wrapper: Any, name: str) -> Any:
    """`wrapper`, checked to be the et_logger wrapper of `name` whose `func` cell we patch."""
    closure = getattr(wrapper, "__closure__", None) or ()
    names = getattr(getattr(wrapper, "__code__", None), "co_freevars", ())
    if names != ("func",) or len(closure) != 1 or getattr(closure[0].cell_contents, "__name__", None) != name:
        raise RuntimeError(f"verify.crosscheck: executorch's {name} is not the et_logger wrapper it was "
                           f"built against (executorch 1.5.1); its call cannot be intercepted")
    return wrapper


def patch_points(handler: Handler) -> list[PatchPoint]:
    """The table (the module docstring shows it): every row routes its calls to `handler`."""
    from executorch.exir.program import _program

    def route(entry: EntryPoint) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return lambda original: _interceptor(entry, original, handler)

    return [
        PatchPoint.closure_cell(_logger_wrapper(_program.to_edge_transform_and_lower, "to_edge_transform_and_lower"),
                                "func", (), wrap=route(EntryPoint.TO_EDGE_TRANSFORM_AND_LOWER),
                                why="every `to_edge_transform_and_lower(...)`",
                                label="executorch.exir.program._program.to_edge_transform_and_lower (et_logger wrapper)"),
        PatchPoint.closure_cell(_logger_wrapper(_program.to_edge, "to_edge"), "func", (),
                                wrap=route(EntryPoint.TO_EDGE), why="every `to_edge(...)`",
                                label="executorch.exir.program._program.to_edge (et_logger wrapper)"),
        PatchPoint(_program.EdgeProgramManager, "to_backend", (), wrap=route(EntryPoint.TO_BACKEND),
                   why="`edge.to_backend(partitioner)`"),
        PatchPoint(_program, "_transform_with_pass_manager", (), wrap=route(EntryPoint.PASS_CALL),
                   why="`_transform(ep, *passes)` (ArmTester's RunPasses, the test harness's RunPasses, user "
                       "code) and `EdgeProgramManager.transform`"),
    ]


PATCHES = Patches("verify.crosscheck", "call verify.crosscheck.disable()")


def install(handler: Handler) -> None:
    """Route the outermost call of every entry point through `handler`."""
    if PATCHES.active:
        raise RuntimeError("verify.crosscheck is already enabled (it does not nest)")
    PATCHES.install(patch_points(handler))


def uninstall() -> None:
    PATCHES.restore()
