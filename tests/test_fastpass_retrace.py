"""fastpass's `retrace` feature: run_decompositions writes what the re-trace would, when it can only
give the program back.

Each test lowers one small program both ways and compares everything a snapshot holds (names,
targets, args, every meta key, full provenance with graph ids renumbered, vals), the signature,
the state dict and the generated code. The rules each test shows, with the fault that breaks
it (tests/faults.py, planted by tests/test_fastpass_multioutput.py::test_each_rule_test_kills_its_fault):

- a node whose op the table decomposes runs the stock re-trace (`retrace_ignores_the_table`);
- a node whose name the trace would not give runs the stock re-trace, which renames it
  (`retrace_keeps_names`);
- a node a pass moved to another op gets what dispatching that op writes into its meta
  (`retrace_skips_dispatch_annotations`);
- a node whose op the table decomposes into one op gets what that op's dispatch writes into its
  meta, and nothing the lone trace of it writes for itself (`retrace_probes_around_the_lone_trace`).
"""

from __future__ import annotations

import pytest
import torch

import fastpass
from verify.lowering.snapshot import GraphIds, take_snapshot

pytestmark = pytest.mark.usefixtures("fastpass_disabled")

A = torch.ops.aten


class _LinearRelu(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)
        self.register_buffer("offset", torch.ones(3))

    def forward(self, x):
        return torch.relu(self.linear(x)) + self.offset


def _functional_program(decomposed: bool = True):
    """The program after a first ``run_decompositions``: core ATen (linear decomposed) or, with
    an empty table, functional with linear kept."""
    program = torch.export.export(_LinearRelu().eval(), (torch.randn(2, 4),))
    return program.run_decompositions(_table(False) if decomposed else {})


def _table(keep_linear: bool):
    from executorch.exir.tracer import _default_decomposition_table

    table = _default_decomposition_table()
    if keep_linear:
        table.pop(A.linear.default, None)
    return table


def _described(ep):
    return (take_snapshot(ep.graph_module, GraphIds(), full_provenance=True).nodes, str(ep.graph_signature),
            list(ep.state_dict), [id(v) for v in ep.state_dict.values()], ep.graph_module.code,
            str(ep.module_call_graph), [v.__name__ for v in ep.verifiers])


def _stock_and_fast(make_program, run):
    stock = run(make_program())
    with fastpass.enabled(["retrace"], trust="all"):
        fastpass.reset_stats()  # the counts of this run only (stats add up across enables)
        fast = run(make_program())
        counts = fastpass.stats()["retraces_copied"], fastpass.stats()["retraces_run"]
    return stock, fast, counts


def check_nothing_to_decompose_is_written_not_traced() -> None:
    """The third call's case: no op of the program in the table. Identical, and not traced."""
    program = _functional_program()
    stock, fast, (copied, run) = _stock_and_fast(lambda: program, lambda ep: ep.run_decompositions(_table(False)))
    assert _described(fast) == _described(stock)
    assert (copied, run) == (1, 0)


def check_a_decomposed_op_is_traced() -> None:
    """linear in the table: the re-trace decomposes it (permute + addmm); so must fastpass."""
    program = _functional_program(decomposed=False)
    stock, fast, (copied, run) = _stock_and_fast(lambda: program, lambda ep: ep.run_decompositions(_table(False)))
    assert A.linear.default not in {n.target for n in stock.graph.nodes}
    assert _described(fast) == _described(stock)
    assert (copied, run) == (0, 1)


class _Conv(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return torch.relu(self.conv(x))


def check_a_one_op_decomposition_is_written() -> None:
    """conv2d in the table: the re-trace records its CompositeImplicitAutograd decomposition, one
    convolution node named by its op (to_edge's second call, on every ARM model with a conv).
    fastpass traces the op alone and writes the node as the whole trace would: the same graph,
    names and meta -- and nothing of the lone trace's own (its dynamo-disabled dispatch_trace
    annotates the meta current when it starts)."""
    program = torch.export.export(_Conv().eval(), (torch.randn(1, 3, 8, 8),)).run_decompositions({})
    assert A.conv2d.default in {n.target for n in program.graph.nodes}
    stock, fast, (copied, run) = _stock_and_fast(lambda: program, lambda ep: ep.run_decompositions(_table(True)))
    assert A.convolution.default in {n.target for n in stock.graph.nodes}
    assert _described(fast) == _described(stock)
    assert (copied, run) == (1, 0)


def check_a_renamed_node_is_traced() -> None:
    """A node renamed by a pass: the re-trace names it again by its op; so must fastpass."""
    program = _functional_program()
    relu = next(n for n in program.graph.nodes if n.target is A.relu.default)
    relu.name = "activation"
    program.graph_module.recompile()
    stock, fast, (copied, run) = _stock_and_fast(lambda: program, lambda ep: ep.run_decompositions(_table(False)))
    assert "relu" in {n.name for n in stock.graph.nodes}
    assert _described(fast) == _described(stock)
    assert (copied, run) == (0, 1)


def test_nothing_to_decompose_is_written_not_traced():
    check_nothing_to_decompose_is_written_not_traced()


def test_a_decomposed_op_is_traced():
    check_a_decomposed_op_is_traced()


def test_a_one_op_decomposition_is_written():
    check_a_one_op_decomposition_is_written()


def test_a_renamed_node_is_traced():
    check_a_renamed_node_is_traced()


def test_the_reasons_a_program_is_traced():
    """The reasons the stock re-trace runs, as ``plain_program_reason`` names them."""
    from torch.export.exported_program import _split_decomp_table_to_cia_and_python_decomp

    from fastpass import _retrace

    program = _functional_program()
    cia, python = _split_decomp_table_to_cia_and_python_decomp(_table(False))
    assert _retrace.plain_program_reason(program, cia, python) == ""
    assert _retrace.plain_program_reason(program, cia, python, joint_loss_index=0) == "joint graph"
    kept = _functional_program(decomposed=False)
    assert "decomposes into more than one op" in _retrace.plain_program_reason(kept, cia, python)
    cia, python = _split_decomp_table_to_cia_and_python_decomp(_table(True))
    assert _retrace.plain_program_reason(kept, cia, python) == ""  # linear preserved: written, its dispatch probed
    training = torch.export.export(_LinearRelu().eval(), (torch.randn(2, 4),))
    assert _retrace.plain_program_reason(training, cia, python) == "not post-functionalization ATen IR"


class _Stop(Exception):
    pass


def _third_call_input(model_name: str, target_name: str):
    """The program to_edge's third run_decompositions receives (its kept ops moved into
    EDGE_DO_NOT_DECOMP), and the table it is called with; the lowering stops there."""
    from executorch.exir import to_edge_transform_and_lower

    from verify.cases import build_model
    from verify.lowering.quantize import export_program
    from verify.lowering.targets import get_target

    target = get_target(target_name)
    model, inputs = build_model(model_name)
    seen = []
    original = torch.export.ExportedProgram.run_decompositions

    def run_decompositions(self, *args, **kwargs):
        if len(seen) == 2:
            seen.append((self, args))
            raise _Stop
        seen.append(None)
        return original(self, *args, **kwargs)

    torch.export.ExportedProgram.run_decompositions = run_decompositions
    try:
        to_edge_transform_and_lower(export_program(model, inputs, target),
                                    partitioner=[target.make_partitioner(target.make_spec())])
    except _Stop:
        pass
    finally:
        torch.export.ExportedProgram.run_decompositions = original
    return seen[2]


def check_a_retargeted_nodes_dispatch_annotations_are_written() -> None:
    """deep_autoencoder on TOSA INT: to_edge's third run_decompositions meets its linears as
    EDGE_DO_NOT_DECOMP.linear (moved there by ``_replace_aten_ops_with_transformed_ops``). The
    trace dispatches that op for the first time; its kernel, aten.linear, reaches a
    dynamo-disabled function that annotates the node's ``custom`` meta (7 of its 10 linears did
    not carry the annotation before). fastpass must write the same, without tracing. fastpass
    runs first on the very program stock then traces: the stock trace writes the annotation
    into the input's own ``custom`` dicts too, in place."""
    from executorch.exir.tracer import _default_decomposition_table

    program, _ = _third_call_input("deep_autoencoder", "tosa-int")
    retargeted = [n for n in program.graph.nodes if n.op == "call_function" and "EDGE_DO_NOT_DECOMP" in str(n.target)]
    assert any("_torchdynamo_disable" not in n.meta.get("custom", {}) for n in retargeted)
    with fastpass.enabled(["retrace"], trust="all"):
        fastpass.reset_stats()
        fast = program.run_decompositions(_default_decomposition_table())
        counts = fastpass.stats()["retraces_copied"], fastpass.stats()["retraces_run"]
    stock = program.run_decompositions(_default_decomposition_table())
    assert _described(fast) == _described(stock)
    assert counts == (1, 0)


def test_a_retargeted_nodes_dispatch_annotations_are_written():
    check_a_retargeted_nodes_dispatch_annotations_are_written()
