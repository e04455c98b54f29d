"""Let FakeTensor's dispatch cache also serve ExecuTorch-namespace ops.

Why: ``FakeTensorMode._validate_cache_key`` refuses every op whose namespace is
not aten/prim/prims (``torch._library.utils.is_builtin``), so each of the ~140
ARM passes re-runs the Python fake kernels of quantized_decomposed / tosa /
dim_order_ops / cortex_m ops from scratch.  Those kernels are pure functions of
their arguments' metadata *and*, for the ``tosa`` dialect, of the active
``TosaLoweringContext`` (spec + shape env: several fake kernels read
``get_context_spec()``).  We therefore

* key every extended-namespace entry additionally on that context and on a
  private marker (``wrap_cache_key``) so entries can never collide with, or
  be served to, stock lookups, and
* accept the "non-builtin" bypass only for those namespaces, still running the
  remaining upstream checks that come after it (``wrap_validate``).

All other bypass reasons (data-dependent, dynamic shape, inplace view, ...)
are upstream's and still apply.  ``evict_extended_entries`` removes every
entry we added on disable so stock behaviour afterwards is untouched.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch
from torch._subclasses import fake_tensor as _ft

from . import _stats

EXTRA_NAMESPACES = frozenset({"quantized_decomposed", "tosa", "dim_order_ops", "cortex_m"})

_MARK = "__fastpass_ext_cache__"

def _ext_namespace(func: Any) -> bool:
    return isinstance(func, torch._ops.OpOverload) and func.namespace in EXTRA_NAMESPACES


@functools.lru_cache(maxsize=None)
def _lowering_context() -> Any:
    """The ARM backend's TosaLoweringContext class, imported once (None without the backend)."""
    try:
        from executorch.backends.arm.tosa.specification import TosaLoweringContext
    except Exception:  # pragma: no cover - arm backend not importable
        return None
    return TosaLoweringContext


def _context_fingerprint() -> tuple:
    TosaLoweringContext = _lowering_context()
    if TosaLoweringContext is None:  # pragma: no cover - arm backend not importable
        return (None, None)
    spec = TosaLoweringContext.tosa_spec_var.get(None)
    shape_env = TosaLoweringContext.shape_env_var.get(None)
    return (None if spec is None else repr(spec), None if shape_env is None else id(shape_env))


def wrap_cache_key(original: Callable[..., Any]) -> Callable[..., Any]:
    def _wrapped_cache_key(self, state, func, args, kwargs):  # noqa: ANN001
        key = original(self, state, func, args, kwargs)
        if _ext_namespace(func):
            key = _ft._DispatchCacheKey(tuple(key.key) + (_MARK, _context_fingerprint()))
        return key

    return _wrapped_cache_key


def wrap_validate(original: Callable[..., Any]) -> Callable[..., Any]:
    def _wrapped_validate(self, func, args, kwargs):  # noqa: ANN001
        try:
            original(self, func, args, kwargs)
        except _ft._BypassDispatchCache as e:
            if e.reason != "non-builtin" or not _ext_namespace(func):
                raise
            # Upstream's only check after the builtin one (torch 2.13.0):
            if func.is_view and torch._C._dispatch_has_kernel_for_dispatch_key(
                func.name(), torch._C.DispatchKey.CompositeImplicitAutograd
            ):
                raise _ft._BypassDispatchCache("CompositeImplicitAutograd")
            _stats.count_ext_miss()

    return _wrapped_validate


def wrap_output_from_cache_entry(original: Callable[..., Any]) -> Callable[..., Any]:
    def _wrapped_output_from_cache_entry(self, state, entry, key, func, args):  # noqa: ANN001
        out = original(self, state, entry, key, func, args)
        if _ext_namespace(func):
            _stats.count_ext_hit()
        return out

    return _wrapped_output_from_cache_entry


def _is_ours(key: Any) -> bool:
    k = getattr(key, "key", None)
    return isinstance(k, tuple) and len(k) >= 2 and k[-2] == _MARK


def evict_extended_entries() -> int:
    """Drop every cache entry created by the extension (class-level cache)."""
    cache = _ft.FakeTensorMode.cache
    ours = [k for k in list(cache.keys()) if _is_ours(k)]
    for k in ours:
        cache.pop(k, None)
    return len(ours)
