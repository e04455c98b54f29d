"""verify.crosscheck: every intercepted call returns what stock returned, is compared with every
check, and a fastpass-only fault is reported as a divergence at its pass, with a reproducer
that replays it (and `strict=True` raises)."""

from __future__ import annotations

import contextlib
import copy

import pytest
import torch

import fastpass
from tests import faults
from verify.compare import CHECKS
from verify.crosscheck import CrosscheckDivergence, EntryPoint, crosscheck, intercept
from verify.vocabulary import Verdict
from verify.cli import main as verify_main


class ClampModel(torch.nn.Module):
    """Something for ConvertToClampPass to rewrite (hardtanh and relu become clamps)."""

    def forward(self, x):
        return torch.nn.functional.hardtanh(x * 2.0) + torch.relu(x)


class CastModel(torch.nn.Module):
    """A dtype cast: to_edge's MemoryFormatOpsPass turns `_to_copy` into `_to_dim_order_copy`."""

    def forward(self, x):
        return (x.to(torch.int32) + 1).to(torch.float32)


@pytest.fixture(scope="module")
def edge_program():
    from executorch.exir import to_edge

    return to_edge(torch.export.export(ClampModel(), (torch.randn(2, 3),))).exported_program()


def clamp_pass():
    from executorch.backends.arm._passes import ConvertToClampPass

    return ConvertToClampPass


def transform(program):
    from executorch.exir.program._program import _transform

    return _transform(program, clamp_pass()())


def fastpass_only_fault(pass_cls, mutate):
    """A bug that exists only with fastpass on: `mutate` the graph `pass_cls` returns."""
    return faults.after_pass(pass_cls, mutate, when=fastpass.is_enabled)


def rename_first_clamp(graph_module):
    node = next(n for n in graph_module.graph.nodes if n.op == "call_function" and "clamp" in str(n.target))
    node._rename(node.name + "_renamed")


def test_returns_the_stock_result_and_compares_with_every_check(edge_program):
    expected = transform(copy.deepcopy(edge_program))
    with crosscheck() as session:
        session.context = "unit"
        got = transform(copy.deepcopy(edge_program))
    assert str(got.graph) == str(expected.graph)
    assert "clamp" in str(got.graph)
    assert not fastpass.is_enabled() and not intercept.installed()
    [record] = session.records  # the pass manager inside the call is not a second, nested record
    assert record.entry_point is EntryPoint.PASS_CALL and record.context == "unit"
    assert record.verdict is Verdict.IDENTICAL, record.describe()
    assert record.checks_run == tuple(CHECKS)  # whatever the harness checks, crosscheck checks
    assert record.passes_observed >= 1 and record.stock_seconds > 0 and record.fastpass_seconds > 0
    assert record.fastpass_work.passes_run >= 1  # the second lowering really ran with fastpass


def test_stock_exception_reaches_the_caller_unchanged(edge_program):
    def broken(self, graph_module):
        raise ValueError("injected failure")

    def raised(call):
        with pytest.raises(Exception) as info:
            call()
        return info.value

    cls = clamp_pass()
    cls.call = broken
    try:
        expected = raised(lambda: transform(copy.deepcopy(edge_program)))
        with crosscheck() as session:
            got = raised(lambda: transform(copy.deepcopy(edge_program)))
    finally:
        del cls.call
    assert type(got) is type(expected) and str(got) == str(expected)  # the pass manager's wrapper
    assert isinstance(got.__cause__, ValueError) and str(got.__cause__) == "injected failure"
    [record] = session.records
    assert record.verdict is Verdict.IDENTICAL  # both runs failed the same way: the outcome check agrees
    assert record.stock_error and "injected failure" in record.stock_error


def test_callers_random_state_is_not_moved(edge_program):
    torch.manual_seed(0)
    transform(copy.deepcopy(edge_program))
    expected = torch.rand(4)
    torch.manual_seed(0)
    with crosscheck():
        transform(copy.deepcopy(edge_program))
    assert torch.equal(torch.rand(4), expected)


def test_fastpass_only_fault_is_divergent_at_its_pass_with_a_replayable_reproducer(edge_program, tmp_path):
    with fastpass_only_fault(clamp_pass(), rename_first_clamp):
        with crosscheck(reproducer_dir=tmp_path) as session:
            session.context = "tests/x.py::test_fault"
            got = transform(copy.deepcopy(edge_program))
        assert "_renamed" not in str(got.graph)  # the caller still got stock's result
        [record] = session.records
        assert record.verdict is Verdict.DIVERGENT
        assert "graph" in record.failed_checks
        assert record.first_divergence is not None and record.first_divergence.step is not None
        assert record.first_divergence.pass_name == "ConvertToClampPass"
        assert record.reproducer is not None and record.reproducer.path.is_file(), record.reproducer
        assert "-m verify replay" in record.reproducer.command  # the one replay command
        # The fault lives in this process only: a fresh process, replaying the same input, finds
        # none, and the record says the divergence depends on what ran before.
        assert record.fresh_recheck is not None and record.fresh_recheck.reproduced is False, record.describe()
        assert "depends on what ran before" in record.describe()
        assert record.to_json()["fresh_recheck"]["reproduced"] is False
        # The saved input replays the divergence while the fault is there ...
        assert verify_main(["replay", str(record.reproducer.path), "--trust", "--any-hash-seed",
                            "--out", str(tmp_path / "again")]) == 1
        # ... and strict mode raises at the call.
        with crosscheck(strict=True, reproducer_dir=tmp_path, fresh_recheck=False), \
                pytest.raises(CrosscheckDivergence) as raised:
            transform(copy.deepcopy(edge_program))
        assert raised.value.record.first_divergence.pass_name == "ConvertToClampPass"
    # ... and is identical once the fault is gone.
    assert verify_main(["replay", str(record.reproducer.path), "--trust", "--any-hash-seed"]) == 0


# A fault in every process: Python imports `sitecustomize` at start-up from the path, so a fresh
# process started with this folder on PYTHONPATH has the fault before it replays anything.
_FAULT_IN_EVERY_PROCESS = """
import fastpass
from executorch.backends.arm._passes import ConvertToClampPass

_inherited = ConvertToClampPass.call


def _call(self, graph_module):
    result = _inherited(self, graph_module)
    if fastpass.is_enabled():
        node = next(n for n in result.graph_module.graph.nodes if n.op == "call_function" and "clamp" in str(n.target))
        node._rename(node.name + "_renamed")
        result.graph_module.recompile()
    return result


ConvertToClampPass.call = _call
"""


def test_a_divergence_the_program_makes_anywhere_is_reproduced_in_a_fresh_process(edge_program, tmp_path,
                                                                                    monkeypatch):
    """The other side of the fresh-process recheck: a fault that every process has (here planted
    at interpreter start-up) is divergent in the fresh process too, and the record says so."""
    import os

    startup = tmp_path / "startup"
    startup.mkdir()
    (startup / "sitecustomize.py").write_text(_FAULT_IN_EVERY_PROCESS)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(startup), os.environ.get("PYTHONPATH", "")]))
    with fastpass_only_fault(clamp_pass(), rename_first_clamp):
        with crosscheck(reproducer_dir=tmp_path / "repro") as session:
            transform(copy.deepcopy(edge_program))
    [record] = session.records
    assert record.verdict is Verdict.DIVERGENT
    assert record.fresh_recheck is not None and record.fresh_recheck.reproduced is True, record.describe()
    assert record.fresh_recheck.first_divergent_pass == record.first_divergence.label
    assert "reproduced in a fresh process" in record.describe()


def test_unsound_annotation_in_to_edge_is_divergent(tmp_path):
    """A wrong copy-sound annotation (MemoryFormatOpsPass said to target nothing): fastpass copies
    the `_to_copy` the pass exists to rewrite, and the crosscheck of to_edge says so."""
    from executorch.exir import to_edge
    from fastpass.annotations import Entry, overridden

    name = "executorch.exir.passes.memory_format_ops_pass.MemoryFormatOpsPass"
    program = torch.export.export(CastModel(), (torch.randn(2, 3),))
    wrong = Entry(frozenset(), skip_sound=False, copy_sound=True, why="deliberately wrong (test)")
    # trust="all": the wrong claim is no proven one, and the default trust would not use it
    with overridden({name: wrong}), crosscheck(reproducer_dir=tmp_path, fresh_recheck=False, trust="all") as session:
        edge = to_edge(program)
    assert "_to_dim_order_copy" in str(edge.exported_program().graph)  # stock, unchanged
    [record] = session.records
    assert record.entry_point is EntryPoint.TO_EDGE
    assert record.verdict is Verdict.DIVERGENT, record.describe()
    assert record.first_divergence is not None
    assert record.reproducer is not None and record.reproducer.path.is_file()


def test_refuses_to_nest_or_to_run_inside_fastpass(edge_program):
    from executorch.exir.program import _program

    cell_before = _program.to_edge.__closure__[0].cell_contents
    with crosscheck():
        with pytest.raises(RuntimeError, match="already enabled"):
            crosscheck().__enter__()
        with fastpass.enabled(), pytest.raises(RuntimeError, match="fastpass is enabled"):
            transform(copy.deepcopy(edge_program))
    with fastpass.enabled(), pytest.raises(RuntimeError, match="fastpass is already enabled"):
        crosscheck().__enter__()
    assert _program.to_edge.__closure__[0].cell_contents is cell_before  # restored exactly
    assert not intercept.installed()


@pytest.mark.slow
def test_a_whole_lowering_is_one_record_with_its_delegate():
    from executorch.exir import to_edge_transform_and_lower

    from verify import export_program, get_target
    from tests.models.tiny import make

    target = get_target("tosa-int")
    model, inputs = make()
    program = export_program(model, inputs, target)
    with crosscheck() as session:
        to_edge_transform_and_lower(program, partitioner=[target.make_partitioner(target.make_spec())])
    [record] = session.records  # its to_edge, transform and to_backend are nested, not top-level
    assert record.entry_point is EntryPoint.TO_EDGE_TRANSFORM_AND_LOWER
    assert record.verdict is Verdict.IDENTICAL, record.describe()
    assert record.delegates >= 1 and record.passes_observed > 50
    assert record.fastpass_work.nodes_copied > 0 or record.fastpass_work.passes_skipped > 0


def test_replay_refuses_a_missing_or_foreign_file_with_exit_2(tmp_path, capsys):
    assert verify_main(["replay", str(tmp_path / "missing.xcheck")]) == 2
    foreign = tmp_path / "foreign.xcheck"
    foreign.write_bytes(b"not a reproducer")
    assert verify_main(["replay", str(foreign)]) == 2
    err = capsys.readouterr().err
    assert "no such reproducer" in err and "cannot read reproducer" in err


def test_fastpass_run_never_touches_the_callers_objects(edge_program):
    """A pass that works on an object it holds (like QuantizeInputs on its EdgeProgramManager),
    wrapped by the pass manager in a closure a plain deep copy would share: only stock's run may
    reach the caller's object (regression: found by tox -e peer in test_ioquantization_pass)."""
    from torch.fx.passes.infra.pass_base import PassResult

    from executorch.exir.pass_base import ExportPass

    class RecordsOnHolder(ExportPass):
        def __init__(self, holder: list):
            super().__init__()
            self.holder = holder

        def call(self, graph_module):
            self.holder.append(fastpass.is_enabled())
            return PassResult(graph_module, False)

    holder: list[bool] = []
    from executorch.exir.program._program import _transform

    with crosscheck() as session:
        _transform(copy.deepcopy(edge_program), RecordsOnHolder(holder))
    assert holder == [False]  # the stock run's; the fastpass run appended to its own copy
    assert session.records[0].verdict is Verdict.IDENTICAL


class DynamicConvModel(torch.nn.Module):
    """A strided convolution over a dynamic height and width: its output size is a floor
    division of the symbols, and serializing the program (memory planning) guards on it."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, stride=3)

    def forward(self, x):
        return self.conv(x)


def _shape_env_state(env):
    return (list(env.guards), dict(env.replacements), dict(env.var_to_range), set(env.divisible),
            dict(env.axioms), env._version_counter)


def test_callers_shape_env_is_as_stock_left_it():
    """A deep copy shares its program's ShapeEnv (FakeTensor.__deepcopy__ keeps the fake mode), so
    the fastpass run and the `program` check's to_executorch() guarded in the caller's ShapeEnv
    (regression: found by tox -e peer in test_rewrite_conv_symbolic_comparison_with_int_specializes_to_hint,
    which asserts no guards after a to_edge; crosscheck had added three)."""
    from executorch.exir import to_edge
    from torch.export import Dim
    from torch.export.exported_program import _get_shape_env

    def exported():
        return torch.export.export(DynamicConvModel(), (torch.randn(1, 3, 8, 8),), dynamic_shapes={
            "x": {2: Dim("height", min=6, max=10), 3: Dim("width", min=6, max=10)}})

    def lowered_state(program, under_crosscheck):
        with crosscheck() if under_crosscheck else contextlib.nullcontext() as session:
            edge = to_edge(program)
        env = _get_shape_env(edge.exported_program().graph_module)
        assert env is _get_shape_env(program.graph_module)  # the caller's own ShapeEnv
        return _shape_env_state(env), session

    expected, _ = lowered_state(exported(), False)
    got, session = lowered_state(exported(), True)
    [record] = session.records
    assert record.verdict is Verdict.IDENTICAL, record.describe()
    assert "program" in record.checks_run  # the check that serializes (and guards) did run
    assert got == expected
    assert got[0] == []  # as the upstream test asserts


def test_shape_env_state_restores_in_place():
    import sympy
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    from verify.crosscheck.shape_env import ShapeEnvState

    env = ShapeEnv()
    symbol = env.create_unbacked_symint()
    before = _shape_env_state(env)
    state = ShapeEnvState.capture([env])
    torch._check(symbol >= 3)  # a runtime assert: refines the range, bumps the version
    env.divisible.add(sympy.Symbol("q"))
    assert _shape_env_state(env) != before
    assert env._maybe_evaluate_static(symbol.node.expr >= 2)  # cached under the state undone next
    state.restore()
    assert _shape_env_state(env) == before
    assert ShapeEnv._maybe_evaluate_static.cache_info().currsize == 0  # no answer from that state
    state.restore()  # again: the saved state is not the one now in use
    assert _shape_env_state(env) == before


def test_copied_inputs_keep_the_operators_a_pass_matches():
    """A pass holding a set of edge operators (PropagateViewCopyPermuteUpPass's `_targets`) must
    match the copied graph's nodes: executorch's EdgeOpOverload does not deep-copy to itself,
    and a copied pass whose targets compare unequal did nothing, so three of the wheel's
    test_propagate_permutes_views_pass.py tests diverged stock vs stock under crosscheck."""
    from executorch.backends.arm._passes.propagate_view_copy_permute_pass import PropagateViewCopyPermuteUpPass
    from executorch.exir.dialects._ops import ops as exir_ops

    from verify.crosscheck.inputs import copy_inputs

    original = PropagateViewCopyPermuteUpPass()
    (copied,), _ = copy_inputs((original,), {})
    assert copied is not original
    assert copied._targets == original._targets
    assert exir_ops.edge.aten.permute_copy.default in copied._targets
    import copy

    assert copy.deepcopy(exir_ops.edge.aten.permute_copy.default) != exir_ops.edge.aten.permute_copy.default, (
        "EdgeOpOverload deep-copies to itself now: the special case in verify.crosscheck.inputs can go")


# ---------------------------------------------------------------- stock that depends on node-set order


def tag_clamps_in_node_order(offset_with_fastpass: int = 0):
    """A pass bug stock has too: tag the clamps in the iteration order of a *set* of nodes (address
    order, like ConvertInt64OutputOpsToInt32Pass's `safe_consumers`). The address order is
    simulated so that the test is deterministic: as if the allocator gave stock graph order and
    fastpass the reverse; under verify.lowering.node_order the set's real order is used. With
    `offset_with_fastpass`, fastpass's tags are also offset: a result no node order gives."""
    from torch.fx import Node

    def mutate(graph_module):
        clamps = [n for n in graph_module.graph.nodes if n.op == "call_function" and "clamp" in str(n.target)]
        assert len(clamps) == 2
        if Node.__hash__ is not object.__hash__:  # a node order is in force: iterate the set
            ordered = list(set(clamps))
        else:
            ordered = list(reversed(clamps)) if fastpass.is_enabled() else clamps
        for index, node in enumerate(ordered):
            node.meta["visit_index"] = index + (offset_with_fastpass if fastpass.is_enabled() else 0)

    return faults.after_pass(clamp_pass(), mutate)


def test_node_order_patch_flips_two_node_sets_and_is_undone():
    from torch.fx import Graph, Node

    from verify.lowering.node_order import NodeOrder, ordered_node_hashes

    seen = {}
    for order in NodeOrder:
        with ordered_node_hashes(order):
            graph = Graph()
            a, b = graph.placeholder("a"), graph.placeholder("b")
            seen[order] = [n.name for n in {a, b}]
            assert {a: 1}[a] == 1 and a != b  # still identity: equality and lookup unchanged
    assert seen[NodeOrder.ASCENDING] == list(reversed(seen[NodeOrder.DESCENDING]))
    assert Node.__hash__ is object.__hash__  # the address hash is back


def test_a_result_stock_gives_under_another_node_order_is_nondeterministic_not_divergent(edge_program, tmp_path):
    with tag_clamps_in_node_order():
        with crosscheck(reproducer_dir=tmp_path) as session:
            transform(copy.deepcopy(edge_program))
    [record] = session.records
    assert record.verdict is Verdict.NONDETERMINISTIC, record.describe()
    recheck = record.order_recheck
    assert recheck.differing_checks == ("meta",) and recheck.explains
    assert recheck.first_divergence.pass_name == "ConvertToClampPass"
    assert recheck.reproduces_fastpass in ("ascending", "descending")
    assert record.reproducer is not None and record.reproducer.path.is_file()  # kept: an executorch finding
    assert "gives exactly fastpass's result" in record.describe()


def test_order_dependent_stock_does_not_excuse_a_result_no_order_gives(edge_program, tmp_path):
    """Same check (meta), same pass, stock order-dependent there -- but fastpass's tags are ones
    stock never writes: a fastpass fault hiding behind stock's nondeterminism stays divergent."""
    with tag_clamps_in_node_order(offset_with_fastpass=10):
        with crosscheck(reproducer_dir=tmp_path) as session:
            transform(copy.deepcopy(edge_program))
    [record] = session.records
    assert record.order_recheck.stock_depends_on_order and not record.order_recheck.explains
    assert record.verdict is Verdict.DIVERGENT, record.describe()


@pytest.mark.slow
def test_executorch_convert_int64_pass_depends_on_node_set_order():
    """The divergence tox -e peer found (tests/data/known_divergences/README.md): stock itself,
    under the two node orders, names the inserted casts' sources differently."""
    from pathlib import Path

    from executorch.exir.program import _program

    from verify.crosscheck.inputs import copy_inputs
    from verify.crosscheck.reproducer import load
    from verify.crosscheck.session import recheck_node_order

    from verify.lowering.lower import observe_call
    from verify.lowering.mode import Mode

    call = load(Path(__file__).parent / "data" / "known_divergences" / "convert_int64_output_ops_argmax.xcheck")
    pristine = copy_inputs(call.args, call.kwargs)
    args, kwargs = copy_inputs(*pristine)
    with call.lowering_context():
        fast = observe_call(lambda: _program.to_edge_transform_and_lower(*args, **kwargs), Mode.FASTPASS, (), True, 1)
        recheck = recheck_node_order(_program.to_edge_transform_and_lower, pristine, fast.result)
    assert recheck.error is None
    assert recheck.differing_checks == ("meta",)
    # whichever order this process's fastpass run happened to take, stock gives it under one of the two
    assert recheck.explains, recheck.describe()
    assert recheck.first_divergence.pass_name == "ConvertInt64OutputOpsToInt32Pass"
    assert any("from_node" in line for line in recheck.first_divergence.details)
