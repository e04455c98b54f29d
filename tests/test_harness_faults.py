"""Every check of the harness, shown to fail: inject the fault it exists to catch into the
second of two stock lowerings and assert the harness reports it, at the right pass."""

from __future__ import annotations

import pytest

from tests import faults
from tests.models.tiny import make
from verify import export_program, get_target, lower
from verify.compare import compare
from verify.compare.checks import first_divergence
from verify.lowering.mode import Mode

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
    result = lower(program, target, Mode.STOCK)
    assert result.ok, result.error
    return result


def lower_again(program, target):
    return lower(program, target, Mode.STOCK)


def failing(checks):
    return sorted(name for name, result in checks.items() if not result.passed)


def test_null_comparison_is_identical(baseline, program, target):
    checks = compare(baseline, lower_again(program, target))
    assert failing(checks) == []
    assert baseline.program and checks["program"].details == [f"{len(baseline.program)} bytes identical"]


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
    assert PASS in checks[check].first_divergence.label
    assert any(detail in line for line in checks[check].details), checks[check].details
    assert PASS in first_divergence(baseline, checks).label


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
    assert failing(checks) == ["payload", "program"]  # the delegate's bytes are in the .pte too
    assert checks["payload"].first_divergence.label == "delegate0"
    assert "(delegate payload): pte.program.backend_delegate_data[0].data" in checks["program"].details[1]


def test_flipped_program_byte(baseline, program, target):
    with faults.flip_program_byte():
        other = lower_again(program, target)
    checks = compare(baseline, other)
    assert failing(checks) == ["program"]
    size = len(baseline.program)
    assert checks["program"].details[0] == f".pte: {size} vs {size} bytes, first difference at offset {size // 2}"
    assert checks["program"].first_divergence.label == "serialized program"


def test_serialization_failing_in_one_mode_only_is_a_divergence(baseline):
    import dataclasses

    failed = dataclasses.replace(baseline, program=None, program_error="RuntimeError: injected")
    checks = compare(baseline, failed)
    assert failing(checks) == ["program"]
    assert checks["program"].details[2] == "stock: RuntimeError: injected"
    both = compare(failed, dataclasses.replace(failed))
    assert failing(both) == []
    assert "not serialized in either mode, the same way: RuntimeError: injected" in both["program"].details[0]


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


@pytest.fixture(scope="module")
def partly_program(target):
    from generators.models import MODELS

    model, inputs = MODELS["partly_delegated"]()
    return export_program(model, inputs, target)


@pytest.fixture(scope="module")
def partly_baseline(partly_program, target):
    result = lower(partly_program, target, Mode.STOCK)
    assert result.ok, result.error
    return result


@pytest.mark.slow
def test_partly_delegated_null_comparison_is_identical(partly_baseline, partly_program, target):
    checks = compare(partly_baseline, lower_again(partly_program, target))
    assert failing(checks) == []
    names = {c.name for c in partly_baseline.constants}
    assert {"reference", "period"} <= names  # what the partitioner left on the CPU
    assert checks["constants"].details == [f"{len(partly_baseline.constants)} top-level constants identical"]


@pytest.mark.slow
def test_changed_top_level_weight(partly_baseline, partly_program, target):
    with faults.change_top_level_constant("reference", faults.add_one_to_first_element):
        other = lower_again(partly_program, target)
    checks = compare(partly_baseline, other)
    assert failing(checks) == ["constants", "program"]  # the weight is serialized into the .pte too
    assert checks["constants"].details[0].startswith("reference: values differ, 64 vs 64 bytes, first difference at offset")
    assert "1 of 16 elements, first at (0,)" in checks["constants"].details[0]
    assert "(constant data): pte.program.constant_buffer[" in checks["program"].details[1]


@pytest.mark.slow
def test_changed_top_level_constant_metadata(partly_baseline, partly_program, target):
    with faults.change_top_level_constant("period", faults.flip_requires_grad):
        other = lower_again(partly_program, target)
    checks = compare(partly_baseline, other)
    assert failing(checks) == ["constants"]  # requires_grad of a constant does not reach the .pte
    assert checks["constants"].details == ["period: requires_grad False vs True"]


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
    assert checks["outcome"].details[0] == "stock: ok"
    assert "injected failure" in checks["outcome"].details[1]
    assert PASS in checks["outcome"].first_divergence.label


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


def _plant_export_time_source(program, graph_id: int) -> None:
    """Give every call node of `program` one provenance record made before the lowering (no tag),
    naming graph `graph_id`: what export leaves in `from_node` for a graph long since freed."""
    import torch
    from torch.fx.traceback import NodeSource

    record = NodeSource(torch.fx.Graph().placeholder("exported"), pass_name="export")
    record.node_info.graph_id = graph_id
    for node in program.graph_module.graph.nodes:
        if node.op == "call_function":
            node.meta["from_node"] = [record]


def test_an_input_record_naming_an_address_a_copy_took_in_one_mode_only_is_not_a_divergence():
    """The mechanism of a crosscheck divergence that no fresh process reproduced: each mode
    lowers a deep copy of the input, whose graph takes a fresh address, and in one mode only that
    address was once a graph that the input's export-time records still name. That record and
    the lowering's own records of the copy's graph must stay two graphs in that mode, as they are
    in the other, where the addresses differ. Forced here: the same input in both modes, its
    export-time record naming an address nothing takes in the stock run and the fastpass copy's
    own graph in the fastpass run. Keyed by address and generation alone (no lowering in the
    tag), `meta` differs at to_edge's final graph."""
    import copy

    import torch
    from executorch.exir import to_edge

    from verify.lowering.lower import observe_call

    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.hardtanh(x * 2.0) + torch.relu(x)

    exported = torch.export.export(Model(), (torch.randn(2, 3),))
    stock_input, fastpass_input = exported, copy.deepcopy(exported)
    nothing_lives_here = object()
    _plant_export_time_source(stock_input, id(nothing_lives_here))
    _plant_export_time_source(fastpass_input, id(fastpass_input.graph_module.graph))
    stock = observe_call(lambda: to_edge(stock_input), Mode.STOCK).result
    fast = observe_call(lambda: to_edge(fastpass_input), Mode.FASTPASS).result
    assert stock.ok and fast.ok, (stock.error, fast.error)
    checks = compare(stock, fast)
    assert not failing(checks), {name: checks[name].details[:3] for name in failing(checks)}


def test_a_tag_left_by_an_earlier_lowering_is_not_read_as_this_lowerings_graph():
    """A record tagged by an earlier observed lowering (a test that calls to_edge, then to_backend
    on the result) counts generations in that lowering: its (address, generation) cannot be
    matched with this lowering's count, where the same pair may be a graph created since. So it
    keeps the identity it arrived with (the same in both modes, whose inputs are copies of one
    input) and never shares a number with this lowering's records, even where, as here, both
    happen to name one graph. Without the lowering in the tag they were one number."""
    import torch
    from torch.fx.traceback import NodeSource

    from verify.lowering.observe import observe_lowering
    from verify.lowering.snapshot import GraphIds, describe_from_node

    graph = torch.fx.Graph()
    with observe_lowering(snapshots=False):
        earlier = NodeSource(graph.placeholder("x"), pass_name="p")
    with observe_lowering(snapshots=False):
        now = NodeSource(graph.placeholder("y"), pass_name="p")
    assert earlier.graph_id == now.graph_id  # the same address, generation 0 in both lowerings
    graph_ids = GraphIds()
    assert [describe_from_node([s], graph_ids, full=False)[0][2] for s in (earlier, now)] == [0, 1]


def test_a_changed_stride_in_eager_input_vals_is_a_meta_difference():
    """``eager_input_vals`` records the inputs a stride-sensitive op (here quantize/dequantize)
    was traced with; a FakeTensor's repr leaves strides out, so the snapshot describes the key
    as it describes vals.  Two graphs that differ only in one input's stride there must differ."""
    import torch
    from executorch.exir.pass_base import ExportPass
    from torch.ao.quantization.fx._decomposed import quantized_decomposed_lib  # noqa: F401 - registers the ops

    from verify.compare.meta import meta_differences
    from verify.lowering.snapshot import GraphIds, take_snapshot

    q = torch.ops.quantized_decomposed

    class M(torch.nn.Module):
        def forward(self, x):
            return q.dequantize_per_tensor.default(
                q.quantize_per_tensor.default(x, 0.05, 3, -128, 127, torch.int8), 0.05, 3, -128, 127, torch.int8)

    gm = ExportPass()(torch.export.export(M(), (torch.randn(4, 6),)).graph_module).graph_module
    before = take_snapshot(gm, GraphIds())
    node = next(n for n in gm.graph.nodes if "eager_input_vals" in n.meta)
    (value, *rest), kwargs = node.meta["eager_input_vals"]
    transposed = value.t().contiguous().t()  # same shape, dtype and device: only the stride differs
    assert repr(transposed) == repr(value) and transposed.stride() != value.stride()
    node.meta["eager_input_vals"] = ((transposed, *rest), kwargs)
    after = take_snapshot(gm, GraphIds())
    assert before.digest != after.digest
    assert any("eager_input_vals" in line for line in meta_differences(before, after))


def test_snapshots_of_one_lowering_share_unchanged_records_and_still_see_a_change():
    """The observer's snapshots share a record that did not change (``RecordDigests``): a
    snapshot of an unchanged graph is the same records and digest; one changed meta value gives
    a new record for that node only, and a new digest."""
    import torch

    from verify.lowering.snapshot import GraphIds, RecordDigests, take_snapshot

    gm = torch.export.export(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU()),
                             (torch.randn(2, 3),)).graph_module
    ids, digests = GraphIds(), RecordDigests()
    first = take_snapshot(gm, ids, digests=digests)
    again = take_snapshot(gm, ids, digests=digests)
    assert again.digest == first.digest and all(a is b for a, b in zip(again.nodes, first.nodes))
    node = next(n for n in gm.graph.nodes if n.op == "call_function")
    node.meta["stack_trace"] = "changed"
    changed = take_snapshot(gm, ids, digests=digests)
    assert changed.digest != first.digest
    assert [a is not b for a, b in zip(changed.nodes, first.nodes)] == [n is node for n in gm.graph.nodes]
    assert changed.digest == take_snapshot(gm, GraphIds()).digest  # the digest does not depend on what was seen before


def test_the_texts_a_snapshot_looks_up_are_the_texts_formatting_gives():
    """``describe_val`` and ``_describe_arg`` look up the texts of dtypes, devices, layouts and
    plain-int shapes and strides instead of formatting them each time.  A lookup must give what
    formatting gives, keep apart what differs only there (dtype, device, stride; ``True`` and
    ``1``, equal as keys), and leave a symbolic shape, which cannot be a key, formatted."""
    import torch

    from verify.lowering.snapshot import _describe_arg, describe_val

    def formatted(t):
        strided = t.layout == torch.strided
        return ("T", tuple(map(str, t.shape)), str(t.dtype), tuple(map(str, t.stride())) if strided else None,
                str(t.storage_offset()) if strided else None, str(t.device), bool(t.requires_grad), str(t.layout))

    base = torch.zeros(2, 3)
    tensors = [base, base.to(torch.int8), base.to("meta"), base.t().contiguous().t(), base.to_sparse(),
               torch.zeros(2, 3, dtype=torch.int8)]
    for t in tensors + tensors:  # the second round reads what the first stored
        assert describe_val(t) == formatted(t)
    assert len({describe_val(t) for t in tensors}) == len(tensors) - 1  # the last repeats the second

    class Rows(torch.nn.Module):
        def forward(self, x):
            return x * 2

    batch = torch.export.Dim("batch", min=2)
    exported = torch.export.export(Rows(), (torch.zeros(4, 3),), dynamic_shapes=({0: batch},))
    symbolic = next(n.meta["val"] for n in exported.graph.nodes if n.op == "placeholder")
    assert not isinstance(symbolic.shape[0], int)
    assert describe_val(symbolic) == formatted(symbolic) and describe_val(symbolic)[1][0] == str(symbolic.shape[0])

    args = (True, 1, 1.0, None, torch.int8, torch.float32, False, 0)
    assert [_describe_arg(a) for a in args] == ["True", "1", "1.0", "None", "torch.int8", "torch.float32", "False", "0"]
    assert _describe_arg(args) == "(True, 1, 1.0, None, torch.int8, torch.float32, False, 0)"
