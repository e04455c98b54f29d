"""run_decompositions' fixed cost: torch's CompositeImplicitAutograd (CIA) op table.

Why: every ``ExportedProgram.run_decompositions`` (three per ``to_edge_transform_and_lower``)
rebuilds the table of CIA ops it may preserve.  ``_collect_all_valid_cia_ops`` walks the ~43
op namespaces and, for each one, calls ``_materialize_cpp_cia_ops``: it asks the dispatcher for
every op with a CIA kernel (~1,700 names) and ``getattr``s each into ``torch.ops``.  That is
~215 identical materializations per lowering, ~0.6 s of a 10-op TOSA lowering whose passes
fastpass has already made cheap.  Then ``_override_composite_implicit_decomp`` installs ~12
Python kernels on each of ~560 ops through ``OperatorBase.py_impl``, whose nested function
re-evaluates its ``Callable[...]`` annotations on every call (~0.3 s more).

Two replacements, both exact:

* ``materialize_once``: materializing is idempotent -- its only effect is the attributes that
  ``torch.ops``' ``__getattr__`` hooks create.  When the dispatcher returns the same names as
  the last completed materialization and every namespace, packet and overload it would reach is
  still an own attribute of its parent (so each ``getattr`` is a plain read: no ``__getattr__``
  hook runs), the stock call would do nothing, so it is not made.  Anything else (a new
  registration, a library destroyed and its op deleted) runs the original.
* ``override_cia_decomp``: upstream's context manager, line for line, with each
  ``op.py_impl(key)(fn)`` written as what it does for a ``DispatchKey`` whose slot is known to
  be free (upstream only registers into free slots): ``op.py_kernels[key] = fn`` and
  ``op._dispatch_cache.clear()``.  Same kernels, same insertion order, same fake-rule
  registrations, same restore.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from . import _stats

_CIA_KEY = "CompositeImplicitAutograd"


def _split(qualified: str) -> Tuple[str, str, str]:
    """``ns::op.overload`` → (ns, op, overload) as upstream's materialization splits it."""
    namespace, op_name = qualified.split("::")
    parts = op_name.split(".")
    return namespace, parts[0], parts[1] if len(parts) == 2 else "default"


class _Materialized:
    """The registration names of the last completed materialization, resolved to the objects
    the stock ``getattr`` chain returned (namespace, packet, overload)."""

    def __init__(self) -> None:
        self.names: Optional[List[str]] = None
        self.chains: List[Tuple[Any, str, Any, str, Any]] = []

    def remember(self, names: List[str]) -> None:
        import torch

        chains = []
        for qualified in names:
            namespace, op_name, overload_name = _split(qualified)
            ns = getattr(torch.ops, namespace)
            packet = getattr(ns, op_name)
            chains.append((ns, op_name, packet, overload_name, getattr(packet, overload_name)))
        self.names, self.chains = names, chains

    def still_materialized(self) -> bool:
        """Every attribute the stock loop reads is still the same own attribute of its parent."""
        import torch

        ops_dict = torch.ops.__dict__
        seen_ns: Dict[int, bool] = {}
        for ns, op_name, packet, overload_name, overload in self.chains:
            ok = seen_ns.get(id(ns))
            if ok is None:
                ok = seen_ns[id(ns)] = ops_dict.get(ns.name) is ns
            if not ok or ns.__dict__.get(op_name) is not packet or packet.__dict__.get(overload_name) is not overload:
                return False
        return True


def wrap_materialize(original: Callable[[], None]) -> Callable[[], None]:
    """Replacement for ``torch._export.utils._materialize_cpp_cia_ops`` (see module docstring)."""
    import torch

    registrations = torch._C._dispatch_get_registrations_for_dispatch_key
    memo = _Materialized()

    def materialize_once() -> None:
        names = registrations(_CIA_KEY)
        if names == memo.names and memo.still_materialized():
            _stats.count_cia_materialization(skipped=True)
            return None
        memo.names = None
        original()
        memo.remember(names)
        _stats.count_cia_materialization(skipped=False)
        return None

    return materialize_once


def wrap_override(original: Callable[..., Any]) -> Callable[..., Any]:
    """Replacement for ``torch.export.exported_program._override_composite_implicit_decomp``.

    Reads upstream's helpers from that module at call time, as the original does."""
    del original  # a full copy of upstream's body: the original is not called
    return override_cia_decomp


def _set_py_kernel(op: Any, key: Any, fn: Callable[..., Any]) -> None:
    """``op.py_impl(key)(fn)`` for a DispatchKey ``key`` that is neither Python nor registered."""
    op.py_kernels[key] = fn
    op._dispatch_cache.clear()


@contextlib.contextmanager
def override_cia_decomp(cia_ops_to_callable: Dict[Any, Callable[..., Any]]) -> Iterator[None]:
    import torch
    import torch.export.exported_program as ep

    cia = torch._C.DispatchKey.CompositeImplicitAutograd
    saved_tables = {}
    patched_ops = set()
    for op_overload, decomp_callable in cia_ops_to_callable.items():
        saved_tables[op_overload] = op_overload.py_kernels.copy()
        patched_ops.add(op_overload)
        for override_dispatch_key in ep._AUTOGRAD_ALIAS_BACKEND_KEYS_TO_OVERRIDE:
            if override_dispatch_key not in op_overload.py_kernels:
                _set_py_kernel(op_overload, override_dispatch_key,
                               ep.autograd_not_implemented(op_overload, deferred_error=True))
        orig_cia_callable = ep._get_decomp_for_cia(op_overload)
        if cia in op_overload.py_kernels:
            del op_overload.py_kernels[cia]
        _set_py_kernel(op_overload, cia, decomp_callable)

        if not ep._is_op_registered_to_fake_rule(op_overload):
            ep.register_op_impl(op_overload)(
                functools.partial(_force_dispatch_to_orig_cia_callable, original_callable=orig_cia_callable)
            )

        for key in ep._BACKEND_KEYS_TO_OVERRIDE:
            if key not in op_overload.py_kernels:
                _set_py_kernel(op_overload, key, orig_cia_callable)
    _stats.count_cia_override(len(patched_ops))
    try:
        yield
    finally:
        for op in patched_ops:
            op.py_kernels.clear()
            op.py_kernels.update(saved_tables[op])
            op._dispatch_cache.clear()
            ep._deregister_op_impl(op)


def _force_dispatch_to_orig_cia_callable(fake_tensor_mode: Any, op: Any, *args: Any, **kwargs: Any) -> Any:
    # Upstream defines this inside its loop; it closes over nothing, so one module-level copy
    # behaves the same (fake-rule registrations key on the op, not on the function's identity).
    orig_cia_callable = kwargs["original_callable"]
    del kwargs["original_callable"]
    with fake_tensor_mode:
        return orig_cia_callable(*args, **kwargs)
