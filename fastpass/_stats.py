"""Per-pass-invocation counters collected while fastpass is enabled.

Why a separate module: the hooks in ``_passcall``/``_copy``/``_fakecache`` only
*report* events here, so the public ``fastpass.stats()`` is a plain snapshot of
this module's state and never needs to know how a feature works.  Everything is
kept JSON-serialisable (ints, floats, bools, strings).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass
class PassRecord:
    name: str  # the class's __name__: what reports show (pass managers' step names are the same)
    qualname: str = ""  # module.qualname: what evidence is keyed on (two classes may share a name)
    ran: bool = False
    skipped: bool = False
    skip_reason: str = ""
    copied: int = 0
    dispatched: int = 0
    time_s: float = 0.0
    copy_s: float = 0.0  # time spent emitting copied nodes
    dispatch_s: float = 0.0  # time spent on nodes that went the stock way (copy on)
    depth: int = 0  # >0: invoked from inside another pass (time not double-counted)
    # The ledger status of the pass's annotation (annotations._proofs.ProofStatus value), "" when
    # it has none: what a skip or a copy in this call rested on.
    proof: str = ""

    @property
    def relied_on_annotation(self) -> bool:
        """Did fastpass act on the annotation here: skip the call by it, or copy nodes by it?"""
        return self.copied > 0 or (self.skipped and self.skip_reason == "no-targeted-ops")

    def as_dict(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "qualname": self.qualname,
            "ran": self.ran,
            "skipped": self.skipped,
            "skip_reason": self.skip_reason,
            "copied": self.copied,
            "dispatched": self.dispatched,
            "time_s": self.time_s,
            "copy_s": self.copy_s,
            "dispatch_s": self.dispatch_s,
            "depth": self.depth,
            "proof": self.proof,
        }


@dataclass
class _State:
    per_pass: List[PassRecord] = field(default_factory=list)
    # FakeTensorMode class counters are global; we keep a baseline so stats
    # only show what happened while fastpass was enabled.
    fake_hits_base: Optional[int] = None
    fake_misses_base: Optional[int] = None
    fake_hits_acc: int = 0
    fake_misses_acc: int = 0
    ext_hits: int = 0
    ext_misses: int = 0
    code_deferred: int = 0  # recompile() calls that generated no code (lazycode)
    code_generated: int = 0  # deferred code generated later, because it was used or on disable
    cia_materialized: int = 0  # _materialize_cpp_cia_ops calls made (ciatable)
    cia_materializations_skipped: int = 0  # ... and not made: nothing to materialize
    cia_ops_overridden: int = 0  # ops whose CIA kernels the fast override installed
    cia_walks_fused: int = 0  # namespace walks with one materialization, verified unchanged after
    cia_walks_rerun: int = 0  # ... whose walk changed the registrations: the stock walk was run
    dtype_checks_run: int = 0  # edge dtype verifier runs (verifyonce)
    dtype_checks_skipped: int = 0  # ... not run: that graph state already passed
    retraces_run: int = 0  # run_decompositions re-traces run the stock way (retrace)
    retraces_copied: int = 0  # ... not run: the program came back as the trace would write it
    # Pass invocations currently open (enter_pass without leave_pass): a pass called from inside
    # another one records depth > 0, so its time is not counted twice in time_in_passes_s.
    open_passes: int = 0


_S = _State()


def enter_pass(name: str, qualname: str = "") -> PassRecord:
    """Open the record of one pass invocation; ``leave_pass`` closes it (in a ``finally``)."""
    rec = PassRecord(name, qualname, depth=_S.open_passes)
    _S.per_pass.append(rec)
    _S.open_passes += 1
    return rec


def leave_pass(rec: PassRecord, started: float) -> None:
    _S.open_passes -= 1
    rec.time_s = time.perf_counter() - started


def now() -> float:
    return time.perf_counter()


def count_ext_hit() -> None:
    _S.ext_hits += 1


def count_ext_miss() -> None:
    _S.ext_misses += 1


def count_code_deferred() -> None:
    _S.code_deferred += 1


def count_code_generated() -> None:
    _S.code_generated += 1


def count_cia_materialization(skipped: bool) -> None:
    if skipped:
        _S.cia_materializations_skipped += 1
    else:
        _S.cia_materialized += 1


def count_cia_walk(fused: bool) -> None:
    if fused:
        _S.cia_walks_fused += 1
    else:
        _S.cia_walks_rerun += 1


def count_verification(skipped: bool) -> None:
    if skipped:
        _S.dtype_checks_skipped += 1
    else:
        _S.dtype_checks_run += 1


def count_retrace(copied: bool) -> None:
    if copied:
        _S.retraces_copied += 1
    else:
        _S.retraces_run += 1


def count_cia_override(ops: int) -> None:
    _S.cia_ops_overridden += ops


def _fake_counters() -> tuple[int, int]:
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode.cache_hits, FakeTensorMode.cache_misses


def start_fake_window() -> None:
    """Called on enable: start counting FakeTensor cache hits/misses."""
    _S.fake_hits_base, _S.fake_misses_base = _fake_counters()


def stop_fake_window() -> None:
    """Called on disable: fold the window into the accumulated counters."""
    if _S.fake_hits_base is None:
        return
    h, m = _fake_counters()
    _S.fake_hits_acc += max(0, h - _S.fake_hits_base)
    _S.fake_misses_acc += max(0, m - _S.fake_misses_base)
    _S.fake_hits_base = _S.fake_misses_base = None


def reset() -> None:
    active = _S.fake_hits_base is not None
    _S.per_pass.clear()
    _S.fake_hits_acc = _S.fake_misses_acc = 0
    _S.ext_hits = _S.ext_misses = 0
    _S.code_deferred = _S.code_generated = 0
    _S.cia_materialized = _S.cia_materializations_skipped = _S.cia_ops_overridden = 0
    _S.cia_walks_fused = _S.cia_walks_rerun = 0
    _S.dtype_checks_run = _S.dtype_checks_skipped = 0
    _S.retraces_run = _S.retraces_copied = 0
    _S.fake_hits_base = _S.fake_misses_base = None
    if active:
        start_fake_window()


def snapshot() -> Dict[str, Any]:
    hits, misses = _S.fake_hits_acc, _S.fake_misses_acc
    if _S.fake_hits_base is not None:
        h, m = _fake_counters()
        hits += max(0, h - _S.fake_hits_base)
        misses += max(0, m - _S.fake_misses_base)
    recs = _S.per_pass
    return {
        "passes_run": sum(1 for r in recs if r.ran),
        "passes_skipped": sum(1 for r in recs if r.skipped),
        "nodes_copied": sum(r.copied for r in recs),
        "nodes_dispatched": sum(r.dispatched for r in recs),
        "copy_seconds": sum(r.copy_s for r in recs),
        "dispatch_seconds": sum(r.dispatch_s for r in recs),
        "fakecache_hits": hits,
        "fakecache_misses": misses,
        # Hits/misses on executorch-namespace ops only (the extension's effect).
        "fakecache_ext_hits": _S.ext_hits,
        "fakecache_ext_misses": _S.ext_misses,
        # GraphModule code generation (lazycode): deferred, and deferred-then-generated.
        "code_deferred": _S.code_deferred,
        "code_generated": _S.code_generated,
        # run_decompositions' CIA op table (ciatable).
        "cia_materialized": _S.cia_materialized,
        "cia_materializations_skipped": _S.cia_materializations_skipped,
        "cia_ops_overridden": _S.cia_ops_overridden,
        "cia_walks_fused": _S.cia_walks_fused,
        "cia_walks_rerun": _S.cia_walks_rerun,
        # the edge dialect's dtype verifier (verifyonce)
        "dtype_checks_run": _S.dtype_checks_run,
        "dtype_checks_skipped": _S.dtype_checks_skipped,
        "retraces_run": _S.retraces_run,
        "retraces_copied": _S.retraces_copied,
        "time_in_passes_s": sum(r.time_s for r in recs if r.depth == 0),
        # Each annotation fastpass skipped or copied by, with its ledger status: what the lowering
        # rested on (under the default trust every one is "sound").
        "relied_on": dict(sorted({r.qualname: r.proof for r in recs if r.relied_on_annotation}.items())),
        "per_pass": [r.as_dict() for r in recs],
    }
