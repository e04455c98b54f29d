"""Every check of the harness, shown to fail: inject the fault it exists to catch into the
second of two stock lowerings and assert the harness reports it, at the right pass."""

from __future__ import annotations

import pytest

from tests import faults
from tests.models.tiny import make
from verify import compare, export_program, get_target, lower
from verify.compare.checks import first_divergent_pass

PASS = "DecomposeLinearPass"


@pytest.fixture(scope="module")
def target():
    return get_target("tosa-int")


@pytest.fixture(scope="module")
def program(target):
    model, inputs = make()
    return export_program(model, inputs, target)


@pytest.fixture(scope="module")
def baseline(program, target):
    result = lower(program, target, "full")
    assert result.ok, result.error
    return result


def lower_again(program, target):
    return lower(program, target, "full")


def failing(checks):
    return sorted(name for name, result in checks.items() if not result.passed)


def test_null_comparison_is_identical(baseline, program, target):
    checks = compare(baseline, lower_again(program, target))
    assert failing(checks) == []


@pytest.mark.parametrize("mutate, check, detail", [
    (faults.rename_node, "graph", "name"),
    (faults.change_target, "graph", "target"),
    (faults.stale_val, "val", "val"),
    (faults.drop_meta_key, "meta", "stack_trace"),
])
def test_graph_faults_are_localised_to_the_pass(baseline, program, target, mutate, check, detail):
    from executorch.backends.arm._passes.decompose_linear_pass import DecomposeLinearPass

    with faults.after_pass(DecomposeLinearPass, mutate):
        other = lower_again(program, target)
    checks = compare(baseline, other)
    assert not checks[check].passed
    assert PASS in checks[check].first_divergence
    assert any(detail in line for line in checks[check].details), checks[check].details
    assert PASS in first_divergent_pass(baseline, other, checks)


def test_renamed_node_is_identical_up_to_names(baseline, program, target):
    from executorch.backends.arm._passes.decompose_linear_pass import DecomposeLinearPass

    with faults.after_pass(DecomposeLinearPass, faults.rename_node):
        other = lower_again(program, target)
    details = compare(baseline, other)["graph"].details
    assert "identical up to names: yes" in details


def test_flipped_payload_byte(baseline, program, target):
    with faults.flip_payload_byte():
        other = lower_again(program, target)
    checks = compare(baseline, other)
    assert failing(checks) == ["payload"]
    assert checks["payload"].first_divergence == "delegate0"


def test_changed_tosa_is_reported(baseline, program, target):
    from executorch.backends.arm.tosa.backend import TOSABackend

    original = TOSABackend.__dict__["_preprocess"]

    def _preprocess(edge_program, compile_spec):
        result = original.__func__(edge_program, compile_spec)
        data = bytearray(result.processed_bytes)
        data[-64] ^= 0x01
        result.processed_bytes = bytes(data)
        return result

    TOSABackend._preprocess = staticmethod(_preprocess)
    try:
        other = lower_again(program, target)
    finally:
        TOSABackend._preprocess = original
    checks = compare(baseline, other)
    assert not checks["tosa"].passed and not checks["payload"].passed
    assert checks["graph"].passed and checks["val"].passed


def test_changed_reference_output(baseline, program, target):
    with faults.change_reference_output():
        other = lower_again(program, target)
    checks = compare(baseline, other)
    assert failing(checks) == ["reference"]
    assert "elements differ" in checks["reference"].details[0]


def test_dropped_pass_parts_the_pass_sequence(baseline, program, target):
    from executorch.backends.arm._passes import RemoveNoopPass

    with faults.drop_pass(RemoveNoopPass):
        other = lower_again(program, target)
    checks = compare(baseline, other)
    assert not checks["passes"].passed
    assert "RemoveNoopPass" in checks["passes"].details[0]


def test_failure_in_one_mode_only_is_a_divergence_with_both_outcomes(baseline, program, target):
    from executorch.backends.arm._passes.decompose_linear_pass import DecomposeLinearPass

    with faults.after_pass(DecomposeLinearPass, faults.raise_in):
        other = lower_again(program, target)
    assert not other.ok
    checks = compare(baseline, other)
    assert not checks["outcome"].passed
    assert checks["outcome"].details[0] == "full: ok"
    assert "injected failure" in checks["outcome"].details[1]
    assert PASS in checks["outcome"].first_divergence


def test_a_reused_graph_address_is_a_different_graph_in_provenance():
    """CPython hands a freed graph's address to a later graph: provenance must still tell them apart."""
    import gc

    import torch
    from torch.fx.traceback import NodeSource

    from verify.lowering.observe import observe_lowering
    from verify.lowering.snapshot import GraphIds, describe_from_node

    with observe_lowering(snapshots=False):
        for _ in range(500):
            first = torch.fx.Graph()
            first_source = NodeSource(first.placeholder("x"), pass_name="p")
            address = id(first)
            del first
            gc.collect()
            probes = [torch.fx.Graph() for _ in range(30)]  # alive: each takes a fresh block
            reuser = next((g for g in probes if id(g) == address), None)
            if reuser is not None:
                source = NodeSource(reuser.placeholder("x"), pass_name="p")
                break
        else:
            raise AssertionError("no graph reused a freed graph's address in 500 rounds")
    assert first_source.graph_id == source.graph_id  # the raw ids collide...
    graph_ids = GraphIds()
    numbers = [describe_from_node([s], graph_ids, full=False)[0][2] for s in (first_source, source)]
    assert numbers == [0, 1]  # ...the harness still numbers them as two graphs
