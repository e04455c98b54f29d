"""Generate a GraphModule's Python code when it is first needed, not on every edit.

Why: ``GraphModule.recompile`` turns the graph into Python source and compiles it.  A
lowering calls it ~400 times (every ``GraphModule(...)`` an ExportPass returns, every pass
manager step), yet passes only walk ``graph.nodes``: almost none of that code is ever run or
read.  Codegen is a pure function of the graph (node names, targets, args), so producing it
later, from the same graph, gives the same source.

``lazy_recompile`` records what ``recompile`` records cheaply (the pytree specs) and leaves the
rest to the first use.  Every way to reach the generated code regenerates it first:

* ``gm(...)`` / ``gm.forward`` / ``inspect.signature(gm.forward)`` -- the per-instance class's
  ``forward`` is a descriptor that calls the real ``recompile`` on access and then answers
  with the real ``forward``;
* ``gm.code`` / ``gm._code`` / ``gm._lineno_map`` / ``gm._prologue_start`` (``__str__``,
  ``print_readable`` error paths, ``_WrappedCall``) -- these are removed from the instance, so
  lookup reaches the class's ``__getattr__``, which recompiles and answers;
* the value ``recompile`` returns (``_recompile_submodules``) -- a ``PythonCode`` stand-in
  that recompiles on first attribute access;
* pickling (``__reduce__`` copies ``__dict__``, where the unpickler looks for ``_code``,
  before it calls ``recompile``) -- wrapped to generate the code first.  torch.package's
  ``__reduce_package__`` needs nothing: it saves ``self.code`` (generated on access) as source
  and rebuilds the module by tracing that source, not from the copied ``__dict__``
  (tests/test_fastpass_rules.py::test_lazycode_packages_like_stock).

On ``disable()`` every GraphModule still pending is generated (``flush``), so what a lowering
returns is a stock GraphModule in every attribute, whatever is done with it afterwards.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any, Callable

import torch
from torch.fx.graph import _PyTreeCodeGen

from . import _stats

REAL_RECOMPILE: Callable[..., Any] = vars(torch.fx.GraphModule)["recompile"]

_GENERATED = ("_code", "_lineno_map", "_prologue_start")
_PENDING = "_fastpass_code_pending"
_PENDING_MODULES: "weakref.WeakSet[torch.fx.GraphModule]" = weakref.WeakSet()


def _materialize(gm: torch.fx.GraphModule) -> Any:
    """The stock ``recompile``, undoing the lazy class attributes first."""
    if gm.__dict__.pop(_PENDING, None):
        _stats.count_code_generated()
    _PENDING_MODULES.discard(gm)
    cls = type(gm)
    if vars(cls).get("__getattr__") is _lazy_getattr:
        del cls.__getattr__
    return REAL_RECOMPILE(gm)


def flush() -> None:
    """Generate the code of every GraphModule still pending (called by ``disable``)."""
    if not _PENDING_MODULES:
        return
    gc.collect()  # intermediate graphs of the lowering are garbage in cycles: don't generate those
    for gm in list(_PENDING_MODULES):
        if gm.__dict__.get(_PENDING):
            _materialize(gm)
    _PENDING_MODULES.clear()


def _ready(gm: Any) -> None:
    if isinstance(gm, torch.fx.GraphModule) and gm.__dict__.get(_PENDING):
        _materialize(gm)


def wrap_reduce(original: Callable[..., Any]) -> Callable[..., Any]:
    def reduce_with_code(self: torch.fx.GraphModule) -> Any:
        """Replacement for ``GraphModule.__reduce__``."""
        _ready(self)
        return original(self)

    return reduce_with_code


class _LazyForward:
    """``forward`` on a pending GraphModule's class: any access (a call, ``inspect.signature``
    for placeholder names when the module is re-traced) generates the code first and answers
    with the real ``forward``, which ``recompile`` installs in this descriptor's place."""

    def __get__(self, gm: Any, owner: type) -> Any:
        if gm is None:
            return self
        _materialize(gm)
        return gm.forward


_LAZY_FORWARD = _LazyForward()


def _lazy_getattr(self: torch.fx.GraphModule, name: str) -> Any:
    if name in _GENERATED and self.__dict__.get(_PENDING):
        _materialize(self)
        return self.__dict__[name]
    for klass in type(self).__mro__[1:]:
        found = vars(klass).get("__getattr__")
        if found is not None:
            return found(self, name)
    raise AttributeError(name)  # pragma: no cover - nn.Module always defines __getattr__


class _PendingPythonCode:
    """What ``recompile()`` returned, produced only if someone looks at it."""

    __slots__ = ("_gm", "_code")

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        self._gm = gm
        self._code = None

    def __getattr__(self, name: str) -> Any:
        if self._code is None:
            gm = self._gm
            self._code = _materialize(gm) if gm.__dict__.get(_PENDING) else gm._graph.python_code(root_module="self")
        return getattr(self._code, name)


def lazy_recompile(self: torch.fx.GraphModule) -> Any:
    """Replacement for ``GraphModule.recompile``: cheap bookkeeping now, codegen on first use."""
    if isinstance(self._graph._codegen, _PyTreeCodeGen):
        self._in_spec = self._graph._codegen.pytree_info.in_spec
        self._out_spec = self._graph._codegen.pytree_info.out_spec
    for name in _GENERATED:
        self.__dict__.pop(name, None)
    self.__dict__[_PENDING] = True
    _PENDING_MODULES.add(self)
    _stats.count_code_deferred()
    cls = type(self)
    cls.forward = _LAZY_FORWARD
    cls.__getattr__ = _lazy_getattr
    return _PendingPythonCode(self)
