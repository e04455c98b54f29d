"""Keep the cyclic garbage collector from re-scanning the heap that existed before the lowering.

Why: a lowering allocates millions of short-lived objects (nodes, meta dicts, FakeTensors,
ProxyValues) on top of a heap of ~0.5 M objects (torch, executorch, the model, the program).
Every full collection walks that whole heap again; measured on the SleepNet featurizer, the
collector took ~30 % of a fastpass lowering's time.  ``gc.freeze()`` moves the objects that
exist at ``enable()`` into the permanent generation, so collections during the lowering only
walk what the lowering itself allocates, and a larger first-generation threshold makes
collections rarer.  Nothing is leaked: ``disable()`` unfreezes (the objects return to the
oldest generation and are collected as usual) and restores the thresholds.

Output cannot depend on this: collection timing only decides *when* unreachable cycles are
freed (the harness compares every node, meta key and byte, and shows it identical).
If the process already froze objects of its own, they are left alone and only the
threshold is raised.
"""

from __future__ import annotations

import gc
from typing import Tuple

YOUNG_THRESHOLD = 10_000  # stock CPython: 700

_SAVED: list = []  # [(thresholds, froze)] while enabled


def start() -> None:
    thresholds: Tuple[int, ...] = gc.get_threshold()
    froze = False
    if gc.get_freeze_count() == 0:
        gc.freeze()
        froze = True
    gc.set_threshold(max(YOUNG_THRESHOLD, thresholds[0]), *thresholds[1:])
    _SAVED.append((thresholds, froze))


def stop() -> None:
    if not _SAVED:
        return
    thresholds, froze = _SAVED.pop()
    if froze:
        gc.unfreeze()
    gc.set_threshold(*thresholds)
