"""The comparison's parts (verify/compare: payloads, program, graphs, meta, vals, aligned,
digests), each on synthetic values: what it calls a difference and the words it says it in. No
model lowered: the mutation campaign (tests/mutation/) judges these modules by these tests."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from verify.compare import program
from verify.compare.aligned import pass_sequence, snapshot_pairs
from verify.compare.digests import LoweringDigests, digest
from verify.compare.graphs import identical_up_to_names, structure_differences
from verify.compare.meta import meta_differences
from verify.compare.payloads import bytes_difference, outputs_difference
from verify.compare.vals import val_differences
from verify.lowering.constants import ConstantRole, ConstantSource, ConstantTensor, tensor_bytes
from verify.lowering.lower import LoweringResult, Payload
from verify.lowering.mode import Mode
from verify.lowering.snapshot import GraphSnapshot, NodeRecord
from verify.lowering.steps import Observation, PassStep


def node(name="add", op="call_function", target="aten.add.Tensor", args="(%x, %y)", kwargs="{}",
         val=("T",), meta=()) -> NodeRecord:
    return NodeRecord(name, op, target, args, kwargs, val, meta)


def snapshot(*nodes) -> GraphSnapshot:
    return GraphSnapshot(tuple(nodes), repr(nodes))


# ---------------------------------------------------------------------------------- payloads


def test_bytes_difference():
    assert bytes_difference(b"abc", b"abc") is None and bytes_difference(None, None) is None
    assert bytes_difference(b"abc", None) == "present True vs False"
    assert bytes_difference(None, b"") == "present False vs True"
    assert bytes_difference(b"abc", b"abd") == "3 vs 3 bytes, first difference at offset 2"
    assert bytes_difference(b"abc", b"ab") == "3 vs 2 bytes, first difference at offset 2"
    assert bytes_difference(b"a", b"abc") == "1 vs 3 bytes, first difference at offset 1"
    assert bytes_difference(b"xbc", b"abc") == "3 vs 3 bytes, first difference at offset 0"


def test_outputs_difference():
    i8 = np.array([[1, 2], [3, 4]], np.int8)
    assert outputs_difference(None, None) is None
    assert outputs_difference([i8], None) == "ran in one mode only"
    assert outputs_difference(None, [i8]) == "ran in one mode only"
    assert outputs_difference([i8], [i8.copy()]) is None
    assert outputs_difference([i8], [i8, i8]) == "1 vs 2 outputs"
    changed = i8.copy()
    changed[1, 0] = 9
    changed[1, 1] = 9
    assert outputs_difference([i8, i8], [i8, changed]) == "output 1: 2 elements differ, first at (1, 0)"
    assert outputs_difference([i8], [i8.astype(np.int16)]) == "output 0: int8[2, 2] vs int16[2, 2]"
    assert outputs_difference([i8], [i8.reshape(4)]) == "output 0: int8[2, 2] vs int8[4]"
    nan = np.array([np.nan], np.float32)
    assert outputs_difference([nan], [nan.copy()]) is None  # bit for bit: the same NaN is the same
    other_nan = np.frombuffer(np.uint32(0x7FC00001).tobytes(), np.float32)
    assert outputs_difference([nan], [other_nan]) == "output 0: 1 elements differ, first at (0,)"
    zero, minus_zero = np.array([0.0], np.float32), np.array([-0.0], np.float32)
    assert outputs_difference([zero], [minus_zero]) == "output 0: 0 elements differ, first at ?"


# ----------------------------------------------------------------------------------- program


def _pte() -> bytes:
    """A small real .pte (executorch's own serializer)."""
    from executorch.exir import to_edge

    class Add(torch.nn.Module):
        def forward(self, x):
            return x + 1

    manager = to_edge(torch.export.export(Add(), (torch.zeros(2),))).to_executorch()
    return manager.buffer


def test_serialized_program_differences():
    pte = _pte()
    assert program.serialized_program_differences(pte, pte) == []
    cut = pte[:-1] + bytes([pte[-1] ^ 1])
    found = program.serialized_program_differences(pte, cut)
    assert found[0] == f".pte: {len(pte)} vs {len(pte)} bytes, first difference at offset {len(pte) - 1}"
    assert found[1].startswith("first differing field") or found[1].startswith("deserialized, the programs are equal")
    broken = program.serialized_program_differences(b"junk", pte)
    assert broken[0] == f".pte: 4 vs {len(pte)} bytes, first difference at offset 0"
    assert broken[1].startswith("the first program does not deserialize: ")
    broken = program.serialized_program_differences(pte, b"junk")
    assert broken[1].startswith("the second program does not deserialize: ")


@dataclasses.dataclass
class Leaf:
    value: object


@dataclasses.dataclass
class Tree:
    val: object
    items: list
    table: dict


def test_first_field_difference():
    first = program._first_field_difference
    tree = Tree(Leaf(1), [1, 2], {"a": 1})
    assert first(tree, Tree(Leaf(1), [1, 2], {"a": 1}), "pte") is None
    assert first(tree, Tree(Leaf(2), [1, 2], {"a": 1}), "pte") == "pte.val<Leaf>.value: 1 vs 2"
    assert first(tree, Tree(Leaf(1), [1, 3], {"a": 1}), "pte") == "pte.items[1]: 2 vs 3"
    assert first(tree, Tree(Leaf(1), [1, 2, 3], {"a": 1}), "pte") == "pte.items: 2 vs 3 entries"
    assert first(tree, Tree(Leaf(1), [1, 2], {"b": 1}), "pte") == "pte.table: keys ['a'] vs ['b']"
    assert first(tree, Tree(Leaf(1), [1, 2], {"a": 5}), "pte") == "pte.table['a']: 1 vs 5"
    assert first(tree, Tree("x", [1, 2], {"a": 1}), "pte") == "pte.val: Leaf vs str"
    assert first(Leaf(b"ab"), Leaf(b"ax"), "p") == "p.value: 2 vs 2 bytes, first difference at offset 1"
    assert first(Leaf(b"ab"), Leaf(bytearray(b"ab")), "p") == "p.value: bytes vs bytearray"
    assert first(Leaf(bytearray(b"ab")), Leaf(bytearray(b"ab")), "p") is None
    assert first(Leaf((1, 2)), Leaf((1, 2)), "p") is None
    assert first(Leaf(math.nan), Leaf(math.nan), "p") is None
    assert first(Leaf(math.nan), Leaf(1.0), "p") == "p.value: nan vs 1.0"
    assert first(Leaf(1.0), Leaf(math.nan), "p") == "p.value: 1.0 vs nan"
    assert first(Leaf("x" * 100), Leaf("y"), "p") == f"p.value: {repr('x' * 100)[:77]}... vs 'y'"
    assert first(Leaf("x" * 78), Leaf("y"), "p") == f"p.value: {'x' * 78!r} vs 'y'"
    assert first(Tree(1, [], {}), Tree(1, [], {}), "p") is None


def constant(name, data=b"\x01\x02", **fields) -> ConstantTensor:
    values = dict(source=ConstantSource.STATE_DICT, role=ConstantRole.PARAMETER, input_name=f"p_{name}",
                  type_name="Parameter", dtype="torch.int8", shape=(2,), stride=(1,), storage_offset=0,
                  requires_grad=False, data=data)
    values.update(fields)
    return ConstantTensor(name, **values)


def test_constants_differences():
    differences = program.constants_differences
    a, b = constant("a"), constant("b")
    assert differences([a, b], [constant("a"), constant("b")]) == []
    assert differences([a, b], [b]) == ["a: only in the first program"]
    assert differences([b], [a, b]) == ["a: only in the second program"]
    assert differences([a, b], [b, a]) == ["same constants in another order: ['a', 'b'] vs ['b', 'a']"]
    assert differences([a], [constant("a", role=ConstantRole.BUFFER, requires_grad=True)]) == [
        "a: role 'parameter' vs 'buffer'", "a: requires_grad False vs True"]
    assert differences([a], [constant("a", b"\x01\x07")]) == [
        "a: values differ, 2 vs 2 bytes, first difference at offset 1; 1 of 2 elements, first at (1,): 2 vs 7"]
    # a difference in one keeps the order remark out (it would only repeat the finding)
    assert differences([a, b], [b, constant("a", b"\x01\x07")]) == [
        "a: values differ, 2 vs 2 bytes, first difference at offset 1; 1 of 2 elements, first at (1,): 2 vs 7"]


def test_element_hint():
    hint = program._element_hint
    x = torch.tensor([[1.5, 2.0], [3.0, 4.0]])
    y = x.clone()
    y[1, 1] = 5.0
    y[1, 0] = 7.0

    def as_constant(t, **fields):
        return constant("c", tensor_bytes(t), dtype=str(t.dtype), shape=tuple(t.shape), **fields)

    assert hint(as_constant(x), as_constant(y)) == "; 2 of 4 elements, first at (1, 0): 3.0 vs 7.0"
    assert hint(as_constant(x), as_constant(x)) == ""
    assert hint(as_constant(torch.tensor(1.0)), as_constant(torch.tensor(2.0))) == "; 1 of 1 elements, first at (): 1.0 vs 2.0"
    assert hint(as_constant(x), as_constant(y.to(torch.float64))) == ""
    assert hint(as_constant(x), as_constant(y.reshape(4))) == ""
    assert hint(as_constant(x), constant("c", None, dtype="torch.float32", shape=(2, 2))) == ""
    assert hint(constant("c", None, dtype="torch.float32", shape=(2, 2)), as_constant(x)) == ""
    assert hint(as_constant(x), constant("c", tensor_bytes(y)[:-4], dtype="torch.float32", shape=(2, 2))) == ""
    assert hint(constant("c", b"\x01", dtype="not_a_dtype", shape=(1,)),
                constant("c", b"\x02", dtype="not_a_dtype", shape=(1,))) == ""
    complex_ = torch.tensor([1 + 1j])
    assert hint(as_constant(complex_), as_constant(complex_ * 2)) == ""


# ------------------------------------------------------------------------------ graph, meta, val


def test_structure_differences():
    base = snapshot(node("x", "placeholder", "x", "()"), node(), node("out", "output", "output", "(%add,)"))
    assert structure_differences(base, snapshot(*base.nodes)) == []
    for field, value in (("name", "add_1"), ("op", "call_method"), ("target", "aten.sub.Tensor"),
                         ("args", "(%y, %x)"), ("kwargs", "{'alpha': 2}")):
        other = snapshot(base.nodes[0], base.nodes[1]._replace(**{field: value}), base.nodes[2])
        assert structure_differences(base, other) == [f"node #1 {field}: {getattr(base.nodes[1], field)} != {value}"]
    both = snapshot(base.nodes[0], base.nodes[1]._replace(name="n", target="t"), base.nodes[2])
    assert structure_differences(base, both) == ["node #1 name: add != n"]  # the first field only
    shorter = snapshot(*base.nodes[:2])
    assert structure_differences(base, shorter) == ["node count 3 vs 2", "unmatched nodes: output out"]
    assert structure_differences(shorter, base) == ["node count 2 vs 3", "unmatched nodes: output out"]
    many = snapshot(*[node(f"n{i}") for i in range(8)])
    renamed = snapshot(*[node(f"m{i}") for i in range(8)])
    assert len(structure_differences(many, renamed)) == 5
    assert len(structure_differences(many, renamed, limit=2)) == 2
    fewer = snapshot(*[node(f"m{i}") for i in range(6)])
    assert structure_differences(many, fewer, limit=3) == ["node count 8 vs 6", "node #0 name: n0 != m0",
                                                           "node #1 name: n1 != m1"]
    tail = snapshot(*[node(f"n{i}") for i in range(2)])
    assert structure_differences(many, tail, limit=2) == ["node count 8 vs 2", "unmatched nodes: call_function n2, "
                                                          "call_function n3"]


def test_identical_up_to_names():
    a = snapshot(node("x", "placeholder", "x", "()"), node("add", args="(%x, %x)"))
    b = snapshot(node("y", "placeholder", "x", "()"), node("plus", args="(%y, %y)"))
    assert identical_up_to_names(a, b)
    c = snapshot(node("y", "placeholder", "x", "()"), node("plus", args="(%y, %z)"))
    assert not identical_up_to_names(a, c)
    assert not identical_up_to_names(a, snapshot(node("y", "placeholder", "x", "()"),
                                                 node("plus", args="(%y, %y)", kwargs="{'a': 1}")))


def test_meta_differences():
    a = snapshot(node("n", meta=(("k", "1"), ("stack_trace", "s"))), node("m", meta=(("k", "1"),)))
    assert meta_differences(a, snapshot(*a.nodes)) == []
    b = snapshot(node("n", meta=(("k", "2"), ("other", "o"))), node("m", meta=()))
    assert meta_differences(a, b) == ["n: meta['k'] 1 != 2", "n: meta key 'other' present only in right",
                                      "n: meta key 'stack_trace' present only in left",
                                      "m: meta key 'k' present only in left"]
    assert meta_differences(a, b, limit=2) == ["n: meta['k'] 1 != 2", "n: meta key 'other' present only in right"]
    long = snapshot(node("n", meta=(("k", "x" * 400),)))
    assert meta_differences(long, snapshot(node("n", meta=(("k", "y"),)))) == [f"n: meta['k'] {'x' * 297}... != y"]
    exact = snapshot(node("n", meta=(("k", "x" * 300),)))
    assert meta_differences(exact, snapshot(node("n", meta=(("k", "y"),)))) == [f"n: meta['k'] {'x' * 300} != y"]


def test_val_differences():
    a = snapshot(*[node(f"n{i}", val=("T", str(i))) for i in range(7)])
    assert val_differences(a, snapshot(*a.nodes)) == []
    b = snapshot(*[node(f"n{i}", val=("T", "x")) for i in range(7)])
    found = val_differences(a, b)
    assert found[0] == "n0: val ('T', '0') != ('T', 'x')" and len(found) == 5
    assert len(val_differences(a, b, limit=1)) == 1


# ---------------------------------------------------------------------------------- aligned


def _step(seq, name, digest):
    return PassStep(seq, "edge", "M", seq, name, digest, 0.0)


def test_snapshot_pairs_follow_the_passes_while_both_ran_the_same():
    s = snapshot(node())
    a = LoweringResult(Mode.STOCK, (), "0", observation=Observation(
        steps=[_step(0, "A", "d0"), _step(1, "B", None), _step(2, "C", "d2"), _step(3, "D", "d3")],
        snapshots={"d0": s, "d2": s, "d3": s}, delegate_final=[s, s]), final=s)
    b = LoweringResult(Mode.STOCK, (), "0", observation=Observation(
        steps=[_step(0, "A", "e0"), _step(1, "B", "e1"), _step(2, "C", "e2"), _step(3, "X", "e3")],
        snapshots={"e0": s, "e1": s, "e2": s, "e3": s}, delegate_final=[s]))
    pairs = list(snapshot_pairs(a, b))
    assert [p.where.label for p in pairs] == ["edge/M[0] A", "edge/M[2] C"]  # parted at D/X: the rest is the passes check's
    full = dataclasses.replace(b, observation=dataclasses.replace(b.observation, steps=b.observation.steps[:3]))
    pairs = list(snapshot_pairs(a, full))
    assert [p.where.label for p in pairs] == ["edge/M[0] A", "edge/M[2] C", "delegate0 final graph (full provenance)",
                                              "final program graph (full provenance)"]
    assert pairs[2].where.delegate == 0 and pairs[-1].left is s and pairs[-1].right is None
    assert pairs[0].where.step.pass_name == "A"
    neither = dataclasses.replace(a, final=None)
    assert [p.where.label for p in snapshot_pairs(neither, dataclasses.replace(full, final=None))][-1] == \
        "delegate0 final graph (full provenance)"
    only_right = list(snapshot_pairs(neither, dataclasses.replace(full, final=s)))[-1]
    assert only_right.left is None and only_right.right is s
    assert pass_sequence(a) == ["edge/M[0] A", "edge/M[1] B", "edge/M[2] C", "edge/M[3] D"]


# ---------------------------------------------------------------------------------- digests


def test_lowering_digests():
    s = snapshot(node())
    result = LoweringResult(Mode.STOCK, (), "0", payloads=[Payload("T", b"ab", b"t"), Payload("T", b"cd", None)],
                            observation=Observation(delegate_tosa=[b"t1", b"t2"]), final=s)
    found = LoweringDigests.of(result)
    assert found == LoweringDigests((digest(b"ab"), digest(b"cd")), (digest(b"t1"), digest(b"t2")), s.digest)
    assert len(digest(b"ab")) == 32 and digest(b"ab") != digest(b"ac")
    import hashlib

    assert digest(b"ab") == hashlib.blake2b(b"ab", digest_size=16).hexdigest()
    assert LoweringDigests.of(dataclasses.replace(result, final=None)).final_graph is None


def _pte_adding(k: float) -> bytes:
    from executorch.exir import to_edge

    class Add(torch.nn.Module):
        def forward(self, x):
            return x + k

    return to_edge(torch.export.export(Add(), (torch.zeros(2),))).to_executorch().buffer


def test_the_first_schema_difference_names_the_part_of_the_program(monkeypatch):
    one, two = _pte_adding(1.0), _pte_adding(2.0)
    found = program._first_schema_difference(one, two)
    assert found == ("first differing field (constant data): pte.program.constant_buffer[1].storage: "
                     "4 vs 4 bytes, first difference at offset 2")
    assert program._first_schema_difference(one, one) == (
        "deserialized, the programs are equal: the bytes differ in padding, alignment or the header")
    monkeypatch.setattr(program, "_PROGRAM_PARTS", {})
    assert program._first_schema_difference(one, two) == "first differing field: " + found.split(": ", 1)[1]


def test_an_undeserializable_program_is_named_with_its_error():
    pte = _pte_adding(1.0)
    found = program._first_schema_difference(b"junk", pte)
    assert found.startswith("the first program does not deserialize: ")
    kind, _, message = found.removeprefix("the first program does not deserialize: ").partition(": ")
    assert kind.isidentifier() and kind != "NoneType" and message and message != "None"
    assert len(message) <= 200


def test_short_keeps_eighty_characters():
    assert program._short("x" * 79) == "'" + "x" * 76 + "..."  # 81 with its quotes
    assert program._short("x" * 78) == repr("x" * 78)


def test_constants_differences_go_on_past_a_constant_in_one_program_only():
    a, gone, b = constant("a"), constant("gone"), constant("b")
    assert program.constants_differences([a, gone, b], [a, constant("b", b"\x01\x07")]) == [
        "gone: only in the first program",
        "b: values differ, 2 vs 2 bytes, first difference at offset 1; 1 of 2 elements, first at (1,): 2 vs 7"]


def test_meta_differences_stop_at_five_by_default():
    a = snapshot(node("n", meta=tuple((f"k{i}", "1") for i in range(7))))
    b = snapshot(node("n", meta=tuple((f"k{i}", "2") for i in range(7))))
    assert len(meta_differences(a, b)) == 5


def test_an_undeserializable_programs_error_is_cut_at_200_characters(monkeypatch):
    from executorch.exir._serialize import _program

    def refuse(data):
        raise ValueError("x" * 300 + "\nsecond line")

    monkeypatch.setattr(_program, "deserialize_pte_binary", refuse)
    assert program._first_schema_difference(b"a", b"b") == "the first program does not deserialize: ValueError: " + "x" * 200
