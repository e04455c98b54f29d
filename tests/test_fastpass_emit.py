"""fastpass copy path: a copied node's meta is the stock retrace's, key order included.

``fastpass._emit`` creates a copied node without entering the old node's meta context; these
tests compare every node's meta, key by key and in order, with a stock retrace of the same
graph, both where that shortcut applies and where it must step aside.
"""

from __future__ import annotations

from typing import Any, List

import pytest
import torch

import fastpass
from fastpass import _emit
from fastpass.annotations import register, unregister

pytestmark = pytest.mark.usefixtures("fastpass_disabled")


def _exported():
    class M(torch.nn.Module):
        def forward(self, x, y):
            a = torch.add(x, y, alpha=2)
            r = torch.relu(a)
            m = torch.mul(r, torch.sigmoid(a))
            return torch.neg(m).sum(dim=1, keepdim=True).to(torch.float64)

    return torch.export.export(M(), (torch.randn(2, 3), torch.randn(2, 3))).graph_module


def _quantized_exported():
    """A graph of ``quantized_decomposed`` ops: custom ops without a layout tag, for which
    ``PythonKeyTracer.create_node`` writes ``eager_input_vals`` (torch's default constraint)."""
    from torch.ao.quantization.fx._decomposed import quantized_decomposed_lib  # noqa: F401 - registers the ops

    q = torch.ops.quantized_decomposed

    class M(torch.nn.Module):
        def forward(self, x, y):
            a = q.quantize_per_tensor.default(x, 0.05, 3, -128, 127, torch.int8)
            b = q.dequantize_per_tensor.default(a, 0.05, 3, -128, 127, torch.int8)
            c = q.quantize_per_tensor.default(torch.add(b, y), 0.1, -2, -128, 127, torch.int8)
            return torch.relu(q.dequantize_per_tensor.default(c, 0.1, -2, -128, 127, torch.int8))

    return torch.export.export(M(), (torch.randn(2, 3), torch.randn(2, 3))).graph_module


def _without_graph_ids(value: Any) -> Any:
    """``NodeSource.to_dict()`` without ``graph_id`` (the id of a graph each run builds anew)."""
    if isinstance(value, dict):
        return {k: _without_graph_ids(v) for k, v in value.items() if k != "graph_id"}
    if isinstance(value, list):
        return [_without_graph_ids(v) for v in value]
    return value


def _comparable(key: str, value: Any) -> Any:
    if key == "from_node":
        return _without_graph_ids([source.to_dict() for source in value])
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), value.dtype, value.stride())
    return repr(value)


def _metas(gm: torch.fx.GraphModule) -> List[Any]:
    """Every node's name and meta, as ordered (key, value) pairs."""
    return [(n.name, [(k, _comparable(k, v)) for k, v in n.meta.items()]) for n in gm.graph.nodes]


class _Cold:
    """A copy-sound pass that targets an op the graph does not have: every node is cold."""

    def __enter__(self):
        from executorch.exir.pass_base import ExportPass

        class ColdPass(ExportPass):
            pass

        register(ColdPass, {torch.ops.aten.tanh.default}, skip_sound=False, copy_sound=True, why="test")
        self.cls = ColdPass
        return ColdPass

    def __exit__(self, *exc):
        unregister(self.cls)


def _retrace(gm, cls, strip: str | None = None, edit: Any = None):
    """A first retrace (records creation signatures), then ``cls`` on its result; ``strip``: a
    meta key removed from every node between the two; ``edit``: a function applied to every
    call_function node's meta between the two."""
    from executorch.exir.pass_base import ExportPass

    first = ExportPass()(gm).graph_module
    for n in first.graph.nodes:
        if strip is not None:
            n.meta.pop(strip, None)
        if edit is not None and n.op == "call_function":
            edit(n.meta)
    return cls()(first).graph_module


def _counting(monkeypatch, module: Any, name: str) -> List[int]:
    """``module.name`` replaced, for the test, by a wrapper that counts its calls."""
    calls = [0]
    original = getattr(module, name)

    def counted(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def _counting_emit(monkeypatch, name: str = "create_copied_node") -> List[int]:
    return _counting(monkeypatch, _emit, name)


def _stock_and_fast(strip: str | None = None, edit: Any = None, exported: Any = _exported):
    """The cold pass's retrace of the same graph in stock and with fastpass's copy on, and how
    many nodes fastpass copied."""
    gm = exported()
    with _Cold() as cls:
        stock = _retrace(gm, cls, strip, edit)
        with fastpass.enabled(["copy"], trust="all"):
            fast = _retrace(gm, cls, strip, edit)
            copied = fastpass.stats()["nodes_copied"]
    return stock, fast, copied


def test_a_copied_node_has_the_stock_meta_in_the_stock_order(monkeypatch):
    calls = _counting_emit(monkeypatch)
    placeholders = _counting_emit(monkeypatch, "create_placeholder")
    stock, fast, copied = _stock_and_fast()
    assert copied >= 5 and calls[0] == copied
    assert placeholders[0] == len(fast.graph.find_nodes(op="placeholder")) == 2  # the copy-sound retrace's
    assert _metas(fast) == _metas(stock)
    # what the shortcut must reproduce: a context-made key (seq_nr) ahead of the old node's own
    keys = [k for k, _ in dict(_metas(fast))["relu"]]
    assert "from_node" in keys and "seq_nr" in keys


def test_without_from_node_the_copy_is_made_inside_the_meta_context(monkeypatch):
    """Stock gives such a node a fresh ``from_node`` from its meta context: the shortcut steps
    aside, and the copy path still copies."""
    calls = _counting_emit(monkeypatch)
    stock, fast, copied = _stock_and_fast(strip="from_node")
    assert copied >= 5 and calls[0] == 0
    assert _metas(fast) == _metas(stock)
    assert all("from_node" in n.meta for n in fast.graph.nodes if n.op == "call_function")


def test_without_seq_nr_the_copy_takes_autograds_number_as_stock_does(monkeypatch):
    calls = _counting_emit(monkeypatch)
    stock, fast, copied = _stock_and_fast(strip="seq_nr")
    assert copied >= 5 and calls[0] == copied
    assert _metas(fast) == _metas(stock)


def test_a_retraces_own_meta_order_is_taken_as_it_is(monkeypatch):
    """After a retrace every node's keys begin with what ``create_node`` writes: the copy then
    takes the old meta as it is (one update), and that is stock's meta, key order included.
    Fails if the check turns any of those nodes down (the copy would be exact, only slower)."""
    answers = []
    original = _emit._keys_lead_with_what_create_node_writes

    def recorded(*args):
        answers.append(original(*args))
        return answers[-1]

    monkeypatch.setattr(_emit, "_keys_lead_with_what_create_node_writes", recorded)
    stock, fast, copied = _stock_and_fast()
    assert copied >= 5 and answers.count(True) == len(answers) == copied
    assert _metas(fast) == _metas(stock)


def test_an_op_whose_create_node_saves_eager_input_vals_is_copied_by_the_shortcut(monkeypatch):
    """Quantize/dequantize nodes: stock's create_node writes ``eager_input_vals`` after
    ``seq_nr`` and the update writes the old node's value over it; the shortcut gives the same
    meta, key order included.  Fails if the shortcut steps aside for them (slower, not wrong) or
    puts the key elsewhere."""
    calls = _counting_emit(monkeypatch)
    stock, fast, copied = _stock_and_fast(exported=_quantized_exported)
    saving = [n for n in fast.graph.nodes if n.op == "call_function" and _emit._saves_eager_input_vals(n.target)]
    assert len(saving) == 4 and all("eager_input_vals" in n.meta for n in saving)
    assert copied == 6 and calls[0] == copied
    assert _metas(fast) == _metas(stock)


def _eager_input_vals_first(meta):
    if "eager_input_vals" in meta:
        items = sorted(meta.items(), key=lambda kv: kv[0] != "eager_input_vals")
        meta.clear()  # a dict keeps a key where it first was: rebuild it in the new order
        meta.update(items)


def _eager_input_vals_last(meta):
    if "eager_input_vals" in meta:
        meta["eager_input_vals"] = meta.pop("eager_input_vals")


def _eager_input_vals_missing(meta):
    meta.pop("eager_input_vals", None)


@pytest.mark.parametrize("edit", [_eager_input_vals_first, _eager_input_vals_last, _eager_input_vals_missing])
def test_eager_input_vals_where_the_old_node_does_not_lead_with_it(edit, monkeypatch):
    """Old quantize/dequantize metas whose ``eager_input_vals`` is not where create_node writes
    it: moved to the front or the end, the copy has stock's order (not the old one); missing,
    stock keeps create_node's own value, so the shortcut steps aside for those four nodes."""
    calls = _counting_emit(monkeypatch)
    stock, fast, copied = _stock_and_fast(edit=edit, exported=_quantized_exported)
    assert copied == 6 and calls[0] == (2 if edit is _eager_input_vals_missing else 6)
    assert _metas(fast) == _metas(stock)
    saving = [list(n.meta) for n in fast.graph.nodes if "eager_input_vals" in n.meta]
    assert len(saving) == 4  # where missing: create_node's own, kept
    assert all(keys[keys.index("seq_nr") + 1] == "eager_input_vals" for keys in saving)


def test_the_eager_input_vals_answer_follows_torchs_config_from_one_lowering_to_the_next():
    """For a custom op without a layout tag, whether create_node saves ``eager_input_vals``
    follows ``custom_op_default_layout_constraint``: the cached answer is dropped when fastpass
    is enabled, so a lowering after the caller changes it sees the new answer."""
    from torch._functorch import config as functorch_config

    quantize = torch.ops.quantized_decomposed.quantize_per_tensor.default
    _quantized_exported()  # registers the op
    with fastpass.enabled(["copy"], trust="all"):
        assert _emit._saves_eager_input_vals(quantize) is True
    with functorch_config.patch(custom_op_default_layout_constraint="flexible_layout"):
        with fastpass.enabled(["copy"], trust="all"):
            assert _emit._saves_eager_input_vals(quantize) is False


def _seq_nr_last(meta):
    meta["seq_nr"] = meta.pop("seq_nr")


def _stack_trace_empty(meta):
    meta["stack_trace"] = None  # (the key stays first)


@pytest.mark.parametrize("edit", [_seq_nr_last, _stack_trace_empty])
def test_an_old_meta_in_another_order_is_copied_in_the_order_stock_leaves(edit, monkeypatch):
    """Where the old node's keys do not begin with what ``create_node`` writes (``seq_nr`` after
    the node's own keys; a ``stack_trace`` key whose empty value create_node does not write), the
    copy is not the old meta's order but the one create_node's writes and the update leave."""
    calls = _counting_emit(monkeypatch)
    stock, fast, copied = _stock_and_fast(edit=edit)
    assert copied >= 5 and calls[0] == copied
    assert _metas(fast) == _metas(stock)
    old = _old_key_orders(edit)
    assert any([k for k, _ in meta] != keys for (_, meta), keys in zip(_metas(fast), old))  # reordered


def _old_key_orders(edit):
    """Each node's meta keys after the first retrace and ``edit``: the old metas of the test above."""
    from executorch.exir.pass_base import ExportPass

    first = ExportPass()(_exported()).graph_module
    for n in first.graph.nodes:
        if n.op == "call_function":
            edit(n.meta)
    return [list(n.meta) for n in first.graph.nodes]


@pytest.mark.parametrize("condition", ["record_stack_traces", "replay_node", "autograd_backward"])
def test_the_shortcut_steps_aside_where_create_node_would_differ(condition, monkeypatch):
    from executorch.exir.pass_base import ExportPass

    gm = ExportPass()(_exported()).graph_module
    node = next(n for n in gm.graph.nodes if n.op == "call_function")
    meta = dict(node.meta)
    tracer = ExportPass().tracer
    assert _emit.applies(tracer, meta, node.target) is False  # meta is not being preserved
    with torch.fx.traceback.preserve_node_meta():
        assert _emit.applies(tracer, meta, node.target) is True
        if condition == "record_stack_traces":
            tracer.record_stack_traces = True
            assert _emit.applies(tracer, meta, node.target) is False
        elif condition == "replay_node":
            with torch.fx.traceback.set_current_replay_node(node):
                assert _emit.applies(tracer, meta, node.target) is False
        else:
            meta["autograd_backward"] = True
            assert _emit.applies(tracer, meta, node.target) is False


def test_a_copied_node_is_recorded_with_the_signature_its_own_args_give():
    """The copy path builds a copied node's signature in the walk that builds its arguments;
    it must be what ``_sig.record`` would take from the node (else the next retrace dispatches
    it, or worse, copies it against the wrong arguments)."""
    from fastpass import _sig

    gm = _exported()
    with _Cold() as cls:
        with fastpass.enabled(["copy"], trust="all"):
            fast = _retrace(gm, cls)
            assert fastpass.stats()["nodes_copied"] >= 5
            checked = 0
            for n in fast.graph.nodes:
                sig = _sig._SIGS.get(n)
                if n.op != "call_function" or sig is None or not isinstance(n.meta["val"], torch.Tensor):
                    continue  # (the graph's _assert_tensor_metadata has no val: dispatched)
                assert sig[1:4] == (n.target, _sig._weak(n.args), _sig._weak(n.kwargs)), n.name
                assert sig[0] is n.meta["val"]
                checked += 1
            assert checked >= 5
            again = cls()(fast).graph_module  # and the next retrace copies them all again
            assert [r["copied"] for r in fastpass.stats()["per_pass"]][-1] == checked
        stock_again = cls()(_retrace(gm, cls)).graph_module
    assert _metas(again) == _metas(stock_again)


def test_a_pass_with_its_own_placeholder_keeps_it(monkeypatch):
    """A pass that overrides ``placeholder`` sees every placeholder, as in stock."""
    from executorch.exir.pass_base import ExportPass

    placeholders = _counting_emit(monkeypatch, "create_placeholder")

    class RenamesInputs(ExportPass):
        def placeholder(self, name, arg, meta):
            self.seen = getattr(self, "seen", []) + [name]
            return super().placeholder(f"{name}_in", arg, meta)

    register(RenamesInputs, {torch.ops.aten.tanh.default}, skip_sound=False, copy_sound=True, why="test")
    try:
        gm = _exported()
        stock = _retrace(gm, RenamesInputs)
        with fastpass.enabled(["copy"], trust="all"):
            fast = _retrace(gm, RenamesInputs)
            assert fastpass.stats()["nodes_copied"] >= 5
    finally:
        unregister(RenamesInputs)
    assert placeholders[0] == 0
    assert [n.name for n in fast.graph.find_nodes(op="placeholder")] == ["x_in", "y_in"]
    assert _metas(fast) == _metas(stock)


def test_a_placeholder_holds_the_value_the_retrace_was_given():
    """During the retrace a placeholder's ``val`` is the retrace's input, not the old node's: a
    pass that feeds the retrace other (metadata-equal) inputs finds them there.  (At the end
    ``ExportPass.call_submodule`` puts the old placeholders' vals back, in either mode.)"""
    from executorch.exir.pass_base import ExportPass, ProxyValue

    seen = []

    class FreshInputs(ExportPass):
        def inputs(self, graph_module):
            return [torch.empty_like(v) for v in super().inputs(graph_module)]  # same fake mode

        def call_operator(self, op, args, kwargs, meta):
            if op == torch.ops.aten.add.Tensor:
                seen.extend(a.proxy.node.meta["val"] is a.data for a in args if isinstance(a, ProxyValue))
            return super().call_operator(op, args, kwargs, meta)

    register(FreshInputs, {torch.ops.aten.add.Tensor}, skip_sound=False, copy_sound=True, why="test")
    try:
        gm = _exported()
        FreshInputs()(ExportPass()(gm).graph_module)
        assert seen == [True, True]  # stock
        seen.clear()
        with fastpass.enabled(["copy"], trust="all"):
            FreshInputs()(ExportPass()(gm).graph_module)
            assert fastpass.stats()["nodes_copied"] >= 5
    finally:
        unregister(FreshInputs)
    assert seen == [True, True]


_NAME_CANDIDATES = ["add", "add", "add_1", "add_1", "add_7", "add", "sum", "sum", "abs_2", "for", "None",
                    "1x", "a.b-c", "", "__", "relu_", "relu__3", "x_0", "x_0", "x", "x", "print", "max_1"]


@pytest.mark.parametrize("order", ["given", "reversed", "shuffled"])
def test_names_are_the_stock_namespaces(order):
    """``_copy._create_name`` (a cached parse of the candidate) gives the names and leaves the
    state ``_Namespace.create_name(candidate, None)`` does: numeric suffixes, clashes, builtins
    and keywords, illegal characters, empty candidates."""
    import random

    from torch.fx.graph import _Namespace

    from fastpass import _copy

    candidates = list(_NAME_CANDIDATES)
    if order == "reversed":
        candidates.reverse()
    elif order == "shuffled":
        random.Random(7).shuffle(candidates)
    stock, fast = _Namespace(), _Namespace()
    for candidate in candidates * 2:
        assert _copy._create_name(fast, candidate) == stock.create_name(candidate, None), candidate
        assert (fast._used_names, fast._base_count) == (stock._used_names, stock._base_count)
    assert "sum_1" in stock._used_names and "_1x" in stock._used_names  # the cases were reached


def test_a_plain_node_is_copied_straight_from_the_interpreters_environment(monkeypatch):
    """The common route (``_copy_from_env``) copies every cold node of a plain graph: the general
    route, which fetches the arguments first, is never asked."""
    from fastpass import _copy

    general = _counting(monkeypatch, _copy, "_try_copy")
    stock, fast, copied = _stock_and_fast()
    assert copied >= 5 and general[0] == 0
    assert _metas(fast) == _metas(stock)


def test_the_general_route_copies_what_the_common_route_leaves_to_it(monkeypatch):
    """Where the walk from the environment gives up, ``_try_copy`` decides, and its copies are the
    stock retrace's too."""
    from fastpass import _copy

    monkeypatch.setattr(_copy, "_walk_env", lambda *args: _copy._FALLBACK)
    general = _counting(monkeypatch, _copy, "_try_copy")
    stock, fast, copied = _stock_and_fast()
    assert copied >= 5 and general[0] >= copied
    assert _metas(fast) == _metas(stock)


def _argument_shapes(a: torch.fx.Node, b: torch.fx.Node) -> List[Any]:
    """Argument structures that differ from one another in one way each: scalar type, scalar
    value, list length, container kind, dict key, a Node for a literal, a leaf's value."""
    from torch.fx.immutable_collections import immutable_dict, immutable_list

    return [
        (a, 1), (a, 2), (a, 1.0), (a, True), (b, 1), (a, a),
        (a, immutable_list([1, 2])), (a, immutable_list([1, 2, 3])), (a, immutable_list([2, 1])),
        (a, immutable_list([1.0, 2])), (a, (1, 2)), (a, immutable_list([a, 2])), (a, None),
        (a, torch.float16), (a, torch.float32), (a, "mean"), (a, "sum"),
        immutable_dict(dtype=torch.float16), immutable_dict(memory_format=torch.float16),
        immutable_dict(dtype=torch.float32), immutable_dict(dtype=torch.float16, alpha=2),
        immutable_dict(alpha=2, dtype=torch.float16), immutable_dict(dim=immutable_list([1])),
        immutable_dict(dim=immutable_list([0])), immutable_dict(dim=a), immutable_dict(),
    ]


def test_the_walk_from_the_environment_checks_the_signature_as_sig_does():
    """``_copy._walk_env`` accepts an argument against a recorded weak form exactly where
    ``_sig.matches_weak(any_node=True)`` does, and then gives the new node's argument (each Node
    mapped to its value's proxy node), its weak form and the input values in order."""
    from executorch.exir.pass_base import ProxyValue

    from fastpass import _copy, _sig

    graph = torch.fx.Graph()
    a, b = graph.placeholder("a"), graph.placeholder("b")
    env = {n: ProxyValue(torch.empty(1), torch.fx.Proxy(n)) for n in (a, b)}
    shapes = _argument_shapes(a, b)
    accepted = 0
    for old in shapes:
        weak = _sig._weak(old)
        for new in shapes:
            expected = _sig.matches_weak(new, weak, True)
            inputs: list = []
            walked = _copy._walk_env(new, weak, env, ProxyValue, inputs)
            assert (walked is not _copy._FALLBACK) == expected, (old, new)
            if expected:
                accepted += 1
                arg, new_weak = walked
                assert arg == torch.fx.node.map_arg(new, lambda n: env[n].proxy.node), (old, new)
                assert type(arg) is (type(new) if isinstance(new, tuple) else list if isinstance(new, list) else dict)
                assert new_weak == _sig._weak(arg) and _sig.matches_weak(arg, new_weak)
                assert inputs == [env[n].data for n in _sig.leaves_of_type(new, torch.fx.Node, [])]
    assert accepted > len(shapes)  # each with itself, and a Node for another Node
