"""THE single place where fastpass touches executorch/torch objects.

Every patch point is one row of ``patch_table()``, a ``fastpass.patching.PatchPoint``: owner,
attribute, the features that want it, ``wrap(original) -> replacement`` and why.  ``install``
hands the rows to ``_context.STATE`` (a ``patching.Patches``), which takes each original from the
owner's own ``__dict__`` and builds the replacement around it; ``restore()`` has it put every
original back (the very same objects), then evicts fastpass-only FakeTensor cache entries and
resets the per-lowering bookkeeping.  ``_context.STATE`` is the whole on/off state: its
``features`` are the features the replacements consult.  No other module monkeypatches.

Versions: the replacements mirror upstream function bodies of executorch 1.5.1
and torch 2.13.0 line by line; on other versions ``install`` refuses unless
``allow_untested_versions=True`` or ``FASTPASS_ALLOW_UNTESTED=1``.

Nesting: enabling while already enabled raises ``RuntimeError`` (no refcount:
two callers with different feature sets cannot both be honoured).
"""

from __future__ import annotations

import importlib.metadata
import os
import warnings
from typing import Any, FrozenSet, List, Optional, Tuple

from . import _context, _stats
from .annotations import _proofs
from .annotations._proofs import Trust
from .patching import PatchPoint

FEATURES: Tuple[str, ...] = ("skip", "copy", "emit", "fakecache", "provenance", "lazycode", "gc", "ciatable",
                             "verifyonce", "retrace")

TESTED_VERSIONS = {"executorch": "1.5.1", "torch": "2.13.0"}

ALWAYS: Tuple[str, ...] = ()  # a row installed whatever the features (the per-pass stats)


class UntestedVersionError(RuntimeError):
    pass


def patch_table() -> List[PatchPoint]:
    from executorch.backends.arm._passes.arm_pass import ArmPass
    from executorch.exir.pass_base import ExportPass, _ExportPassBase
    from torch._export.pass_base import _ExportPassBaseDeprecatedDoNotUse as TorchExportPassBase
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx import Graph, GraphModule
    from torch.fx.passes.infra.pass_base import PassBase
    from torch.fx.traceback import NodeSource
    import torch._export.utils as export_utils
    import executorch.exir.verification.verifier as edge_verifier
    import torch.export.decomp_utils as decomp_utils
    import torch.export.exported_program as exported_program

    from . import _ciatable, _copy, _fakecache, _lazycode, _passcall, _provenance, _retrace, _verifyonce

    return [
        PatchPoint(PassBase, "__call__", ALWAYS, wrap=_passcall.wrap_passbase_call,
                   why="pass-call level for exir/torch passes: per-pass stats, skip decision, copy context; "
                       "calls the original when the pass runs"),
        PatchPoint(ArmPass, "__call__", ALWAYS, wrap=_passcall.wrap_arm_pass_call,
                   why="same for ARM passes (ArmPass overrides __call__); upstream should_run_pass is honoured first"),
        PatchPoint(_ExportPassBase, "_fx", ("skip", "copy", "emit"), wrap=_wrap_exir_fx,
                   why="attach creation signatures (val + inputs) to every dispatched node (skip, copy); create a "
                       "dispatched node as the copy path creates its nodes, without create_proxy (emit)"),
        PatchPoint(TorchExportPassBase, "_fx", ("skip", "copy", "emit"), wrap=_wrap_torch_fx,
                   why="the same for torch's export pass base (ReplaceViewOpsWithViewCopyOpsPass in to_edge), so "
                       "the exir retrace after it can copy its nodes"),
        PatchPoint(Graph, "node_copy", ("skip", "copy"), wrap=_copy.wrap_node_copy,
                   why="hand a node's creation signature on to its copy (partitioning copies every node into "
                       "the delegate's graph), so the delegate's first retraces can copy or skip them"),
        PatchPoint(ExportPass, "call_submodule", ("skip", "copy"), wrap=_passcall.wrap_call_submodule,
                   why="track top-level vs nested submodule retrace (copy only at top level); give a pass "
                       "whose call() another pass invokes directly its own copy context and record"),
        PatchPoint(_ExportPassBase.ExportInterpreter, "run_node", ("copy",), wrap=_copy.wrap_interpreter_run_node,
                   why="in copy-sound passes, emit cold nodes whose signature holds without FakeTensor "
                       "dispatch or the node's meta context, their arguments walked once from the "
                       "interpreter's environment; format node_debug_str only if it is read"),
        PatchPoint(Graph, "create_node", ("copy",), wrap=_copy.wrap_graph_create_node,
                   why="for the nodes the copy path creates, skip the raw-SymInt argument scan (they "
                       "hold none) and parse each name candidate once, not per node"),
        PatchPoint(ExportPass.ExportInterpreter, "call_function", ("copy",),
                   wrap=_copy.wrap_interpreter_call_function,
                   why="count the nodes each pass dispatches, and their time"),
        PatchPoint(FakeTensorMode, "_cache_key", ("fakecache",), wrap=_fakecache.wrap_cache_key,
                   why="key executorch-namespace entries on TOSA context + private marker"),
        PatchPoint(FakeTensorMode, "_validate_cache_key", ("fakecache",), wrap=_fakecache.wrap_validate,
                   why="accept the 'non-builtin' bypass for executorch namespaces only"),
        PatchPoint(FakeTensorMode, "_output_from_cache_entry", ("fakecache",),
                   wrap=_fakecache.wrap_output_from_cache_entry,
                   why="count cache hits on executorch-namespace ops"),
        PatchPoint(NodeSource, "__init__", ("provenance",), wrap=lambda original: _provenance.shared_nodesource_init,
                   why="share from_node NodeSource elements instead of deep-copying the chain "
                       "(a full copy of upstream's body: the original is not called)"),
        PatchPoint(GraphModule, "recompile", ("lazycode",), wrap=lambda original: _lazycode.lazy_recompile,
                   why="generate a GraphModule's Python code on first use instead of on every graph edit "
                       "(code generation then calls the import-time original, _lazycode.REAL_RECOMPILE)"),
        PatchPoint(GraphModule, "__reduce__", ("lazycode",), wrap=_lazycode.wrap_reduce,
                   why="pickling copies __dict__ before it calls recompile: generate pending code first"),
        PatchPoint(export_utils, "_materialize_cpp_cia_ops", ("ciatable",), wrap=_ciatable.wrap_materialize,
                   why="run_decompositions materializes the dispatcher's CIA ops once per op namespace (~215 "
                       "times per lowering): skip a call that would only re-read attributes that all exist"),
        PatchPoint(export_utils, "_collect_all_valid_cia_ops", ("ciatable",), wrap=_ciatable.wrap_collect,
                   why="its walk over ~43 op namespaces materializes before each one (5 walks per lowering): "
                       "materialize once, then verify that the walk changed nothing a materialization reads "
                       "(else run the original walk)"),
        PatchPoint(exported_program, "_collect_all_valid_cia_ops", ("ciatable",), wrap=_ciatable.wrap_collect,
                   why="the same walk, bound by name at import (run_decompositions' table split)"),
        PatchPoint(decomp_utils, "_collect_all_valid_cia_ops", ("ciatable",), wrap=_ciatable.wrap_collect,
                   why="the same walk, bound by name at import (CustomDecompTable.materialize)"),
        PatchPoint(exported_program, "_override_composite_implicit_decomp", ("ciatable",),
                   wrap=_ciatable.wrap_override,
                   why="install the CIA overrides with direct py_kernels writes instead of ~36,000 "
                       "py_impl calls (a full copy of upstream's body: the original is not called)"),
        PatchPoint(edge_verifier, "_check_tensor_args_matching_op_allowed_dtype", ("verifyonce",),
                   wrap=_verifyonce.wrap_check_dtypes,
                   why="the edge verifier re-executes every node in fake mode to check op dtypes, 12 times per "
                       "lowering, 6 of them on a graph state already checked (ResNet8): skip a check that "
                       "already passed on exactly this state (ops, targets, args, vals and their metadata)"),
        PatchPoint(exported_program, "_decompose_and_get_gm_with_new_signature_constants", ("retrace",),
                   wrap=_retrace.wrap_decompose,
                   why="run_decompositions re-traces the whole program through AOTAutograd (half of a fastpass "
                       "SleepNet U55 lowering); when the program is functional (ATen IR, or training IR with no "
                       "mutation) and the trace would record "
                       "each node as it is or as the one op its CIA decomposition calls, write what the trace would "
                       "write (new graph, provenance layers, original_aten, eager_input_vals, dispatch annotations, "
                       "tensor_meta, input descs), "
                       "around upstream's own unlift, metadata copy and checks"),
    ]


def _records_signatures() -> bool:
    return "skip" in _context.STATE.features or "copy" in _context.STATE.features


def _emits() -> bool:
    return "emit" in _context.STATE.features


def _wrap_exir_fx(original: Any) -> Any:
    """``_ExportPassBase._fx``'s replacement (``_dispatched.wrap_fx``), reading the features it
    serves from the on/off state at each call."""
    from . import _copy, _dispatched

    return _dispatched.wrap_fx(original, _dispatched.EXIR, _records_signatures, _emits, _copy._create_plain)


def _wrap_torch_fx(original: Any) -> Any:
    """The same for torch's ``_ExportPassBaseDeprecatedDoNotUse._fx``."""
    from . import _copy, _dispatched

    return _dispatched.wrap_fx(original, _dispatched.TORCH, _records_signatures, _emits, _copy._create_plain)


# --- state -------------------------------------------------------------------

def is_installed() -> bool:
    return _context.STATE.active


def _normalize(features: Optional[Any]) -> FrozenSet[str]:
    if features is None:
        return frozenset(FEATURES)
    if isinstance(features, str):
        features = [features]
    feats = frozenset(features)
    unknown = sorted(feats - set(FEATURES))
    if unknown:
        raise ValueError(f"unknown fastpass feature(s) {unknown}; known: {list(FEATURES)}")
    return feats


def _base_version(v: str) -> str:
    return v.split("+", 1)[0]


def check_versions(allow_untested: bool = False) -> None:
    if allow_untested or os.environ.get("FASTPASS_ALLOW_UNTESTED", "") == "1":
        return
    found = {}
    for dist in TESTED_VERSIONS:
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            found[dist] = "<not installed>"
    bad = {d: v for d, v in found.items() if _base_version(v) != TESTED_VERSIONS[d]}
    if bad:
        raise UntestedVersionError(
            "fastpass patches private internals and is only verified against "
            + ", ".join(f"{d}=={v}" for d, v in TESTED_VERSIONS.items())
            + "; found "
            + ", ".join(f"{d}=={v}" for d, v in found.items())
            + ". Pass allow_untested_versions=True or set FASTPASS_ALLOW_UNTESTED=1 to override."
        )


_warned_stale = False


def _normalize_trust(trust: Any) -> Trust:
    try:
        return Trust(trust)
    except ValueError:
        raise ValueError(f"unknown trust {trust!r}; trust is one of {[t.value for t in Trust]}") from None


def _warn_if_stale() -> None:
    """Once per process: how many proven annotations no longer hold (they run stock until re-proven)."""
    global _warned_stale
    if _warned_stale:
        return
    stale = _proofs.stale_sound()  # a damaged ledger raises here, every time: the flag is set only after
    _warned_stale = True
    if stale:
        warnings.warn(f"fastpass: {len(stale)} annotation(s) proven sound in {_proofs.LEDGER_PATH.name} changed "
                      f"since (claim, fastpass's machinery or executorch/torch): they run stock until "
                      f"`python -m verify gate --since-gated --record-gated` proves them again "
                      f"(first: {', '.join(n.rsplit('.', 1)[-1] for n in stale[:3])})", stacklevel=4)


def install(features: Optional[Any] = None, allow_untested_versions: bool = False,
            trust: Any = Trust.PROVEN) -> None:
    feats = _normalize(features)
    trust = _normalize_trust(trust)
    if _context.STATE.active:
        raise RuntimeError("fastpass is already enabled (nesting is not supported; call disable() first)")
    check_versions(allow_untested_versions)
    if trust is Trust.PROVEN:
        _warn_if_stale()
    _context.STATE.install(patch_table(), feats)
    _context.TRUST = trust
    from . import _emit

    _emit.forget_config_answers()
    if "gc" in feats:
        from . import _gc

        _gc.start()
    if "fakecache" in feats:
        from . import _fakecache

        _fakecache.evict_extended_entries()
    _stats.start_fake_window()


def restore() -> None:
    had_fakecache = "fakecache" in _context.STATE.features
    _context.STATE.restore()
    from . import _gc, _lazycode, _sig

    _lazycode.flush()
    _gc.stop()

    _sig.clear()
    _context.STACK.clear()
    _stats.stop_fake_window()
    if had_fakecache:
        from . import _fakecache

        _fakecache.evict_extended_entries()
