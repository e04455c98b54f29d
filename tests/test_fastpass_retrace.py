"""fastpass's `retrace` feature: run_decompositions writes what the re-trace would, when it can only
give the program back.

Each test lowers one small program both ways and compares everything a snapshot holds (names,
targets, args, every meta key, full provenance with graph ids renumbered, vals), the signature,
the state dict and the generated code. The rules each test shows, with the fault that breaks
it (tests/faults.py, planted by tests/test_fastpass_multioutput.py::test_each_rule_test_kills_its_fault):

- a node whose op the table decomposes runs the stock re-trace (`retrace_ignores_the_table`);
- a node whose name the trace would not give (a pass renamed it) is written with the name the
  trace gives it (`retrace_keeps_names`);
- a node a pass moved to another op gets what dispatching that op writes into its meta
  (`retrace_skips_dispatch_annotations`);
- a node whose op the table decomposes into one op gets what that op's dispatch writes into its
  meta, and nothing the lone trace of it writes for itself (`retrace_probes_around_the_lone_trace`);
- in a training-IR program (to_edge's first call): a view-like CIA op export cannot preserve
  (reshape, flatten) is written as the one view op its own kernel calls
  (`retrace_records_view_ops_unchanged`), each placeholder gets the ``desc`` aot gives a
  parameter, a buffer or a user input (`retrace_describes_every_input_as_plain`), and each node
  the ``tensor_meta`` the trace extracts under no_grad, not its own, extracted with grad enabled
  (`retrace_keeps_the_tensor_meta`);
- a training-IR op that writes an input runs the stock re-trace, which functionalizes it
  (`retrace_records_mutation`);
- a node whose arguments are not as the dispatcher hands them to the trace (a positional one
  given by keyword, as a pass or export may write it) is written with them as the trace records
  them (`retrace_keeps_the_arguments_as_written`); where that cannot be told (an int given for
  a float, which the dispatcher converts) it runs the stock re-trace
  (`retrace_takes_any_value_as_handed_back`);
- an op that returns nothing (export's ``_assert_tensor_metadata`` for ``.to(dtype)``) is
  written with no ``val`` and no ``tensor_meta``, as the trace records it
  (`retrace_gives_a_nothing_op_a_value`).
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


def check_a_renamed_node_is_written_with_the_trace_s_name() -> None:
    """A node renamed by a pass: the re-trace names it again by its op; so does fastpass,
    without tracing."""
    program = _functional_program()
    relu = next(n for n in program.graph.nodes if n.target is A.relu.default)
    relu.name = "activation"
    program.graph_module.recompile()
    stock, fast, (copied, run) = _stock_and_fast(lambda: program, lambda ep: ep.run_decompositions(_table(False)))
    assert "relu" in {n.name for n in stock.graph.nodes}
    assert _described(fast) == _described(stock)
    assert (copied, run) == (1, 0)


class _TwoCasts(torch.nn.Module):
    def forward(self, x):
        return x.to(torch.int32).to(torch.float32) * 2


def check_nodes_of_one_op_are_named_in_order() -> None:
    """Two nodes of one op whose names a pass swapped (the trace numbers each op's nodes in
    graph order: a node it names anew, such as a decomposed ``_to_dim_order_copy`` becoming
    ``_to_copy``, moves every later ``_to_copy`` on by one): the re-trace names them
    ``_to_copy``, ``_to_copy_1`` again, both with users; so does fastpass, without tracing."""
    program = torch.export.export(_TwoCasts().eval(), (torch.randn(2, 4),)).run_decompositions({})
    casts = [n for n in program.graph.nodes if n.target is A._to_copy.default]
    assert [n.name for n in casts] == ["_to_copy", "_to_copy_1"] and all(n.users for n in casts)
    casts[0].name, casts[1].name = "_to_copy_1", "_to_copy"
    program.graph_module.recompile()
    stock, fast, (copied, run) = _stock_and_fast(lambda: program, lambda ep: ep.run_decompositions(_table(False)))
    assert [n.name for n in stock.graph.nodes if n.target is A._to_copy.default] == ["_to_copy", "_to_copy_1"]
    assert _described(fast) == _described(stock)
    assert (copied, run) == (1, 0)


def test_nodes_of_one_op_are_named_in_order():
    check_nodes_of_one_op_are_named_in_order()


class _ConvFlattenLinear(torch.nn.Module):
    """What to_edge's first call meets in the ARM models: conv2d and linear (CIA ops the empty
    table preserves), flatten and reshape (view-like CIA ops export cannot preserve), parameters
    that require grad, a buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 2, 1)
        self.linear = torch.nn.Linear(8, 3)
        self.register_buffer("offset", torch.ones(3))

    def forward(self, x):
        flat = self.conv(x).flatten(1).reshape(1, 8)
        return torch.relu(self.linear(flat)) + self.offset


def check_a_training_ir_program_is_written() -> None:
    """to_edge's first call, ``run_decompositions({})`` on the training IR: no mutation, so the
    trace only turns flatten and reshape into view and describes the inputs. fastpass writes
    the same graph, names, descs and meta, without tracing."""
    program = torch.export.export(_ConvFlattenLinear().eval(), (torch.randn(1, 2, 2, 2),))
    assert [v.__name__ for v in program.verifiers] == ["TrainingIRVerifier"]
    stock, fast, (copied, run) = _stock_and_fast(lambda: program, lambda ep: ep.run_decompositions({}))
    assert A.view.default in {n.target for n in stock.graph.nodes}
    assert _described(fast) == _described(stock)
    assert (copied, run) == (1, 0)


class _InPlaceRelu(torch.nn.Module):
    def forward(self, x):
        return (x * 2).relu_() + 1


def check_a_training_ir_mutation_is_traced() -> None:
    """An in-place op whose result is used (``relu_``): the re-trace functionalizes it into
    relu; so must fastpass, by tracing."""
    program = torch.export.export(_InPlaceRelu().eval(), (torch.randn(2, 4),))
    assert A.relu_.default in {n.target for n in program.graph.nodes}
    try:
        stock, fast, (copied, run) = _stock_and_fast(lambda: program, lambda ep: ep.run_decompositions({}))
    except Exception as exc:  # relu_ written back: the new program's verifier refuses it
        raise AssertionError(f"run_decompositions failed: {exc}") from exc
    assert A.relu_.default not in {n.target for n in stock.graph.nodes}
    assert _described(fast) == _described(stock)
    assert (copied, run) == (0, 1)


class _LeakyRelu(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.leaky_relu(x * 2, 0.2)


def check_arguments_given_by_keyword_are_written_as_the_trace_records() -> None:
    """A node whose positional argument a pass wrote by keyword (``negative_slope=0.2``): the
    trace records it positionally, as the dispatcher hands it over; so does fastpass, without
    tracing."""
    program = torch.export.export(_LeakyRelu().eval(), (torch.randn(2, 4),))
    node = next(n for n in program.graph.nodes if n.target is A.leaky_relu.default)
    node.args, node.kwargs = node.args[:1], {"negative_slope": node.args[1]}
    program.graph_module.recompile()
    stock, fast, (copied, run) = _stock_and_fast(lambda: program, lambda ep: ep.run_decompositions({}))
    assert [n.args[1:] for n in stock.graph.nodes if n.target is A.leaky_relu.default] == [(0.2,)]
    assert _described(fast) == _described(stock)
    assert (copied, run) == (1, 0)


class _ToDtype(torch.nn.Module):
    def forward(self, x):
        return x.to(torch.int32) * 2


def check_a_dtype_conversion_is_written() -> None:
    """``.to(dtype)`` in the training IR: export puts an ``_assert_tensor_metadata`` before it,
    a node that returns nothing, has no users and holds its dtype by keyword; the trace
    records it with no val, named by its op, its dtype positional after ``None, None``, and
    decomposes ``to`` into ``_to_copy``. fastpass writes both calls (to_edge's first and
    second) as the trace does: the same graph, names, arguments and meta."""
    program = torch.export.export(_ToDtype().eval(), (torch.randn(2, 4),))
    first = next(n for n in program.graph.nodes if n.op == "call_function")
    assert first.target is A._assert_tensor_metadata.default and "dtype" in first.kwargs
    stock, fast, (copied, run) = _stock_and_fast(lambda: program, lambda ep: ep.run_decompositions({}))
    assert [n.args[1:] for n in stock.graph.nodes if n.target is A._assert_tensor_metadata.default] \
        == [(None, None, torch.float32)]
    assert _described(fast) == _described(stock)
    assert (copied, run) == (1, 0)
    aten_ir = program.run_decompositions({})
    stock, fast, (copied, run) = _stock_and_fast(lambda: aten_ir, lambda ep: ep.run_decompositions(_table(False)))
    assert _described(fast) == _described(stock)
    assert (copied, run) == (1, 0)


def test_arguments_given_by_keyword_are_written_as_the_trace_records():
    check_arguments_given_by_keyword_are_written_as_the_trace_records()


def test_a_dtype_conversion_is_written():
    check_a_dtype_conversion_is_written()


def test_the_trace_s_argument_convention():
    check_the_trace_s_argument_convention()


def check_the_trace_s_argument_convention() -> None:
    """``_as_the_trace_records``: positional up to the last non-default (a None default left out
    before it written out), kwarg-only by name when not default; None (cannot be told) for a
    tuple, a trailing default that is not None to fill in, an int given for a float or a bool
    for an int (the dispatcher converts them); an int default is not a float (IValue tags)."""
    from fastpass._retrace import _as_the_trace_records

    conv = A.conv2d.default
    assert _as_the_trace_records(conv, ("x", "w", None, [2, 2]), {}) == (("x", "w", None, [2, 2]), {})
    assert _as_the_trace_records(conv, ("x", "w", None, [2, 2], [0, 0]), {}) == (("x", "w", None, [2, 2]), {})
    assert _as_the_trace_records(conv, ("x", "w", None, (2, 2)), {}) is None  # a tuple
    assert _as_the_trace_records(conv, ("x", "w"), {"stride": [2, 2]}) == (("x", "w", None, [2, 2]), {})
    assert _as_the_trace_records(conv, ("x", "w"), {"padding": [1, 1]}) is None  # stride's default to fill in
    assert _as_the_trace_records(A.elu.default, ("x", 1.0), {}) == (("x", 1.0), {})  # 1.0 is not the default 1
    assert _as_the_trace_records(A.elu.default, ("x", 1), {}) == (("x",), {})
    full = A.full.default
    assert _as_the_trace_records(full, ([2], 1.0), {"dtype": torch.float32}) == (([2], 1.0), {"dtype": torch.float32})
    assert _as_the_trace_records(full, ([2], 1.0), {"dtype": None}) == (([2], 1.0), {})
    assert _as_the_trace_records(full, ([2], 1.0, torch.float32), {}) is None  # kwarg-only given positionally
    norm = A.native_layer_norm.default
    assert _as_the_trace_records(norm, ("x", [4], None, None, 1e-5), {}) == (("x", [4], None, None, 1e-5), {})
    assert _as_the_trace_records(norm, ("x", [4], None, None, 0), {}) is None  # the dispatcher hands back 0.0
    assert _as_the_trace_records(A.cumsum.default, ("x", True), {}) is None  # a bool for an int: handed back 1
    check = A._assert_tensor_metadata.default
    assert _as_the_trace_records(check, ("x",), {"dtype": torch.bool, "layout": torch.strided}) \
        == (("x", None, None, torch.bool), {"layout": torch.strided})


def test_a_training_ir_program_is_written():
    check_a_training_ir_program_is_written()


def test_a_training_ir_mutation_is_traced():
    check_a_training_ir_mutation_is_traced()


def test_nothing_to_decompose_is_written_not_traced():
    check_nothing_to_decompose_is_written_not_traced()


def test_a_decomposed_op_is_traced():
    check_a_decomposed_op_is_traced()


def test_a_one_op_decomposition_is_written():
    check_a_one_op_decomposition_is_written()


def test_a_renamed_node_is_written_with_the_trace_s_name():
    check_a_renamed_node_is_written_with_the_trace_s_name()


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
    assert _retrace.plain_program_reason(training, cia, python) == ""  # functional training IR: written
    in_place = torch.export.export(_InPlaceRelu().eval(), (torch.randn(2, 4),))
    assert _retrace.plain_program_reason(in_place, cia, python) == "aten.relu_.default mutates"


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
