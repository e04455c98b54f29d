"""Keep a process that lowers graph after graph as fast as a fresh one.

A fuzz worker or the gate lowers hundreds of graphs in one process. Two things made each
lowering slower than the one before, neither of which can change a result:

- upstream memo caches keyed by graph objects (nodes, modules) that never evict kept every
  lowered graph alive, ~45 k objects and ~8 MB a graph (`clear_graph_caches`, after each
  lowering: a lowering never hits an entry left by an earlier one, its graph objects are
  all new). The same holds for the entries `to_executorch()` adds to FakeTensor's
  process-wide dispatch cache whose key holds a module (the `executorch_call_delegate`
  of each delegate, keyed by its LoweredBackendModule, so by the whole lowered program):
  only those are evicted, every other entry stays;
- every full collection of the cyclic garbage collector walked the process's long-lived heap
  (torch, executorch, Hypothesis, pytest: ~0.5 M objects), about half of a 20-op graph's
  stock lowering in a fuzz worker (`freeze_long_lived_heap` once the first graph is done,
  `release_long_lived_heap` when the campaign ends). Collection timing only decides when
  unreachable cycles are freed; the lowerings' own garbage is collected as usual.
"""

from __future__ import annotations

import gc
import sys

# (module, function): a functools cache keyed by graph objects
GRAPH_KEYED_CACHES: tuple[tuple[str, str], ...] = (
    ("executorch.exir.backend.utils", "is_same_node"),  # lru_cache(maxsize=None) over node pairs
    ("torchao.utils", "_assert_and_get_unique_device"),  # functools.cache over modules (pt2e prepare)
    ("torch.ao.quantization.fx.utils", "assert_and_get_unique_device"),  # the same, torch's copy
)

_frozen = False


def clear_graph_caches() -> int:
    """Empty every cache above whose module is loaded, and evict the FakeTensor dispatch
    cache's module-keyed entries; return how many entries were dropped."""
    dropped = 0
    for module_name, function_name in GRAPH_KEYED_CACHES:
        function = getattr(sys.modules.get(module_name), function_name, None)
        if function is not None and hasattr(function, "cache_clear"):
            dropped += function.cache_info().currsize
            function.cache_clear()
    return dropped + _evict_module_keyed_fake_tensor_entries()


def _evict_module_keyed_fake_tensor_entries() -> int:
    fake_tensor = sys.modules.get("torch._subclasses.fake_tensor")
    if fake_tensor is None:
        return 0
    from torch.nn import Module

    cache = fake_tensor.FakeTensorMode.cache
    stale = [key for key in cache if any(isinstance(part, Module) for part in getattr(key, "key", ()))]
    for key in stale:
        del cache[key]
    return len(stale)


def freeze_long_lived_heap() -> bool:
    """Collect, then move every surviving object out of the collector's sight (once).

    Call it between lowerings, once every import is done, when what is alive is the
    process's own long-lived state. Returns whether this call froze (False: already frozen
    here, or the process froze objects of its own, which are left alone).
    """
    global _frozen
    if _frozen or gc.get_freeze_count():
        return False
    gc.collect()
    gc.freeze()
    _frozen = True
    return True


def release_long_lived_heap() -> None:
    """Undo `freeze_long_lived_heap`: the objects return to the oldest generation."""
    global _frozen
    if _frozen:
        gc.unfreeze()
        _frozen = False
