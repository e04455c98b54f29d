"""run_decompositions' fixed cost: torch's CompositeImplicitAutograd (CIA) op table.

Why: every ``ExportedProgram.run_decompositions`` (three per ``to_edge_transform_and_lower``)
rebuilds the table of CIA ops it may preserve.  ``_collect_all_valid_cia_ops`` walks the ~43
op namespaces and, for each one, calls ``_materialize_cpp_cia_ops``: it asks the dispatcher for
every op with a CIA kernel (~1,700 names) and ``getattr``s each into ``torch.ops``.  That is
~215 identical materializations per lowering, ~0.6 s of a 10-op TOSA lowering whose passes
fastpass has already made cheap.  Then ``_override_composite_implicit_decomp`` installs ~12
Python kernels on each of ~560 ops through ``OperatorBase.py_impl``, whose nested function
re-evaluates its ``Callable[...]`` annotations on every call (~0.3 s more).

Three replacements, all exact:

* ``materialize_once``: materializing is idempotent -- its only effect is the attributes that
  ``torch.ops``' ``__getattr__`` hooks create.  When the dispatcher returns the same names as
  the last completed materialization and every namespace, packet and overload it would reach is
  still an own attribute of its parent (so each ``getattr`` is a plain read: no ``__getattr__``
  hook runs), the stock call would do nothing, so it is not made.  Anything else (a new
  registration, a library destroyed and its op deleted) runs the original.
* ``collect_all_valid_cia_ops``: upstream's walk over the op namespaces materializes before
  each one (~43 per walk, five walks per lowering), and between two of them runs only its own
  read-only loop (getattr of packets and overloads, schema and dispatcher queries): each
  materialization after the first is then one that the check above would skip, yet costs that
  check (~0.6 ms: the dispatcher's ~1,700 names and their attribute chains).  The replacement
  is upstream's walk with one materialization, at the same point as the first stock one, and
  it *verifies* the premise instead of assuming it: after the walk, the dispatcher must list
  exactly the names that materialization saw and their attributes must still be in place.  If
  anything changed during the walk, the result is thrown away and the original walk runs.
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


    def unchanged(self, names: List[str]) -> bool:
        """Would a materialization now, with the dispatcher listing ``names``, do nothing?"""
        return names == self.names and self.still_materialized()


# The last completed materialization, shared by the materialization and the walk replacements
# (both rows of the one feature; reset when the materialization row is installed).
_MEMO = _Materialized()


def wrap_materialize(original: Callable[[], None]) -> Callable[[], None]:
    """Replacement for ``torch._export.utils._materialize_cpp_cia_ops`` (see module docstring)."""
    import torch

    global _MEMO
    registrations = torch._C._dispatch_get_registrations_for_dispatch_key
    memo = _MEMO = _Materialized()

    def materialize_once() -> None:
        names = registrations(_CIA_KEY)
        if memo.unchanged(names):
            _stats.count_cia_materialization(skipped=True)
            return None
        memo.names = None
        original()
        memo.remember(names)
        _stats.count_cia_materialization(skipped=False)
        return None

    return materialize_once


def wrap_collect(original: Callable[[], Any]) -> Callable[[], Any]:
    """Replacement for ``_collect_all_valid_cia_ops`` in ``torch._export.utils`` and in the two
    modules that import it by name (``torch.export.exported_program``, ``.decomp_utils``).

    Upstream's body, with its per-namespace ``_collect_all_valid_cia_ops_for_namespace`` written
    as one materialization before the first namespace it reaches plus, per namespace, that
    function's own loop (``_preservable_cia_ops_in``).  Upstream's helpers are read from
    ``torch._export.utils`` at call time, as the original reads its globals."""
    import torch
    import torch._export.utils as export_utils

    registrations = torch._C._dispatch_get_registrations_for_dispatch_key

    def collect_all_valid_cia_ops() -> set:
        cia_ops: set = set()
        materialized = False
        for op_namespace_name in torch.ops._dir:
            if op_namespace_name != "aten":
                if not hasattr(torch.ops, op_namespace_name):
                    raise AssertionError(f"torch.ops does not have attribute {op_namespace_name!r}")
                op_namespace = getattr(torch.ops, op_namespace_name)
                if isinstance(op_namespace, torch._ops._OpNamespace):
                    if not materialized:
                        export_utils._materialize_cpp_cia_ops()
                        materialized = True
                    cia_ops |= _preservable_cia_ops_in(op_namespace, export_utils._is_preservable_cia_op)
            else:
                cia_ops |= export_utils._collect_all_valid_cia_ops_for_aten_namespace()
        if materialized and not _MEMO.unchanged(registrations(_CIA_KEY)):
            # The walk itself changed what a materialization would do: the stock walk would
            # have materialized again before a later namespace. Run it.
            _stats.count_cia_walk(fused=False)
            return original()
        _stats.count_cia_walk(fused=True)
        return cia_ops

    return collect_all_valid_cia_ops


def _preservable_cia_ops_in(op_namespace: Any, is_preservable: Callable[[Any], bool]) -> set:
    """Step 2 of upstream's ``_collect_all_valid_cia_ops_for_namespace``, line for line."""
    cia_ops = set()
    for op in op_namespace:
        op_packet = getattr(op_namespace, op)
        for op_overload in op_packet.op_overloads():
            if is_preservable(op_overload):
                cia_ops.add(op_overload)
    return cia_ops


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
