"""What a node record holds (verify/lowering/snapshot.py), on small fx graphs and hand-made
values: vals, args, targets, provenance and the meta policy, each read whole. Nothing lowered:
the mutation campaign (tests/mutation/) judges the module by these tests and the synthetic
snapshot tests of tests/test_harness_faults.py."""

from __future__ import annotations

import operator

import torch
from torch.fx import Graph, GraphModule
from torch.fx.traceback import NodeSource, NodeSourceAction

from verify.lowering import snapshot as snap
from verify.lowering.snapshot import GraphIds, NodeRecord, RecordDigests, describe_val, take_snapshot


def test_canonical_hides_addresses_only():
    class Thing:
        def __repr__(self):
            return "<Thing at 0x7f00AB12 and at 0xdeadBEEF>"

    assert snap._canonical(Thing()) == "<Thing at 0x? and at 0x?>"
    assert snap._canonical("plain at 0xZZ") == "'plain at 0xZZ'"
    assert snap._canonical([1, "a"]) == "[1, 'a']"


def _unseen() -> int:
    """An int no earlier lookup used, in this process (the mutation campaign runs every test in a
    process forked from one that ran them all: the caches are not empty)."""
    import random

    while True:
        n = random.randrange(10**6, 10**9)
        if not any(n in key for key in snap._INTS_TEXTS):
            return n


def test_ints_text_caches_plain_ints_only():
    a, b, c, d = _unseen(), _unseen(), _unseen(), _unseen()
    fresh, flag = (a, 4321), (True, d)
    assert snap._ints_text(fresh) == (str(a), "4321") and snap._INTS_TEXTS[fresh] == (str(a), "4321")
    assert snap._ints_text(fresh) == (str(a), "4321")  # now from the cache
    assert snap._ints_text(torch.Size([b, 5])) == (str(b), "5") and snap._INTS_TEXTS[(b, 5)] == (str(b), "5")
    assert snap._ints_text([c, 7]) == (str(c), "7") and (c, 7) not in snap._INTS_TEXTS  # a list is no key
    # True == 1 as a key: a bool is never stored, or (1, d) would read back "True"
    assert snap._ints_text(flag) == ("True", str(d)) and flag not in snap._INTS_TEXTS
    assert snap._ints_text((1, d)) == ("1", str(d))


def test_text_caches_what_str_gives():
    fresh = ("a key no one used", object())
    assert fresh not in snap._TEXTS
    assert snap._text(fresh) == str(fresh) and snap._TEXTS[fresh] == str(fresh)
    assert snap._text(fresh) == str(fresh)
    assert snap._text(torch.int8) == "torch.int8" and snap._TEXTS[torch.int8] == "torch.int8"


def test_describe_val_of_every_kind():
    t = torch.zeros(2, 3, dtype=torch.int8)[:, 1:]
    assert describe_val(t) == ("T", ("2", "2"), "torch.int8", ("3", "1"), "1", "cpu", False, "torch.strided")
    grad = torch.zeros(1, requires_grad=True)
    assert describe_val(grad)[6] is True
    sparse = torch.zeros(2, 2).to_sparse()
    assert describe_val(sparse) == ("T", ("2", "2"), "torch.float32", None, None, "cpu", False, "torch.sparse_coo")
    assert describe_val([t, None]) == ("list", (describe_val(t), ("py", "NoneType", "None")))
    assert describe_val((1,)) == ("tuple", (("py", "int", "1"),))
    assert describe_val({"a": 1.5, 2: "x"}) == ("dict", (("a", ("py", "float", "1.5")), ("2", ("py", "str", "'x'"))))
    assert describe_val(True) == ("py", "bool", "True")
    assert describe_val(torch.float32) == ("other", "dtype", "torch.float32")
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    shape_env = ShapeEnv()
    sym = shape_env.create_unbacked_symint()
    assert describe_val(sym) == ("sym", "SymInt", str(sym))


def test_graph_ids_number_by_first_appearance_and_tag():
    ids = GraphIds()
    assert [ids(10), ids(20), ids(10), ids(10, "t"), ids(-1), ids(20)] == [0, 1, 0, 2, -1, 1]


def _source(name="n", pass_name="p", graph=None, action=None, parents=()):
    graph = graph or Graph()
    node = graph.placeholder(name)
    source = NodeSource(node, pass_name=pass_name, action=action)
    source.from_node = list(parents)
    return source


def test_describe_from_node():
    ids = GraphIds()
    parent = _source("parent", "earlier")
    child = _source("child", "later", action=[NodeSourceAction.CREATE, NodeSourceAction.REPLACE], parents=[parent])
    assert snap.describe_from_node([child], ids, full=False) == (("child", "child", 0, "later", "create+replace", 1),)
    full = snap.describe_from_node([child], GraphIds(), full=True)
    assert full == (("child", "child", 0, "later", "create+replace", (("parent", "parent", 1, "earlier", "", ()),)),)
    assert snap.describe_from_node("not a list", ids, full=False) == ("other", "'not a list'")

    class Bare:  # a source without node_info: read off its own attributes
        name, target, pass_name, action, from_node = "b", "t", "q", (), []

    assert snap._describe_source(Bare(), GraphIds(), full=False) == ("b", "t", -1, "q", "", 0)

    class Empty:
        from_node = []

    assert snap._describe_source(Empty(), GraphIds(), full=True) == ("", "", -1, "", "", ())


def test_describe_arg():
    graph = Graph()
    x = graph.placeholder("x")
    assert snap._describe_arg(x) == "%x"
    assert snap._describe_arg((x, 1, 2.5, True, None, torch.int8)) == "(%x, 1, 2.5, True, None, torch.int8)"
    assert snap._describe_arg((x,)) == "(%x,)" and snap._describe_arg([x]) == "[%x]" and snap._describe_arg(()) == "()"
    assert snap._describe_arg({"alpha": 2, "out": [x]}) == "{'alpha': 2, 'out': [%x]}"
    t = torch.tensor([1, 2], dtype=torch.int8)
    import hashlib

    digest = hashlib.blake2b(t.numpy().tobytes(), digest_size=8).hexdigest()
    assert snap._describe_arg(t) == f"tensor{describe_val(t)}#{digest}"
    assert snap._describe_arg(torch.tensor([1, 3], dtype=torch.int8)) != snap._describe_arg(t)
    meta = torch.empty(2, device="meta")
    assert snap._describe_arg(meta) == f"tensor{describe_val(meta)}"
    param = torch.nn.Parameter(torch.zeros(1))
    assert snap._describe_arg(param) == f"tensor{describe_val(param)}"  # not a plain Tensor: no bytes
    assert snap._describe_arg(torch.float32) == "torch.float32"
    assert snap._describe_arg(0.1 + 0.2) == "0.30000000000000004"
    assert snap._describe_arg("s") == "'s'" and snap._describe_arg(slice(1, 2)) == "slice(1, 2, None)"

    class F(float):
        pass

    assert snap._describe_arg(F(0.5)) == "0.5"


def test_describe_target():
    graph = Graph()
    x = graph.placeholder("x")
    add = graph.call_function(torch.ops.aten.add.Tensor, (x, x))
    builtin = graph.call_function(operator.getitem, (x, 0))
    method = graph.call_method("relu", (x,))

    def local(a):
        return a

    mine = graph.call_function(local, (x,))
    assert snap._describe_target(method) == "relu" and snap._describe_target(x) == "x"
    op = torch.ops.aten.add.Tensor
    assert snap._describe_target(add) == f"torch._ops.aten.{op.__qualname__}:{op}" == "torch._ops.aten.aten::add.Tensor:aten.add.Tensor"
    assert snap._TARGETS[torch.ops.aten.add.Tensor] == snap._describe_target(add)
    assert snap._describe_target(builtin) == f"_operator.getitem:{operator.getitem}"
    assert snap._TARGETS[operator.getitem] == snap._describe_target(builtin)
    text = snap._describe_target(mine)
    assert text == f"{__name__}.{local.__qualname__}:{local}" and local not in snap._TARGETS


class _Inner(torch.nn.Module):
    def forward(self, x):
        return x * 2


class _Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = _Inner()

    def forward(self, x):
        return self.inner(x) + 1


def test_take_snapshot_records_every_node_and_nested_graphs():
    gm = torch.fx.symbolic_trace(_Outer())
    gm.inner = torch.fx.symbolic_trace(_Inner())
    for node in gm.graph.nodes:
        node.meta.update({"val": torch.zeros(1), "stack_trace": "st", "seq_nr": 7, "nn_module_stack": {"a": 1},
                          "from_node": "not a list", "eager_input_vals": (torch.zeros(2),)})
    shot = take_snapshot(gm, GraphIds())
    names = [n.name for n in shot.nodes]
    assert names[:len(gm.graph.nodes)] == [n.name for n in gm.graph.nodes]
    assert names[len(gm.graph.nodes):] == [f"inner/{n.name}" for n in gm.inner.graph.nodes]
    first = shot.nodes[0]
    assert first == NodeRecord("x", "placeholder", "x", "()", "{}", describe_val(torch.zeros(1)), (
        ("eager_input_vals", describe_val((torch.zeros(2),))), ("from_node", ("other", "'not a list'")),
        ("nn_module_stack", "{'a': 1}"), ("stack_trace", "'st'")))  # seq_nr ignored, val apart, keys sorted
    inner_node = shot.nodes[len(gm.graph.nodes)]
    assert inner_node.val == ("absent",) and inner_node.meta == ()
    digests = RecordDigests()
    import hashlib

    parts = [digests(r)[1] for r in shot.nodes]
    assert shot.digest == hashlib.blake2b(b"".join(parts), digest_size=16).hexdigest()
    assert digests(shot.nodes[0])[1] == hashlib.blake2b(tuple.__repr__(shot.nodes[0]).encode(), digest_size=16).digest()
    assert len(shot) == len(shot.nodes)
    assert list(snap._graph_modules(gm)) == [("", gm), ("inner", gm.inner)]


def test_from_node_is_described_per_pass_or_in_full():
    gm = torch.fx.symbolic_trace(_Inner())
    parent = _source("p", "earlier")
    for node in gm.graph.nodes:
        node.meta["from_node"] = [_source("c", "later", parents=[parent])]
    brief = dict(take_snapshot(gm, GraphIds()).nodes[0].meta)["from_node"]
    full = dict(take_snapshot(gm, GraphIds(), full_provenance=True).nodes[0].meta)["from_node"]
    assert brief[0][5] == 1 and full[0][5][0][:2] == ("p", "p")


def test_without_names_replaces_node_names_by_position():
    record = NodeRecord("add", "call_function", "t", "(%x, %other_1, 3)", "{'k': %x}", None, ())
    assert record.without_names({"x": 0, "add": 1}) == ("call_function", "t", "(%0, %other_1, 3)", "{'k': %0}")


def test_the_meta_policy_is_documented():
    assert set(snap.IGNORED_META_KEYS) == {"seq_nr"}
    assert {"val", "tensor_meta", "from_node", "stack_trace", "nn_module_stack", "source_fn_stack",
            "eager_input_vals"} == set(snap.SPECIAL_META_KEYS)


def test_an_action_the_table_does_not_know_is_named_by_its_lowered_name():
    class Action:
        name = "Custom"

    source = _source("n", "p")
    source.action = [Action(), NodeSourceAction.CREATE]
    assert snap._describe_source(source, GraphIds(), full=False)[4] == "custom+create"


def test_a_node_of_a_node_subclass_is_named():
    class MyNode(torch.fx.Node):
        pass

    assert snap._describe_arg(MyNode(Graph(), "Mine", "placeholder", "Mine", (), {})) == "%Mine"


def test_describe_target_of_callables_without_a_module_or_a_qualname():
    import functools
    import types

    def target(value):
        return snap._describe_target(types.SimpleNamespace(target=value))

    assert target(1) == ".1:1"  # no __module__, no __qualname__, no __name__
    partial = functools.partial(print)
    assert target(partial) == f"functools.{partial}:{partial}"
    named = types.SimpleNamespace(__name__="nm")
    assert target(named) == f".nm:{named}"  # a SimpleNamespace instance has no __module__ of its own
    moduleless = eval("lambda: 0", {})  # a function made where no __name__ is defined: __module__ None
    assert moduleless.__module__ is None
    assert target(moduleless) == f".<lambda>:{moduleless}"


def _unseen_target(candidates):
    return next(c for c in candidates if c not in snap._TARGETS)


def test_operators_and_builtins_are_described_once():
    import math

    builtin = _unseen_target(v for v in vars(math).values() if type(v).__name__ == "builtin_function_or_method")
    op = _unseen_target(getattr(torch.ops.aten, name).default for name in ("hypot", "logaddexp", "copysign", "nextafter",
                                                                           "fmod", "remainder", "lerp", "xlogy"))
    for target in (builtin, op):
        text = snap._describe_target(torch.fx.Graph().call_function(target, ()))
        assert snap._TARGETS[target] == text and text.endswith(f":{target}")
        assert snap._describe_target(torch.fx.Graph().call_function(target, ())) == text  # from the cache


def test_without_names_reads_names_of_any_case():
    record = NodeRecord("n", "call_function", "t", "(%X, %aB_1)", "{}", None, ())
    assert record.without_names({"X": 0, "aB_1": 1}) == ("call_function", "t", "(%0, %1)", "{}")
