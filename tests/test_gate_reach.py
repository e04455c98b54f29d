"""Issue 43, what "sound" covers: distinct evidence, an aim at what a pass's code reaches, chains.

* distinct evidence: a graph drawn again (the same structure: ops, edges, params, shapes) is
  checked, but is no new evidence (`verify.gate.evidence`, `verdict.Evidence.add`); per mode the
  JSON has `examples` and `distinct`, and `examples_with_action` never exceeds `distinct`;
* aim through aliases and literal getattr (`verify.gate.aim`): AliasNamedPass and
  GetattrNamedPass (tests/passes/reach_passes.py) name the op they rewrite only as `A.tanh.default`
  / `getattr(A, "sin")`; their aim was empty and the default search called them sound;
* chains (`graphs.DrawKind.TARGETED_TO_SUSPECT_2/_3`, `generators.random.graphs_chained`):
  TwoHopPass rewrites a cos two producers after a tanh, through a cold node;
* properties (`generators.random.properties`; `ranks=True`, the typed vocabulary ops, `spread`):
  RankConditionedPass rewrites a neg only on a rank-5 operand, DtypeConditionedPass an add only of
  two integer operands, IntegerSliceConditionedPass a slice only of an integer operand; each
  verdict records per suspect the ranks x dtypes x distances drawn (`coverage`) and what the
  stage cannot present (`not_presented`).

Each toy pass is gated as `verify gate --pass F:C --examples 60` runs it (edge-fp, direct, <= 4
ops, 60 examples per feature; seeded, short shrinking), and again with its mechanism removed,
where it is no longer found."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from generators.random import Link, graphs_chained, interpret
from verify.gate import check
from verify.gate import graphs as gg
from verify.gate import passes as gp
from verify.gate import run
from verify.gate.evidence import structural_key
from verify.gate.graphs import Aim, DrawKind
from verify.gate.verdict import Evidence
from fastpass.annotations import ProofStatus
from verify.vocabulary import Feature, FeatureSet, Route

ROOT = Path(__file__).resolve().parents[1]
PASSES = "tests/passes/reach_passes.py"
CI_EXAMPLES = 60  # CI's `--examples 60`
CHAINS = frozenset({DrawKind.TARGETED_TO_SUSPECT_2, DrawKind.TARGETED_TO_SUSPECT_3})


@pytest.fixture(autouse=True)
def no_local_constants(monkeypatch):
    """As tests/test_gate_aim.py: Hypothesis's pool of constants from loaded local modules moves
    the draws with whatever else this process imported; empty, a search is a function of the
    strategy and the seed alone."""
    from hypothesis.internal.conjecture import providers

    empty = providers.Constants(integers=providers.SortedSet(), floats=providers.SortedSet(key=providers.float_to_int),
                                bytes=providers.SortedSet(), strings=providers.SortedSet())
    monkeypatch.setattr(providers, "_get_local_constants", lambda: empty)
    monkeypatch.setattr(providers, "CONSTANTS_CACHE", type(providers.CONSTANTS_CACHE)(1024))


def toy(name: str) -> type:
    cls = gp.resolve(str(ROOT / PASSES) + ":" + name)
    gp.ensure_annotation(cls)
    return cls


def gate_ci(cls: type, name: str, out: Path):
    """The gate on one toy pass with CI's defaults (`--pass F:C --examples 60`), seeded."""
    return run.gate_pass(cls, f"{PASSES}:{name}", CI_EXAMPLES, "edge-fp", out, seed=0, how=Route.DIRECT, max_ops=4,
                         shrink_seconds=10)


def without_reach(monkeypatch) -> None:
    """The aim as before issue 43: only the op names spelled out in the source are read."""
    monkeypatch.setattr(gp, "ops_reached", lambda tree, module_globals: set())
    gp.ops_named_by.cache_clear()


# ---------------------------------------------------------------------------------------------
# distinct evidence

X = [(1, 2, 4, 4)]


def test_the_structural_key_ignores_the_seed_and_nothing_else():
    base = interpret(X, [("relu", 0, 0), ("abs", 0, 0)], seed=1)
    assert structural_key(base) == structural_key(interpret(X, [("relu", 0, 0), ("abs", 0, 0)], seed=2))
    others = [interpret(X, [("relu", 0, 0), ("neg", 0, 0)]),  # an op
              interpret([(1, 2, 4, 6)], [("relu", 0, 0), ("abs", 0, 0)]),  # a shape
              interpret(X, [("relu", 0, 0), ("abs", 1, 0)]),  # an edge: abs(x0), not abs(relu)
              interpret(X, [("gelu", 0, 0), ("abs", 0, 0)])]
    keys = {structural_key(spec) for spec in others} | {structural_key(base)}
    assert len(keys) == len(others) + 1
    # params: gelu's `approximate`, "none" or "tanh"
    assert structural_key(interpret(X, [("gelu", 0, 0)])) != structural_key(interpret(X, [("gelu", 0, 1)]))


def test_a_repeated_graph_is_checked_but_is_no_new_evidence():
    a, b = interpret(X, [("relu", 0, 0)], seed=1), interpret(X, [("relu", 0, 0), ("abs", 0, 0)])
    e = Evidence(Feature.COPY)
    for spec in (a, a, interpret(X, [("relu", 0, 0)], seed=9), b):
        e.add(1, 0, 2, True, graph=spec)
    assert (e.examples, e.distinct, e.examples_with_action, e.copied_nodes) == (4, 2, 2, 8)
    assert e.to_json()["distinct"] == 2 and Evidence.from_json(e.to_json()).distinct == 2
    # a graph that gave no evidence the first time (it diverged elsewhere, or fastpass did not
    # act) may give it when drawn again: only evidence already given is not counted twice
    e = Evidence(Feature.COPY)
    e.add(1, 0, 0, True, graph=a)
    e.add(1, 0, 2, True, graph=a)
    assert (e.examples, e.distinct, e.examples_with_action) == (2, 1, 1)


def test_the_gate_counts_distinct_graphs_as_evidence(tmp_path, monkeypatch):
    """A search that draws the same graph again (here: two seeds of one structure, and one other
    graph) records `examples` and `distinct` per mode, and its evidence counts distinct graphs
    only: with K = 2 it is unexercised, though fastpass copied nodes in all three examples."""
    same = [interpret(X, [("relu", 0, 0), ("tanh", 0, 0)], seed=s) for s in (1, 2)]
    other = interpret(X, [("relu", 0, 0), ("abs", 0, 0)])
    strategy = st.sampled_from([*same, other])
    monkeypatch.setattr(run, "strategy_for", lambda *args, **kwargs: strategy)
    acted = check.Outcome(False, copied=2, invocations=1, ran=1, dispatched=3,
                          input_ops=frozenset({"aten.relu.default", "aten.tanh.default"}))
    monkeypatch.setattr(check, "example", lambda *args, **kwargs: acted)
    cls = toy("AliasNamedPass")
    v = run.gate_pass(cls, f"{PASSES}:AliasNamedPass", 10, "edge-fp", tmp_path, seed=0, how=Route.DIRECT,
                      min_evidence=3)
    mode, evidence = v.to_json()["modes"]["copy"], v.to_json()["evidence"]["copy"]
    assert (mode["examples"], mode["distinct"]) == (3, 2), mode
    assert (evidence["examples"], evidence["distinct"], evidence["examples_with_action"]) == (3, 2, 2), evidence
    assert v.verdict is ProofStatus.UNEXERCISED, (v.verdict, v.reason)
    assert "copy: 2 of 3 examples (2 distinct graphs) copied nodes" in v.reason
    from verify.report.gate import table

    assert "copy 2/3 (2/3)" in table([v], 3)


# ---------------------------------------------------------------------------------------------
# the aim reads what the code reaches


@pytest.mark.parametrize("name, op, vocab", [("AliasNamedPass", "aten.tanh.default", "tanh"),
                                             ("GetattrNamedPass", "aten.sin.default", "sin")])
def test_an_op_named_through_an_alias_or_getattr_is_aimed_at(tmp_path, monkeypatch, name, op, vocab):
    """The rewritten op is a suspect only through `verify.gate.aim` (`A.tanh.default`,
    `getattr(A, "sin")`): found with CI's defaults and shrunk to relu -> it; without the
    resolution no graph is aimed at it and the default search calls the pass sound."""
    cls = toy(name)
    assert op in gp.ops_named_by(cls)
    v = gate_ci(cls, name, tmp_path / "aimed")
    assert v.verdict is ProofStatus.UNSOUND_COPY, (v.verdict, v.reason)
    assert v.modes["copy"]["examples"] <= CI_EXAMPLES and v.reproducers
    assert f"{vocab}(v0)" in v.modes["copy"]["graph"] and len(v.modes["copy"]["graph"].splitlines()) <= 6

    without_reach(monkeypatch)
    try:
        assert op not in gp.ops_named_by(cls)
        v = gate_ci(cls, name, tmp_path / "blind")
        assert v.verdict is not ProofStatus.UNSOUND_COPY, v.modes["copy"]
        assert v.modes["copy"]["examples"] == CI_EXAMPLES
    finally:
        gp.ops_named_by.cache_clear()


def test_aliases_imports_and_literal_getattr_are_evaluated_against_the_module():
    import ast

    from executorch.exir.dialects._ops import ops as exir_ops

    from verify.gate.aim import ops_reached

    source = '''
def f(op):
    for name in ("neg", "abs"):
        if op == getattr(A, name).default:
            return E.edge.aten.exp.default, T.sigmoid.default, getattr(A, "cos").default, NAMES
    key = "sin"
    return getattr(A, key).default, self.whatever.default, unknown.relu.default
'''
    import torch

    globals_ = {"A": exir_ops.edge.aten, "E": exir_ops, "T": torch.ops.aten, "NAMES": ("tanh",)}
    assert ops_reached(ast.parse(source), globals_) == {
        "aten.neg.default", "aten.abs.default", "aten.exp.default", "aten.sigmoid.default", "aten.cos.default",
        "aten.sin.default"}
    assert ops_reached(None, globals_) == set()


# ---------------------------------------------------------------------------------------------
# chains


def test_chain_kinds_are_read_off_the_graph_structure():
    aim = Aim.of(["aten.tanh.default"], {"aten.cos.default"})
    assert aim.kinds(interpret(X, [("tanh", 0, 0), ("abs", 0, 0), ("cos", 0, 0)])) == {DrawKind.TARGETED_TO_SUSPECT_2}
    assert aim.kinds(interpret(X, [("tanh", 0, 0), ("abs", 0, 0), ("neg", 0, 0), ("cos", 0, 0)])) == {
        DrawKind.TARGETED_TO_SUSPECT_3}
    # through a targeted node it is no chain of cold nodes: tanh -> tanh -> cos is a neighbour
    assert aim.kinds(interpret(X, [("tanh", 0, 0), ("tanh", 0, 0), ("cos", 0, 0)])) == {DrawKind.TARGETED_TO_SUSPECT}


@pytest.mark.parametrize("hops, kind", [(2, DrawKind.TARGETED_TO_SUSPECT_2), (3, DrawKind.TARGETED_TO_SUSPECT_3)])
def test_graphs_chained_draws_the_chain_it_is_asked_for(hops, kind):
    aim = Aim.of(["aten.tanh.default"], {"aten.cos.default"})
    cold = [op for op in aim.miss if op not in aim.suspect_ops]
    kinds = []

    @seed(3)
    @settings(max_examples=30, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(graphs_chained(["tanh"], cold, ["cos"], hops, max_ops=4))
    def draw(spec):
        kinds.append(kind in aim.kinds(spec))

    draw()
    assert sum(kinds) >= len(kinds) * 2 // 3, kinds  # a cold op that cannot take the value breaks a few


def holds_chain(graph: str, first: str, then: str) -> bool:
    """Does the described graph (`GraphSpec.describe`) hold first -> cold -> then? (What the
    shrinker ends in within its 10 s depends on the machine's load: tanh(x0) -> abs -> cos on
    idle cores, a node or two more on busy ones.)"""
    import re

    nodes = {value: (op, args.split(", ")) for value, op, args in re.findall(r"(v\d+) = (\w+)\(([^)]*)\)", graph)}
    return any(op == then and any(nodes.get(mid, ("", []))[0] not in ("", first, then)
                                  and any(nodes.get(a, ("",))[0] == first for a in nodes[mid][1]) for mid in args)
               for op, args in nodes.values())


def test_a_rewrite_two_producers_after_a_targeted_node_is_found(tmp_path, monkeypatch):
    """TwoHopPass rewrites a cos fed by a cold node fed by a tanh: found with CI's defaults and
    shrunk to tanh -> cold -> cos. Without the chain kinds the suspect is drawn fed by, feeding
    and beside a tanh, never two producers after it: the default search calls the pass sound."""
    cls = toy("TwoHopPass")
    v = gate_ci(cls, "TwoHopPass", tmp_path / "aimed")
    assert v.verdict is ProofStatus.UNSOUND_COPY, (v.verdict, v.reason)
    graph = v.modes["copy"]["graph"]
    assert holds_chain(graph, "tanh", "cos") and len(graph.splitlines()) <= 8, graph

    monkeypatch.setattr(gg, "AIMED", gg.AIMED - CHAINS)
    v = gate_ci(cls, "TwoHopPass", tmp_path / "blind")
    assert v.verdict is not ProofStatus.UNSOUND_COPY, v.modes["copy"]
    assert not any(v.modes["copy"]["drawn"][kind.value] for kind in CHAINS), v.modes["copy"]["drawn"]


# ---------------------------------------------------------------------------------------------
# properties: the ranks and dtypes of a suspect's operands


def without_ranks(monkeypatch) -> None:
    """The draws as before issue 43's item 4: a chain's operand has the rank its producers give."""
    from generators.random import _strategy

    monkeypatch.setattr(_strategy, "_rank_draw", lambda ranks, room: st.just(0))


def without_typed_ops(monkeypatch) -> None:
    """No vocabulary op presents an op on integer or bool operands of its own (`_ops.TYPED`)."""
    from generators.random import properties

    monkeypatch.setattr(properties, "typed_presenting", lambda aten_ops, float_target, pipeline=True: [])
    gg._aim_of.cache_clear()


# the dtypes edge-fp presents no op on once the typed ops are there (a slice of bools: none)
_UNPRESENTED = {"aten.add.Tensor": [], "aten.slice_copy.Tensor": ["bool"]}


@pytest.mark.parametrize("name, suspect, removed", [("RankConditionedPass", "aten.neg.default", without_ranks),
                                                    ("DtypeConditionedPass", "aten.add.Tensor", without_typed_ops),
                                                    ("IntegerSliceConditionedPass", "aten.slice_copy.Tensor",
                                                     without_typed_ops)])
def test_a_rewrite_conditioned_on_a_rank_or_a_dtype_is_found(tmp_path, monkeypatch, name, suspect, removed):
    """RankConditionedPass rewrites a neg of a rank-5 operand only, DtypeConditionedPass an add of
    two integer ones only, IntegerSliceConditionedPass a slice of an integer one only (a data-layout
    op, as InsertDataLayoutCastsPass on a float-only spec): found with CI's defaults, the drawn cell
    in the verdict's coverage. Without the rank drawn (the operand has the rank its producers give:
    4, mostly) or without the typed ops (no float-stage op presents an add or a slice of integer
    tensors) the default search calls the pass sound; the dtypes no op presents are then listed as
    not presented."""
    cls = toy(name)
    v = gate_ci(cls, name, tmp_path / "aimed")
    copy = v.modes["copy"]
    assert v.verdict is ProofStatus.UNSOUND_COPY, (v.verdict, v.reason)
    assert copy["examples"] <= CI_EXAMPLES and v.reproducers
    cells = copy["coverage"][suspect]
    if name == "RankConditionedPass":
        assert any(cell.startswith("r5 ") for cell in cells), cells
    else:
        assert any(cell.split()[1] in ("int8", "int16", "int32") for cell in cells), cells
        assert copy["not_presented"].get(suspect, []) == _UNPRESENTED[suspect], copy["not_presented"]

    removed(monkeypatch)
    try:
        v = gate_ci(cls, name, tmp_path / "blind")
        copy = v.modes["copy"]
        assert v.verdict is not ProofStatus.UNSOUND_COPY, copy
        assert copy["examples"] == CI_EXAMPLES
        if removed is without_typed_ops:
            assert copy["not_presented"][suspect] == ["int8", "int16", "int32", "bool"], copy["not_presented"]
            assert {cell.split()[1] for cell in copy["coverage"][suspect]} == {"float32"}, copy["coverage"]
    finally:
        gg._aim_of.cache_clear()


def float_universe() -> list[str]:
    from generators.random import ops_in_vocabulary

    return list(ops_in_vocabulary(float_target=True))


@pytest.mark.parametrize("suspect", ["aten.add.Tensor", "aten.neg.default"])
def test_every_rank_and_presentable_dtype_is_drawn_for_a_suspect(suspect):
    """Copy graphs aimed at relu with one suspect (edge-fp's vocabulary): within 200 draws it is
    drawn on every rank 1-5 and on every dtype the stage presents it on (add: float32, int8,
    int16, int32, bool; neg: not bool). Plain draws give rank 4 float32 almost always (the
    input's)."""
    from generators.random.properties import DTYPES, RANKS

    aim = Aim.of(["aten.relu.default"], {suspect}, float_universe())
    covered = Counter()

    @seed(0)
    @settings(max_examples=200, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(gg.strategy_for(["aten.relu.default"], 4, float_universe(), want=FeatureSet.COPY, suspects={suspect}))
    def draw(spec):
        covered.update(aim.coverage(spec))

    draw()
    ranks = {rank for (name, rank, _, _) in covered if name == suspect}
    dtypes = {dtype for (name, _, dtype, _) in covered if name == suspect}
    assert ranks == set(RANKS), ranks
    presentable = [d for d in DTYPES if d not in aim.not_presented().get(suspect, ())]
    assert dtypes == set(presentable), (dtypes, presentable)
    assert aim.not_presented() == ({"aten.neg.default": ["bool"]} if "neg" in suspect else {})


def test_spread_draws_each_index_and_shrinks_to_the_first():
    from hypothesis import find

    from generators.random import spread

    seen = Counter()

    @seed(0)
    @settings(max_examples=60, database=None, deadline=None, phases=[Phase.generate])
    @given(spread(6))
    def draw(i):
        seen[i] += 1

    draw()
    assert set(seen) == set(range(6)) and max(seen.values()) <= 60 // 3, seen
    assert find(spread(6), lambda i: True) == 0


def test_what_a_stage_cannot_present_is_listed_not_covered():
    """The quantized stages draw no typed op (their quantizer would annotate the integer
    operands): an add is presented on float32 alone there, and so listed. A conv2d takes rank-4
    values only. A suspect no vocabulary op presents is listed as unrouted."""
    from generators.random.properties import not_presented

    quantized = Aim.of(["aten.relu.default"], {"aten.add.Tensor", "aten.nonexistent.default"})
    assert quantized.typed == {}
    assert quantized.not_presented() == {"aten.add.Tensor": ["int8", "int16", "int32", "bool"],
                                         "unrouted": ["aten.nonexistent.default"]}
    assert not_presented(["conv2d"], "aten.conv2d.default") == ["float32 rank 1,2,3,5", "int8", "int16", "int32", "bool"]
    edge_fp = Aim.of(["aten.relu.default"], {"aten.add.Tensor"}, float_universe())
    assert edge_fp.typed["aten.add.Tensor"] == ("int8_add", "int16_add", "int32_add", "bool_add")
    assert edge_fp.not_presented() == {}


def test_edge_fp_presents_the_data_layout_ops_on_integer_operands():
    """InsertDataLayoutCastsPass rewrites a data-layout op on an integer operand only (on a
    float-only spec; the gate's self-test, seed 7, dropped slice_copy from its targeted ops and
    the gate called that sound): the typed layout ops present each on int8/int16/int32 on
    edge-fp, so only bool is left unpresented (permute: rank 1 too, which no permute takes). A
    quantized stage draws none. To a pass in the lowering pipeline an integer slice_copy comes from
    a typed split or chunk (the integer slice stays on the CPU: `properties.PIPELINE_PRESENTED`);
    to a pass run directly on the edge graph, from a typed slice alone."""
    layout = {"aten.slice_copy.Tensor": "slice", "aten.cat.default": "cat", "aten.permute_copy.default": "permute",
              "aten.view_copy.default": "view", "aten.constant_pad_nd.default": "constant_pad",
              "aten.repeat.default": "repeat", "aten.flip.default": "flip"}
    for suspect, op in layout.items():
        edge_fp = Aim.of(["aten.relu.default"], {suspect}, float_universe())
        typed = tuple(f"{d}_{o}" for o in (op, "split", "chunk") if o == op or op == "slice"
                      for d in ("int8", "int16", "int32"))
        assert edge_fp.typed[suspect] == typed, edge_fp.typed
        direct = Aim.of(["aten.relu.default"], {suspect}, float_universe(), pipeline=False)
        assert direct.typed[suspect] == tuple(f"{d}_{op}" for d in ("int8", "int16", "int32")), direct.typed
        rank1 = [f"{d} rank 1" for d in ("int8", "int16", "int32")] if op == "permute" else []
        assert edge_fp.not_presented()[suspect] == rank1 + ["bool"], edge_fp.not_presented()
        assert Aim.of(["aten.relu.default"], {suspect}).typed == {}


@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_ranks_true_gives_the_first_node_an_operand_of_the_drawn_rank(rank, monkeypatch):
    from generators.random import _strategy, graphs_linked
    from generators.random.properties import operand

    monkeypatch.setattr(_strategy, "_rank_draw", lambda ranks, room: st.just(rank if ranks and room > 0 else 0))

    @seed(1)
    @settings(max_examples=10, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(graphs_linked(["relu"], ["neg"], Link.FEEDS, max_ops=4, ranks=True))
    def draw(spec):
        relu = next(rec for rec in spec.ops if rec.op == "relu")
        neg = next(rec for rec in spec.ops if rec.op == "neg")
        assert operand(spec, relu, "aten.relu.default")[0] == rank, spec.describe()
        assert operand(spec, neg, "aten.neg.default")[0] == rank, spec.describe()
        assert len(spec) <= 4

    draw()
