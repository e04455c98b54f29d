"""Pass-invocation hooks: skip decision, copy context and per-pass stats.

Why here: every pass in ``to_edge_transform_and_lower`` and in the ARM
pipelines is invoked through ``PassBase.__call__`` (exir/torch passes) or
``ArmPass.__call__`` (ARM passes, which override it to add ``should_run_pass``
and mutable-buffer handling).  Wrapping those two is the narrowest point that
sees every pass call with the graph module.

When a pass *runs*, the wrappers call the **original** ``__call__`` so the
frames above ``call()`` are exactly stock: some passes record
``traceback.format_stack()[-2]`` (the caller of ``call()``) into
``meta["stack_trace"]`` (e.g. ``AtenToDialectPass``), so re-implementing
``__call__`` would change node metadata.  Only a fastpass skip bypasses the
original: then, like upstream's own skip, ``requires``/``should_run_pass``/
``ensures`` are called and ``PassResult(graph_module, False)`` is returned
without ever entering ``call()``.
"""

from __future__ import annotations

from typing import Any, Callable

from torch.fx.passes.infra.pass_base import PassResult

from . import _context, _skip, _stats
from .annotations import NO_ANNOTATION, _proofs, lookup
from .annotations._model import qualname


def _name(p: Any) -> str:
    return type(p).__name__


def _is_export_pass(p: Any) -> bool:
    from executorch.exir.pass_base import ExportPass

    return isinstance(p, ExportPass)


def _skip_reason(gm: Any, ann: Any) -> str:
    """Non-empty reason string if fastpass may skip this invocation."""
    if "skip" not in _context.STATE.features:
        return ""
    if not ann.skip_sound or not ann.targeted_ops:  # only ExportPasses have annotations (_make_ctx)
        return ""
    if _skip.graph_has_targets(gm, ann.targeted_ops):
        return ""
    if not _skip.is_fixed_point(gm):
        return ""
    return "no-targeted-ops"


def _make_ctx(p: Any, rec: _stats.PassRecord) -> _context.PassCtx:
    """The pass's context: the annotation fastpass may use in it, and whether copy is on.

    Under ``Trust.PROVEN`` (the default) an annotation is used only when the proof ledger says
    ``sound`` for exactly this claim, machinery and executorch/torch (``annotations._proofs``):
    otherwise the pass runs as if it had none (stock, upstream's own skip still applies). The
    record keeps the status either way, so a lowering says what it rested on."""
    ann = lookup(p) if _is_export_pass(p) else NO_ANNOTATION
    if ann is not NO_ANNOTATION:
        status = _proofs.status_of(type(p))
        rec.proof = status.value
        if _context.TRUST is _proofs.Trust.PROVEN and status is not _proofs.ProofStatus.SOUND:
            ann = NO_ANNOTATION
    copy_on = "copy" in _context.STATE.features and ann.copy_sound
    return _context.PassCtx(p, ann, copy_on, rec)


def _invoke(self: Any, graph_module: Any, original: Callable[..., Any], upstream_check: bool) -> Any:
    t0 = _stats.now()
    rec = _stats.enter_pass(_name(self), qualname(type(self)))
    try:
        ctx = _make_ctx(self, rec)
        # Upstream's own skip first (cheap, pure): then the original __call__
        # takes upstream's skip path itself and we need no fixed-point check.
        if upstream_check and not self.should_run_pass(graph_module):
            rec.skipped, rec.skip_reason = True, "upstream-should_run_pass"
        else:
            reason = _skip_reason(graph_module, ctx.ann)
            if reason:
                self.requires(graph_module)
                self.ensures(graph_module)
                rec.skipped, rec.skip_reason = True, reason
                return PassResult(graph_module, False)
            rec.ran = True
        _context.STACK.append(ctx)
        try:
            return original(self, graph_module)
        finally:
            _context.STACK.pop()
    finally:
        _stats.leave_pass(rec, t0)


def wrap_arm_pass_call(original: Callable[..., Any]) -> Callable[..., Any]:
    def arm_pass_call(self, graph_module):  # noqa: ANN001
        """Replacement for ``ArmPass.__call__``."""
        return _invoke(self, graph_module, original, True)

    return arm_pass_call


def wrap_passbase_call(original: Callable[..., Any]) -> Callable[..., Any]:
    def passbase_call(self, graph_module):  # noqa: ANN001
        """Replacement for ``PassBase.__call__``."""
        return _invoke(self, graph_module, original, False)

    return passbase_call


def _run_called_directly(self: Any, graph_module: Any, inputs: Any, original: Callable[..., Any]) -> Any:
    """The top-level retrace of a pass whose ``call()`` another pass invoked directly.

    Why: some passes run others as helpers, not through ``__call__``: the permute/view
    propagation passes call ``CanonicalizeViewCopyPermutePass(...).call(gm)`` and
    ``RemovePermutesAroundElementwiseTosaOps(...).call(gm)`` between their own retraces (~20 % of
    a SleepNet lowering's pass pipeline). Under the outer pass's context those retraces went the
    stock way, uncounted, since the interpreter's callback is not the outer pass. The helper's
    retrace now gets its own context: its own annotation decides copying, exactly as if it had
    been called through ``__call__`` (fastpass's skip stays a ``__call__`` decision and never
    applies here), and it gets its own record, nested in the outer pass's (``depth`` > 0), so
    its copied and dispatched nodes are counted and the gate can weigh the evidence under the
    helper's own class name."""
    t0 = _stats.now()
    rec = _stats.enter_pass(_name(self), qualname(type(self)))
    try:
        rec.ran = True
        ctx = _make_ctx(self, rec)
        ctx.depth = 1
        _context.STACK.append(ctx)
        try:
            return original(self, graph_module, inputs)
        finally:
            _context.STACK.pop()
    finally:
        _stats.leave_pass(rec, t0)


def wrap_call_submodule(original: Callable[..., Any]) -> Callable[..., Any]:
    def call_submodule_tracking(self, graph_module, inputs):  # noqa: ANN001
        """Replacement for ``ExportPass.call_submodule``: track the running pass's retrace depth
        (the copy path acts at depth 1 only); a retrace of another pass started while the
        running pass is between its own retraces is a direct ``call()`` of a helper pass."""
        ctx = _context.current()
        if ctx is None:
            return original(self, graph_module, inputs)
        if ctx.pass_ is not self:
            if ctx.depth == 0:
                return _run_called_directly(self, graph_module, inputs, original)
            return original(self, graph_module, inputs)
        ctx.depth += 1
        try:
            return original(self, graph_module, inputs)
        finally:
            ctx.depth -= 1

    return call_submodule_tracking
