"""A fault planted in fastpass's lowering for the cluster campaign tests
(tests/test_cluster_campaigns.py): with fastpass on, the TOSA backend's emitted bytes get one bit
flipped, so every delegated graph a fuzz cell draws diverges (the payload check) and the cell
saves a reproducer and a Hypothesis database entry. Hypothesis does not shrink the failure here
(the loaded profile loses its shrink phase): every graph fails alike, and each shrink step is a
whole lowering of seconds; what is tested is where the failure's files end up.

A pytest plugin because the cell runs in a pytest process on a cluster node: the test's cluster
is started with `PYTEST_PLUGINS` naming this module, and the fault is armed only in a process
whose environment holds `PLANTED_VARIABLE=1` (a `VERIFY_` variable: it travels with a job from
the harness to the node, verify.cluster.backend), so the other jobs on that cluster run clean."""

from __future__ import annotations

import os

PLANTED_VARIABLE = "VERIFY_TEST_PLANTED_FUZZ_FAULT"


def pytest_configure(config) -> None:
    if os.environ.get(PLANTED_VARIABLE) != "1":
        return
    import fastpass
    from executorch.backends.arm.tosa.backend import TOSABackend
    from hypothesis import Phase, settings

    # After conftest.py's pytest_configure (a plugin named in PYTEST_PLUGINS is registered before
    # it, so its hook runs after), which loaded the campaign's profile.
    settings.register_profile("planted", settings.default, phases=[Phase.explicit, Phase.reuse, Phase.generate])
    settings.load_profile("planted")

    original = TOSABackend.__dict__["preprocess"]

    def preprocess(edge_program, compile_specs):
        result = original.__func__(edge_program, compile_specs)
        if fastpass.is_enabled():
            data = bytearray(result.processed_bytes)
            data[len(data) // 2] ^= 0x01
            result.processed_bytes = bytes(data)
        return result

    TOSABackend.preprocess = staticmethod(preprocess)
