"""THE single place where fastpass touches executorch/torch objects.

Every patch point is one row of ``patch_table()``: (owner, attribute, feature,
replacement, why).  ``install(features)`` saves the original attribute values
(taken from the owner's own ``__dict__``, so restoring puts back the very same
objects) and sets the replacements; ``restore()`` puts every original back and
evicts fastpass-only FakeTensor cache entries.  No other module monkeypatches.

Versions: the replacements mirror upstream function bodies of executorch 1.5.1
and torch 2.13.0 line by line; on other versions ``install`` refuses unless
``allow_untested_versions=True`` or ``FASTPASS_ALLOW_UNTESTED=1``.

Nesting: enabling while already enabled raises ``RuntimeError`` (no refcount:
two callers with different feature sets cannot both be honoured).
"""

from __future__ import annotations

import importlib.metadata
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple

from . import _context, _stats

FEATURES: Tuple[str, ...] = ("skip", "copy", "fakecache", "provenance", "lazycode", "gc")

TESTED_VERSIONS = {"executorch": "1.5.1", "torch": "2.13.0"}


class UntestedVersionError(RuntimeError):
    pass


@dataclass(frozen=True)
class PatchPoint:
    owner: Any
    attribute: str
    feature: str  # a FEATURES name, "skip|copy" (installed if either is on) or "*" (always: stats)
    replacement: Callable[..., Any]
    orig_store: Dict[str, Any]  # module-level dict the replacement reads the original from
    store_key: str
    why: str


def patch_table() -> List[PatchPoint]:
    from executorch.backends.arm._passes.arm_pass import ArmPass
    from executorch.exir.pass_base import ExportPass, _ExportPassBase
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx import Graph, GraphModule
    from torch.fx.passes.infra.pass_base import PassBase
    from torch.fx.traceback import NodeSource

    from . import _copy, _fakecache, _lazycode, _passcall, _provenance

    return [
        PatchPoint(PassBase, "__call__", "*", _passcall.passbase_call, _passcall.ORIG, "PassBase.__call__",
                   "pass-call level for exir/torch passes: per-pass stats, skip decision, copy context; "
                   "delegates to the original when the pass runs"),
        PatchPoint(ArmPass, "__call__", "*", _passcall.arm_pass_call, _passcall.ORIG, "ArmPass.__call__",
                   "same for ARM passes (ArmPass overrides __call__); upstream should_run_pass is honoured first"),
        PatchPoint(_ExportPassBase, "_fx", "skip|copy", _copy.fx_with_signature, _copy.ORIG, "_fx",
                   "attach creation signatures (val + inputs) to every dispatched node"),
        PatchPoint(ExportPass, "call_submodule", "skip|copy", _copy.call_submodule_tracking, _copy.ORIG, "call_submodule",
                   "track top-level vs nested submodule retrace (copy only at top level)"),
        PatchPoint(_ExportPassBase.ExportInterpreter, "run_node", "copy", _copy.interpreter_run_node, _copy.ORIG,
                   "run_node", "in copy-sound passes, format node_debug_str only if it is read"),
        PatchPoint(Graph, "create_node", "copy", _copy.graph_create_node, _copy.ORIG, "Graph.create_node",
                   "skip the raw-SymInt argument scan for nodes the copy path creates (it holds none)"),
        PatchPoint(ExportPass.ExportInterpreter, "call_function", "copy", _copy.interpreter_call_function, _copy.ORIG,
                   "call_function", "emit cold nodes of copy-sound passes without FakeTensor dispatch"),
        PatchPoint(FakeTensorMode, "_cache_key", "fakecache", _fakecache._wrapped_cache_key, _fakecache.ORIG,
                   "_cache_key", "key executorch-namespace entries on TOSA context + private marker"),
        PatchPoint(FakeTensorMode, "_validate_cache_key", "fakecache", _fakecache._wrapped_validate, _fakecache.ORIG,
                   "_validate_cache_key", "accept the 'non-builtin' bypass for executorch namespaces only"),
        PatchPoint(FakeTensorMode, "_output_from_cache_entry", "fakecache", _fakecache._wrapped_output_from_cache_entry,
                   _fakecache.ORIG, "_output_from_cache_entry", "count cache hits on executorch-namespace ops"),
        PatchPoint(NodeSource, "__init__", "provenance", _provenance.shared_nodesource_init, {}, "NodeSource.__init__",
                   "share from_node NodeSource elements instead of deep-copying the chain"),
        PatchPoint(GraphModule, "recompile", "lazycode", _lazycode.lazy_recompile, _lazycode.ORIG, "recompile",
                   "generate a GraphModule's Python code on first use instead of on every graph edit"),
        PatchPoint(GraphModule, "__reduce__", "lazycode", _lazycode.reduce_with_code, _lazycode.ORIG, "__reduce__",
                   "pickling copies __dict__ before it calls recompile: generate pending code first"),
        PatchPoint(GraphModule, "__reduce_package__", "lazycode", _lazycode.reduce_package_with_code, _lazycode.ORIG,
                   "__reduce_package__", "same for torch.package"),
    ]


# --- state -------------------------------------------------------------------

_INSTALLED: List[Tuple[PatchPoint, Any]] = []  # (point, original attribute value)
_ON = [False]


def is_installed() -> bool:
    return _ON[0]


def active_features() -> FrozenSet[str]:
    return _context.FEATURES


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


def _wanted(point: PatchPoint, feats: FrozenSet[str]) -> bool:
    return point.feature == "*" or any(f in feats for f in point.feature.split("|"))


def install(features: Optional[Any] = None, allow_untested_versions: bool = False) -> None:
    feats = _normalize(features)
    if _ON[0] or _INSTALLED:
        raise RuntimeError("fastpass is already enabled (nesting is not supported; call disable() first)")
    check_versions(allow_untested_versions)
    table = patch_table()
    try:
        for point in table:
            if not _wanted(point, feats):
                continue
            if point.attribute not in vars(point.owner):
                raise RuntimeError(f"patch point {point.owner!r}.{point.attribute} not found")
            orig = vars(point.owner)[point.attribute]
            point.orig_store[point.store_key] = orig
            setattr(point.owner, point.attribute, point.replacement)
            _INSTALLED.append((point, orig))
    except BaseException:
        restore()
        raise
    _context.FEATURES = feats
    _ON[0] = True
    if "gc" in feats:
        from . import _gc

        _gc.start()
    if "fakecache" in feats:
        from . import _fakecache

        _fakecache.evict_extended_entries()
    _stats.start_fake_window()


def restore() -> None:
    while _INSTALLED:
        point, orig = _INSTALLED.pop()
        setattr(point.owner, point.attribute, orig)
        point.orig_store.pop(point.store_key, None)
    had_fakecache = "fakecache" in _context.FEATURES
    from . import _gc, _lazycode, _sig

    _lazycode.flush()
    _gc.stop()

    _sig.clear()
    _context.FEATURES = frozenset()
    _context.STACK.clear()
    _ON[0] = False
    _stats.stop_fake_window()
    if had_fakecache:
        from . import _fakecache

        _fakecache.evict_extended_entries()


def describe() -> List[Dict[str, str]]:
    """The patch table as plain data (for docs/reports)."""
    out = []
    for p in patch_table():
        owner = getattr(p.owner, "__qualname__", repr(p.owner))
        out.append({"owner": f"{p.owner.__module__}.{owner}", "attribute": p.attribute,
                    "feature": p.feature, "why": p.why})
    return out
