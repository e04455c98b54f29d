"""Model factories that also plant a fault in the worker that imports them, so an
end-to-end run of `python -m verify` can be shown to report what it exists to catch."""

import os

from tests import faults
from tests.models.tiny import make

_lowerings = {"count": 0}


def _install(mutate_on):
    from executorch.backends.arm._passes.decompose_linear_pass import DecomposeLinearPass

    original = DecomposeLinearPass.__dict__["call"]

    def call(self, graph_module):
        _lowerings["count"] += 1
        result = original(self, graph_module)
        mutate_on(_lowerings["count"], result.graph_module)
        result.graph_module.recompile()
        return result

    DecomposeLinearPass.call = call


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


def sleeps():
    import time

    time.sleep(600)
    return make()


def changed_under_fastpass():
    """Turns an add into a sub only while fastpass is enabled: different delegate bytes."""

    def mutate(n, gm):
        import fastpass

        if fastpass.is_enabled():
            faults.change_target(gm)

    _install(mutate)
    return make()
