"""fastpass: faster ExecuTorch ARM/TOSA lowering, byte-identical to stock.

Public API (stable; see README/docstrings of the private modules for the why):

    FEATURES                      ("skip", "copy", "emit", "fakecache", "provenance", "lazycode", "gc",
                                   "ciatable", "verifyonce", "retrace")
    enabled(features=None, allow_untested_versions=False, trust="proven")   context manager
    enable(features=None, allow_untested_versions=False, trust="proven"); disable(); is_enabled()
    stats() -> dict; reset_stats()

Trust: ``"proven"`` (the default) uses an annotation only when the proof ledger
(``fastpass/annotations/proofs.json``, written by ``python -m verify gate --record-gated``)
says ``sound`` for exactly that claim, this fastpass machinery and these executorch/torch
versions; every other pass runs stock. ``"all"`` uses every annotation in effect (the gate,
which proves them, needs it). ``stats()["relied_on"]`` names each annotation a lowering
skipped or copied by, with its ledger status.

Enabling twice without disabling raises RuntimeError (no nesting/refcount:
two callers asking for different feature sets could not both be honoured).
The patches are process-global and the bookkeeping is not thread-safe: enable
fastpass around lowerings that run on one thread.

Features:
    skip        don't run a skip-sound pass when none of its targeted ops is in
                the graph *and* the graph is a retrace fixed point
    copy        in copy-sound passes, emit untouched nodes without FakeTensor
                dispatch (re-dispatch as soon as an input's metadata changed)
    emit        create a node a pass dispatches as copy creates its nodes, without the
                tracer's generic argument conversion and meta-context copying
    fakecache   let FakeTensor's dispatch cache serve executorch-namespace ops
    provenance  share ``from_node`` NodeSource chains instead of deep-copying
    lazycode    generate a GraphModule's Python code when first used, not on every edit
    gc          freeze the pre-lowering heap for the garbage collector (no patch point;
                process-level settings, restored on disable)
    ciatable    run_decompositions' CompositeImplicitAutograd op table: materialize the
                dispatcher's CIA ops only when something changed (once per namespace walk),
                install the overrides directly
    verifyonce  the edge dialect's dtype verifier: don't re-run a check that already passed
                on exactly this graph state
    retrace     run_decompositions: write what its AOTAutograd re-trace would write when the
                program is functional ATen IR and each node is recorded as it is or as the one
                op its CompositeImplicitAutograd decomposition calls
"""

from __future__ import annotations

import contextlib
from typing import Any, Dict, Iterator, Optional

from . import _patches, _stats

FEATURES = _patches.FEATURES


def enable(features: Optional[Any] = None, allow_untested_versions: bool = False, trust: Any = "proven") -> None:
    _patches.install(features, allow_untested_versions=allow_untested_versions, trust=trust)


def disable() -> None:
    _patches.restore()


def is_enabled() -> bool:
    return _patches.is_installed()


@contextlib.contextmanager
def enabled(features: Optional[Any] = None, allow_untested_versions: bool = False,
            trust: Any = "proven") -> Iterator[None]:
    enable(features, allow_untested_versions=allow_untested_versions, trust=trust)
    try:
        yield
    finally:
        disable()


def stats() -> Dict[str, Any]:
    return _stats.snapshot()


def reset_stats() -> None:
    _stats.reset()


__all__ = ["FEATURES", "enable", "disable", "enabled", "is_enabled", "stats", "reset_stats"]
