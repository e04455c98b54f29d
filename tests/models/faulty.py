"""Model factories that also plant a fault in the worker that imports them, so an
end-to-end run of `python -m verify` can be shown to report what it exists to catch.

The harness calls a factory twice in the pinned worker (to tell whether it is deterministic),
so a factory that patches executorch installs its patch once per process."""

import os
import sys

from tests import faults
from tests.models.tiny import Tiny, make

# Set by a test to make the worker running under that PYTHONHASHSEED die as it imports this
# file: the null-check worker (hash seed 1) crashes while the pinned one (0) works.
if os.environ.get("FAULTY_CRASH_AT_HASH_SEED") not in (None, "") and \
        os.environ.get("FAULTY_CRASH_AT_HASH_SEED") == os.environ.get("PYTHONHASHSEED"):
    os._exit(3)

_lowerings = {"count": 0}
_mutation = {"mutate_on": None}


def _install(mutate_on):
    from executorch.backends.arm._passes.decompose_linear_pass import DecomposeLinearPass

    _mutation["mutate_on"] = mutate_on
    if getattr(DecomposeLinearPass.call, "_faulty", False):
        return
    original = DecomposeLinearPass.__dict__["call"]

    def call(self, graph_module):
        _lowerings["count"] += 1
        result = original(self, graph_module)
        _mutation["mutate_on"](_lowerings["count"], result.graph_module)
        result.graph_module.recompile()
        return result

    call._faulty = True
    DecomposeLinearPass.call = call


def plain():
    """The tiny model, nothing planted (with FAULTY_CRASH_AT_HASH_SEED: a crashing null check)."""
    return make()


def renamed_in_second_lowering():
    """The second lowering in a process (the compared mode) renames a node: divergent."""
    _install(lambda n, gm: faults.rename_node(gm) if n == 2 else None)
    return make()


def renamed_at_random():
    """Every lowering renames a node differently: stock itself is unstable, nondeterministic."""
    suffix = os.urandom(4).hex()
    _install(lambda n, gm: faults.first_call_function(gm, lambda x: "convolution" in str(x.target))
             ._rename(f"conv_{suffix}_{n}"))
    return make()


def unseeded():
    """Fresh random weights and inputs on every call, in every process: the factory is not
    deterministic (stock is, across hash seeds)."""
    import torch

    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
    return Tiny().eval(), (torch.randn(1, 3, 8, 8),)


def unseeded_renamed_in_second_lowering():
    """A real divergence on a model whose factory is not deterministic: still `divergent`."""
    _install(lambda n, gm: faults.rename_node(gm) if n == 2 else None)
    return unseeded()


def sleeps():
    import time

    time.sleep(600)
    return make()


def spawns_sleeper():
    """Starts a process of its own, then hangs: the per-case timeout must kill both."""
    import subprocess
    import time

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print(f"faulty.spawns_sleeper: worker {os.getpid()} child {child.pid}", file=sys.stderr, flush=True)
    time.sleep(600)
    return make()


def three_items():
    model, inputs = make()
    return model, inputs, "extra"


def string_inputs():
    return Tiny().eval(), "not a tensor"


class _DataDependent(Tiny):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent control flow: torch.export cannot trace it
            return super().forward(x)
        return super().forward(-x)


def not_exportable():
    import torch

    torch.manual_seed(0)
    return _DataDependent().eval(), (torch.randn(1, 3, 8, 8),)


def changed_under_fastpass():
    """Turns an add into a sub only while fastpass is enabled: different delegate bytes."""

    def mutate(n, gm):
        import fastpass

        if fastpass.is_enabled():
            faults.change_target(gm)

    _install(mutate)
    return make()


def _tag_in_node_set_order(n, gm):
    import fastpass
    from torch.fx import Node

    nodes = [x for x in gm.graph.nodes if x.op == "call_function"]
    if Node.__hash__ is not object.__hash__:  # a node order (verify.lowering.node_order): the set's
        ordered = list(set(nodes))
    else:  # address order, simulated: as if the allocator gave stock graph order, fastpass the reverse
        ordered = list(reversed(nodes)) if fastpass.is_enabled() else nodes
    for index, node in enumerate(ordered):
        node.meta["visit_index"] = index


def tagged_in_node_set_order():
    """Every lowering tags its nodes in the iteration order of a *set* of nodes (address order,
    as executorch's ConvertInt64OutputOpsToInt32Pass does): stock and fastpass differ in `meta` at
    one pass, and stock under one of the two node orders gives exactly fastpass's result.
    The recheck worker only imports this file (it lowers the saved program): the test sets
    FAULTY_TAG_IN_NODE_SET_ORDER so that the import plants the same pass there."""
    _install(_tag_in_node_set_order)
    return make()


if os.environ.get("FAULTY_TAG_IN_NODE_SET_ORDER"):
    _install(_tag_in_node_set_order)
