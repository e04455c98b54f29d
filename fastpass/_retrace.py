"""run_decompositions without the re-trace, when the re-trace can only record what is known.

Why: ``to_edge_transform_and_lower`` calls ``ExportedProgram.run_decompositions`` three times
for a partitioner that keeps ops whole (the ARM partitioners do): functionalize, decompose with
the partitioner's ops held back, then -- after ``_replace_aten_ops_with_transformed_ops`` has
moved the kept ops into the ``EDGE_DO_NOT_DECOMP`` namespace -- once more with the default
table.  Each call re-traces the whole program through AOTAutograd (a metadata-collection run
and a make_fx trace, both through functionalization and FakeTensor dispatch): half of a
fastpass SleepNet U55 lowering.  Yet the first call, on a program with no mutation, only
turns each view-like CompositeImplicitAutograd op (reshape, flatten) into the one view op its
kernel calls, the second only each conv2d into one convolution, and the third changes no op in
the ARM lowerings measured; every node still comes out new: a new graph, a ``from_node`` layer for ``ExportedProgram.module()`` and one for the
retracing interpreter, ``original_aten`` of the op traced, ``eager_input_vals`` for a
stride-sensitive op.

What this feature does: when the program is functional (ATen IR, or training IR whose every op
is functional) and the trace would record each node as it is, or a node's op as the one op its
CompositeImplicitAutograd decomposition calls, the trace is replaced by what it would write.  The same idea as
fast-copy for a pass: keep what is known, write what the trace would add.  Everything around
the trace stays upstream's own code: ``ExportedProgram.module()`` (the unlifted graph and its
provenance layer), ``_collect_param_buffer_metadata`` and
``_populate_param_buffer_metadata_to_new_gm`` (what a lifted parameter's placeholder
inherits), the checks of the new graph, ``_remove_unnecessary_copy_op_pass``, and the caller's
new ``ExportedProgram`` (module call graph, range constraints).

What the synthesis writes, per node, as ``make_fx`` under ``preserve_node_meta`` does
(torch 2.13 ``TracerBase.create_node``, ``PythonKeyTracer.create_node``,
``fx.traceback.set_current_meta``, ``proxy_tensor.set_original_aten_op``), reading the
unlifted module's node ``m`` the interpreter would run:

* ``stack_trace`` if ``m`` has a non-empty one; then each of ``fx.proxy._COPY_META_FIELDS``
  ``m`` holds (shallow copies); ``from_node`` = ``[NodeSource(m, "Interpreter_Propagate
  UnbackedSymInts", CREATE)]``; ``original_aten`` = the op recorded (the op that reaches the
  proxy mode: a CIA decomposition runs above it); ``seq_nr`` as it was; ``eager_input_vals``
  where torch's own ``_should_save_eager_input_vals`` asks for it, from the new arguments'
  vals; ``val`` as the node had it (the same fake mode: a re-trace gives the same metadata; the
  harness compares shape, dtype, stride, storage offset, device, requires_grad) and
  ``tensor_meta`` extracted from it as the trace extracts it, under ``no_grad`` (a training-IR
  node's own says ``requires_grad`` downstream of a parameter); for a decomposed node those of
  its op traced alone;
* a decomposed node (its CIA op decomposed by the table, or by its own kernel where export
  cannot preserve it: the view-like reshape, flatten): the op, arguments and result of its op
  traced alone by ``make_fx`` on its input vals under the trace's CIA overrides and Python
  dispatcher (a decomposition into more than one op is left to the trace), named by that op as
  the trace names it;
* placeholders: ``val``, ``tensor_meta`` as they were, ``desc`` as aot describes its inputs
  (``_input_descs``: parameters, buffers, then user inputs; an ATen-IR placeholder's own must be
  the same), then upstream's
  parameter/buffer metadata copy; the output node: the unlifted output's meta, as
  ``_maybe_fixup_gm_and_output_node_meta`` copies it; names as the trace gives them (aot's
  ``arg<i>_1`` placeholders, each op's packet name in one namespace, then the signature's
  names): a node a pass renamed, or one after a decomposed node of the same op, is renamed so.

When it applies (anything else runs the stock re-trace; ``plain_program_reason`` says why):
a forward (non-joint) program whose verifier is the post-functionalization ``Verifier`` or the
training IR's ``TrainingIRVerifier`` (then every op must be functional: checked per node); only
parameters, persistent buffers and user inputs in, user outputs out; no constants, no
submodules, no ``get_attr``; every ``call_function`` an ``OpOverload`` that returns one tensor
of static shape, is not mutable and has users (or returns nothing and no dead-code pass removes
it: export's ``_assert_tensor_metadata``, written with no ``val``); its arguments in a form
whose recorded form can be told (``_as_the_trace_records``); not in the Python decomposition table; with a
CompositeImplicitAutograd kernel only if it decomposes into one op or the table preserves it;
inputs in aot's order (parameters and buffers as the unlifted module lists them).

What a trace writes besides the graph: under export, a function under
``torch._dynamo.disable`` that runs inside an op's FakeTensor dispatch annotates the current
meta's ``custom`` dict in place (``fx.traceback.annotate``), and the recorded node keeps it.
For a node recorded by an earlier trace with the op it has (``original_aten``), that dispatch
ran then on the same vals and wrote its annotation already, or hit the FakeTensor cache and
will hit it again: writing it again changes nothing.  Every other node's op is dispatched here
as the trace would dispatch it, on its input vals in the fake mode, export's compiling state
and the trace's CIA overrides, with a probe as the current ``custom``, and what lands in the
probe is added to the node's ``custom``: a node a pass moved to another op since
(EDGE_DO_NOT_DECOMP.linear, whose kernel aten.linear reaches such a function: deep_autoencoder),
a preserved CIA op (its fake rule runs its original kernel), a decomposed one (the probe is
current inside its lone trace only: make_fx's own ``dispatch_trace`` is dynamo-disabled too).
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import _stats

INTERPRETER_PASS_NAME = "Interpreter_PropagateUnbackedSymInts"


class _NotPlain(Exception):
    """The program is not one whose re-trace only gives it back: run the stock re-trace."""


def _op_is_recorded_unchanged(target: Any, cia_to_decomp: Dict[Any, Callable],
                              python_decomp_table: Dict[Any, Callable]) -> bool:
    import torch

    if not isinstance(target, torch._ops.OpOverload):
        return False
    if target in python_decomp_table:
        return False
    if target in cia_to_decomp:
        # The trace runs code of the table's for it: decomposed, or preserved through a fake
        # rule that runs the op's original kernel (_check_nodes sorts these two).
        return False
    return not torch._C._dispatch_has_kernel_for_dispatch_key(target.name(), "CompositeImplicitAutograd")


def _functional(target: Any) -> bool:
    """Does the trace record the op as it is, as far as mutation goes? An op that writes an input
    (a training-IR ``relu_``) is functionalized by the trace into another op."""
    return not target._schema.is_mutable


def _is_default(value: Any, argument: Any) -> Optional[bool]:
    """Is ``value`` the schema argument's default, as the dispatcher compares them (``IValue``
    equality: an int is not a float or a bool)? None where that cannot be told here."""
    if not argument.has_default_value():
        return False
    return _same_ivalue(value, argument.default_value)


def _same_ivalue(a: Any, b: Any) -> Optional[bool]:
    if a is None or b is None:
        return a is b
    if isinstance(a, list) and isinstance(b, list):  # fx keeps lists as immutable_list
        same = [_same_ivalue(x, y) for x, y in zip(a, b)]
        return None if None in same else len(a) == len(b) and all(same)
    if type(a) is type(b) and type(a) in (int, float, bool, str):
        return a == b
    if type(a) in (int, float, bool) and type(b) in (int, float, bool):
        return False  # the IValue tags differ
    return None


def _as_the_trace_records(target: Any, args: tuple, kwargs: dict) -> Optional[Tuple[tuple, Dict[str, Any]]]:
    """A node's arguments as the trace records them, or None where that cannot be told here. The
    trace records each call as the dispatcher hands it to Python (torch's
    ``parseIValuesToPyArgsKwargs``): the arguments before the kwarg-only ones positionally, up to
    the last that is not its default (a default left out before it handed over as ``None``); the
    kwarg-only ones that are not their defaults by name. A traced program's nodes are so already;
    a node a pass inserted need not be (export's ``_assert_tensor_metadata`` for ``.to(dtype)``
    holds its dtype by keyword; the trace records it positionally, after ``None, None``).
    Cannot be told: a value the dispatcher converts on the way (a tuple to a list, an int given
    for a float: ``_conforms``), a default other than None to write out, a value whose equality
    with its default the IValue tags do not settle."""
    arguments = target._schema.arguments
    names = [a.name for a in arguments]
    if len(args) > sum(not a.kwarg_only for a in arguments):
        return None  # more than the positional ones: not a call the dispatcher takes
    given = dict(zip(names, args))
    for name, value in kwargs.items():
        if name in given or name not in names:
            return None
        given[name] = value
    if _holds_a_tuple(tuple(given.values())):
        return None
    positional: List[Any] = []
    by_name: Dict[str, Any] = {}
    kept = 0  # the positional arguments up to the last that is not its default
    for argument in arguments:
        if argument.name in given:
            value = given[argument.name]
            if not _conforms(value, argument.type):
                return None
            default = _is_default(value, argument)
            if default is None:
                return None
        elif argument.has_default_value():
            value, default = argument.default_value, True
        else:
            return None  # a required argument missing
        if argument.kwarg_only:
            if not default:
                by_name[argument.name] = value
        else:
            positional.append(value)
            if not default:
                kept = len(positional)
    if any(value is not None and name not in given
           for value, name in zip(positional[:kept], names)):
        return None  # a default left out before a given argument: handed over as the IValue it is
    return tuple(positional[:kept]), by_name


def _conforms(value: Any, schema_type: Any) -> bool:
    """Does the dispatcher hand ``value`` back as it is for an argument of this type? It converts
    an int given for a float into a float and a bool given for an int into an int."""
    import torch

    if isinstance(schema_type, torch._C.OptionalType):
        return value is None or _conforms(value, schema_type.getElementType())
    if isinstance(schema_type, torch._C.ListType):
        return isinstance(value, list) and all(_conforms(v, schema_type.getElementType()) for v in value)
    if isinstance(schema_type, torch._C.FloatType):
        return type(value) is float
    if isinstance(schema_type, torch._C.BoolType):
        return type(value) is bool
    if isinstance(schema_type, (torch._C.IntType, torch._C.SymIntType)):
        # ScalarType, Layout and MemoryFormat are ints in the schema's type
        return type(value) is int or isinstance(value, (torch.dtype, torch.layout, torch.memory_format))
    return True


def _holds_a_tuple(values: Any) -> bool:
    """Does an argument hold a tuple (the dispatcher hands every list back as a list)?"""
    for value in values:
        if isinstance(value, tuple) or (isinstance(value, list) and _holds_a_tuple(value)):
            return True
    return False


def _traced_tensor_meta(node: Any) -> Any:
    """The ``tensor_meta`` the trace writes for a node it records unchanged: extracted from the
    result, under the trace's ``no_grad`` (``proxy_tensor.set_meta``). A training-IR node's own
    was extracted with grad enabled: ``requires_grad`` is true downstream of a parameter."""
    from torch.fx.passes.shape_prop import _extract_tensor_metadata

    return _extract_tensor_metadata(node.meta["val"])


def _check_program(ep: Any, joint_loss_index: Optional[int], decompose_custom_triton_ops: bool) -> None:
    import torch
    from torch._export.verifier import TrainingIRVerifier, Verifier
    from torch.export.graph_signature import InputKind, OutputKind

    if joint_loss_index is not None or ep.graph_signature.backward_signature is not None:
        raise _NotPlain("joint graph")
    if decompose_custom_triton_ops:
        raise _NotPlain("custom triton ops decomposed")
    if list(ep.verifiers) not in ([Verifier], [TrainingIRVerifier]):
        raise _NotPlain("neither ATen IR nor training IR")
    if ep.constants:
        raise _NotPlain("lifted constants")
    for spec in ep.graph_signature.input_specs:
        if spec.kind not in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.USER_INPUT):
            raise _NotPlain(f"input kind {spec.kind.name}")
        if spec.kind == InputKind.BUFFER and not spec.persistent:
            raise _NotPlain("non-persistent buffer")
    for spec in ep.graph_signature.output_specs:
        if spec.kind != OutputKind.USER_OUTPUT:
            raise _NotPlain(f"output kind {spec.kind.name}")
    for value in ep.state_dict.values():
        if type(value) not in (torch.Tensor, torch.nn.Parameter):
            raise _NotPlain("tensor subclass in the state dict")
    if any(True for _ in ep.graph_module.named_children()):
        raise _NotPlain("submodules")


def _check_nodes(ep: Any, cia_to_decomp: Dict[Any, Callable],
                 python_decomp_table: Dict[Any, Callable]) -> Tuple[List[Any], List[Any], Dict[Any, Any]]:
    """(nodes whose op the table decomposes through its CompositeImplicitAutograd kernel, nodes
    whose CIA op it preserves, each other node's arguments as the trace records them); every
    other node is recorded with its op and those arguments."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.export.exported_program import _special_op_to_preserve_cia
    from torch.fx import traceback as fx_traceback

    decomposed, preserved = [], []
    recorded_arguments: Dict[Any, Any] = {}
    for node in ep.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if node.op != "call_function":
            raise _NotPlain(f"{node.op} node")
        target = node.target
        if not _op_is_recorded_unchanged(target, cia_to_decomp, python_decomp_table):
            if not isinstance(target, torch._ops.OpOverload) or target in python_decomp_table:
                raise _NotPlain(f"{target} would be decomposed or is not an op")
            if target not in cia_to_decomp:  # not preservable (a view-like CIA op): its own kernel runs
                decomposed.append(node)
            else:
                (preserved if cia_to_decomp[target] is _special_op_to_preserve_cia else decomposed).append(node)
        if not _functional(target):
            raise _NotPlain(f"{target} mutates")
        if not decomposed or decomposed[-1] is not node:
            arguments = _as_the_trace_records(target, node.args, node.kwargs)
            if arguments is None:
                raise _NotPlain(f"{node.name}: arguments whose recorded form cannot be told")
            recorded_arguments[node] = arguments
        meta = node.meta
        if _returns_nothing(target):
            # export's _assert_tensor_metadata: no users, kept by every dead-code pass
            if node.users or meta.get("val") is not None or "tensor_meta" in meta:
                raise _NotPlain(f"{node.name}: returns nothing, yet is read or holds a value")
        else:
            if not node.users:
                raise _NotPlain("a node without users")
            val = meta.get("val")
            if type(val) is not FakeTensor or "tensor_meta" not in meta:
                raise _NotPlain(f"{node.name}: not one tensor")
            if not all(type(d) is int for d in val.shape):
                raise _NotPlain("symbolic shape")
        trace = meta.get("stack_trace")
        if trace and fx_traceback.GRADIENT_ACC_SPECIAL_STACK in trace:
            raise _NotPlain("gradient accumulation")
    return decomposed, preserved, recorded_arguments


def _returns_nothing(target: Any) -> bool:
    """An op that returns nothing and that no dead-code pass removes (``_side_effectful_functions``):
    the trace records it, with no ``val`` and no ``tensor_meta``."""
    from torch.fx.node import _side_effectful_functions

    return not target._schema.returns and target in _side_effectful_functions


class _Decomposition:
    """What the trace records for a node its table decomposes: one op, its arguments (the
    node's input nodes where the traced op read them) and its result's ``val``/``tensor_meta``."""

    def __init__(self, target: Any, args: Any, kwargs: Any, meta: Dict[str, Any]) -> None:
        self.target, self.args, self.kwargs = target, args, kwargs
        self.val, self.tensor_meta = meta["val"], meta["tensor_meta"]


def _traced_names(ep: Any, decompositions: Optional[Dict[Any, Any]] = None) -> List[str]:
    """The names the re-trace gives: aot's placeholders (``arg<i>_1``), then each recorded op's
    packet name in one namespace, then the placeholders renamed to the signature's names."""
    from torch.fx.graph import _Namespace

    decompositions = decompositions or {}
    namespace = _Namespace()
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    for index in range(len(placeholders)):
        namespace.create_name(f"arg{index}_1", None)
    names = []
    for node in ep.graph.nodes:
        if node.op == "call_function":
            recorded = decompositions[node].target if node in decompositions else node.target
            names.append(namespace.create_name(recorded.overloadpacket.__name__, None))
    final_inputs = [spec.arg.name for spec in ep.graph_signature.input_specs]
    if set(final_inputs) & set(names):
        raise _NotPlain("a placeholder name the trace would give an op")
    return final_inputs + names


def _input_descs(ep: Any, mod: Any) -> List[Any]:
    """The ``desc`` the trace gives each placeholder, in order: aot traces the unlifted module's
    parameters (``named_parameters(remove_duplicate=False)``), then its buffers, then the user
    inputs, and describes them as ``ParamAOTInput(fqn)``, ``BufferAOTInput(fqn)`` and
    ``PlainAOTInput(k)`` (torch 2.13 ``aot_export_joint_with_descriptors``). A training-IR program
    has none yet; an ATen-IR one has the earlier trace's, which must be these."""
    from torch._functorch._aot_autograd.descriptors import BufferAOTInput, ParamAOTInput, PlainAOTInput
    from torch.export.graph_signature import InputKind

    specs = ep.graph_signature.input_specs
    params = [s.target for s in specs if s.kind == InputKind.PARAMETER]
    buffers = [s.target for s in specs if s.kind == InputKind.BUFFER]
    users = len(specs) - len(params) - len(buffers)
    if [s.kind for s in specs] != [InputKind.PARAMETER] * len(params) + [InputKind.BUFFER] * len(buffers) \
            + [InputKind.USER_INPUT] * users:
        raise _NotPlain("inputs not in the trace's order")
    if params != [name for name, _ in mod.named_parameters(remove_duplicate=False)] \
            or buffers != [name for name, _ in mod.named_buffers(remove_duplicate=False)]:
        raise _NotPlain("parameters or buffers not in the module's order")
    return [ParamAOTInput(t) for t in params] + [BufferAOTInput(t) for t in buffers] \
        + [PlainAOTInput(k) for k in range(users)]


def _retargeted(node: Any) -> bool:
    """Did a pass give the node another op since a trace recorded it (``original_aten`` is the op
    the trace dispatched: ``_replace_aten_ops_with_transformed_ops`` moves kept ops into
    ``EDGE_DO_NOT_DECOMP``)? Its op is then dispatched for the first time by this trace."""
    recorded = node.meta.get("original_aten")
    # By name: the same op can be two OpOverload objects (a program loaded with
    # torch.export.load records the one its deserializer resolved).
    return not (isinstance(recorded, type(node.target)) and recorded.name() == node.target.name())


def _dispatch_annotations(nodes: List[Any], cia_to_decomp: Dict[Any, Callable]) -> Dict[Any, Dict[str, Any]]:
    """What dispatching each node's op in the trace's context writes into the node's ``custom``
    meta: under export, a function under ``torch._dynamo.disable`` annotates the current meta's
    ``custom`` dict in place (``fx.traceback.annotate``), and the node the trace records keeps it
    (EDGE_DO_NOT_DECOMP.linear's kernel, aten.linear, reaches one). Each op is dispatched on the
    node's input vals in the FakeTensor mode, export's compiling state and the trace's CIA
    overrides, with a probe dict as the current ``custom``."""
    import torch
    import torch.export.exported_program as exported_program
    from torch._export.utils import _compiling_state_context
    from torch._guards import detect_fake_mode
    from torch.export._trace import _ignore_backend_decomps
    from torch.fx import traceback as fx_traceback
    from torch.fx.node import map_arg

    if not nodes:
        return {}
    # an op that returns nothing has no val: the mode is its inputs'
    fake_mode = detect_fake_mode([n.meta.get("val") for node in nodes for n in (node, *node.all_input_nodes)])
    written: Dict[Any, Dict[str, Any]] = {}
    saved = fx_traceback.current_meta
    with (fx_traceback.preserve_node_meta(), _compiling_state_context(), torch.no_grad(), _ignore_backend_decomps(),
          exported_program._override_composite_implicit_decomp(cia_to_decomp), fake_mode):
        try:
            for node in nodes:
                probe: Dict[str, Any] = {}
                fx_traceback.current_meta = {"custom": probe}
                args = map_arg(node.args, lambda n: n.meta["val"])
                kwargs = map_arg(node.kwargs, lambda n: n.meta["val"])
                node.target(*args, **kwargs)
                written[node] = probe
        finally:
            fx_traceback.current_meta = saved
    return written


def _decompositions(nodes: List[Any], cia_to_decomp: Dict[Any, Callable],
                    python_decomp_table: Dict[Any, Callable]) -> Dict[Any, Tuple[_Decomposition, Dict[str, Any]]]:
    """What the trace records for each node whose CIA op the table decomposes, and what the
    decomposition writes into the node's ``custom`` meta: the op traced alone by ``make_fx`` on
    the node's input vals, in the trace's context (export's compiling state, the CIA overrides,
    the Python dispatcher, a probe as the current ``custom``). A decomposition into more than
    one op is left to the trace."""
    import torch
    import torch.export.exported_program as exported_program
    from torch._dispatch.python import enable_python_dispatcher
    from torch._export.utils import _compiling_state_context
    from torch.export._trace import _ignore_backend_decomps
    from torch.fx import traceback as fx_traceback
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.fx.node import map_arg

    found: Dict[Any, Tuple[_Decomposition, Dict[str, Any]]] = {}
    if not nodes:
        return found
    saved = fx_traceback.current_meta
    with (fx_traceback.preserve_node_meta(), _compiling_state_context(), torch.no_grad(), _ignore_backend_decomps(),
          exported_program._override_composite_implicit_decomp(cia_to_decomp), enable_python_dispatcher()):
        try:
            for node in nodes:
                inputs = list(node.all_input_nodes)

                probe: Dict[str, Any] = {}

                def alone(*vals: Any, node: Any = node, inputs: List[Any] = inputs, probe: Dict[str, Any] = probe) -> Any:
                    # The probe is the current meta only inside: make_fx's own dispatch_trace is
                    # dynamo-disabled and annotates the meta current when the trace starts, as
                    # the stock trace's does the meta around its interpreter, never a node's.
                    outside = fx_traceback.current_meta
                    fx_traceback.current_meta = {"custom": probe}
                    try:
                        env = dict(zip(inputs, vals))
                        return node.target(*map_arg(node.args, env.__getitem__), **map_arg(node.kwargs, env.__getitem__))
                    finally:
                        fx_traceback.current_meta = outside

                fx_traceback.current_meta = {}
                traced = make_fx(alone, decomposition_table=python_decomp_table)(*[n.meta["val"] for n in inputs])
                placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
                calls = [n for n in traced.graph.nodes if n.op == "call_function"]
                output = next(n for n in traced.graph.nodes if n.op == "output")
                if len(calls) != 1 or output.args[0] is not calls[0] or len(placeholders) != len(inputs):
                    raise _NotPlain(f"{node.target} decomposes into more than one op")
                back = dict(zip(placeholders, inputs))
                call = calls[0]
                found[node] = (_Decomposition(call.target, map_arg(call.args, back.__getitem__),
                                              map_arg(call.kwargs, back.__getitem__), call.meta), probe)
        finally:
            fx_traceback.current_meta = saved
    return found


def _copied_meta(module_node: Any, node: Any, target: Any, val: Any, tensor_meta: Any,
                 new_args: Tuple[Any, Any]) -> Dict[str, Any]:
    """The meta ``make_fx`` writes on the node it records, with op ``target``, while interpreting
    ``module_node`` (the unlifted copy of ``node``)."""
    from torch.fx.experimental.proxy_tensor import _should_save_eager_input_vals, extract_val
    from torch.fx.node import map_aggregate
    from torch.fx.proxy import _COPY_META_FIELDS
    from torch.fx.traceback import NodeSource, NodeSourceAction

    source = module_node.meta
    meta: Dict[str, Any] = {}
    trace = source.get("stack_trace")
    if trace:
        meta["stack_trace"] = trace
    current = dict(source)
    current["from_node"] = [NodeSource(module_node, INTERPRETER_PASS_NAME, NodeSourceAction.CREATE)]
    current["original_aten"] = target
    for field in _COPY_META_FIELDS:
        if field in current:
            meta[field] = copy.copy(current[field])
    if "seq_nr" in node.meta:
        meta["seq_nr"] = node.meta["seq_nr"]
    if _should_save_eager_input_vals(target, new_args):
        meta["eager_input_vals"] = map_aggregate(
            new_args, lambda v: extract_val(v.meta["val"]) if hasattr(v, "meta") and "val" in v.meta else None)
    if val is not None:  # an op that returns nothing gets neither
        meta["val"] = val
        meta["tensor_meta"] = tensor_meta
    return meta


def _synthesize(ep: Any, cia_to_decomp: Dict[Any, Callable], python_decomp_table: Dict[Any, Callable],
                decomposed: List[Any], preserved: List[Any],
                recorded_arguments: Dict[Any, Any]) -> Tuple[Any, Any, Dict[str, Any]]:
    """(graph module, signature, state dict) as the re-trace of a plain program returns them."""
    import torch
    from torch._export.utils import _collect_param_buffer_metadata, _populate_param_buffer_metadata_to_new_gm
    from torch.export._trace import _verify_nn_module_stack, _verify_placeholder_names, _verify_stack_trace
    from torch.export.exported_program import _remove_unnecessary_copy_op_pass
    from torch.fx.node import map_arg

    decompositions = _decompositions(decomposed, cia_to_decomp, python_decomp_table)
    names = _traced_names(ep, {node: found[0] for node, found in decompositions.items()})
    # Each node gets the name the trace gives it: a decomposed node its new op's, and every
    # later node of that op the next free one (_to_dim_order_copy becoming _to_copy moves
    # _to_copy to _to_copy_1); export names _assert_tensor_metadata by its overload too. A user
    # output's name follows below; upstream maps the module call graph's names after us.
    old_names = [n.name for n in ep.graph.nodes if n.op in ("placeholder", "call_function")]
    new_name = dict(zip(old_names, names))
    mod = ep.module()
    module_nodes = {n.name: n for n in mod.graph.nodes if n.op == "call_function"}
    module_output = next(n for n in reversed(mod.graph.nodes) if n.op == "output")
    params_buffers_to_node_meta = _collect_param_buffer_metadata(mod)
    descs = iter(_input_descs(ep, mod))
    kept_whole = set(preserved)
    probed = [n for n in ep.graph.nodes if n.op == "call_function" and (_retargeted(n) or n in kept_whole)]
    annotations = _dispatch_annotations(probed, cia_to_decomp)
    annotations.update({node: found[1] for node, found in decompositions.items()})

    graph = torch.fx.Graph()
    env: Dict[Any, Any] = {}
    for node in ep.graph.nodes:
        if node.op == "placeholder":
            new = graph.placeholder(node.name)
            new.meta.update({k: node.meta[k] for k in ("val", "tensor_meta") if k in node.meta})
            new.meta["desc"] = next(descs)
            if "desc" in node.meta and node.meta["desc"] != new.meta["desc"]:
                raise _NotPlain(f"{node.name}: described otherwise than the trace describes it")
        elif node.op == "call_function":
            module_node = module_nodes.get(node.name)
            if module_node is None or module_node.target is not node.target or not module_node.meta:
                raise _NotPlain(f"{node.name} is not in the unlifted module as it is here")
            if node in decompositions:
                found = decompositions[node][0]
                target, val, tensor_meta = found.target, found.val, found.tensor_meta
                args, kwargs = map_arg(found.args, env.__getitem__), map_arg(found.kwargs, env.__getitem__)
            else:
                target, val = node.target, node.meta.get("val")
                tensor_meta = None if val is None else _traced_tensor_meta(node)
                recorded_args, recorded_kwargs = recorded_arguments[node]
                args, kwargs = map_arg(recorded_args, env.__getitem__), map_arg(recorded_kwargs, env.__getitem__)
            new = graph.create_node("call_function", target, args, kwargs, name=new_name[node.name])
            meta = _copied_meta(module_node, node, target, val, tensor_meta, (args, kwargs))
            annotation = annotations.get(node)
            if annotation:
                if "custom" not in meta:
                    raise _NotPlain(f"{node.name}: its dispatch annotates a node without custom meta")
                meta["custom"].update(annotation)
            new.meta.update(meta)
        else:
            new = graph.output(map_arg(node.args[0], env.__getitem__))
            new.meta.update(module_output.meta)
        env[node] = new
    if [n.name for n in graph.nodes if n.op != "output"] != names:
        raise _NotPlain("the new graph renamed a node")
    signature = copy.deepcopy(ep.graph_signature)
    for spec in signature.output_specs:  # a user output an op of which the trace renamed
        if getattr(spec.arg, "name", None) in new_name:
            spec.arg.name = new_name[spec.arg.name]
    graph_module = torch.fx.GraphModule(torch.nn.Module(), graph)
    graph_module.meta.update(mod.meta)
    _populate_param_buffer_metadata_to_new_gm(params_buffers_to_node_meta, graph_module, signature)
    _verify_nn_module_stack(graph_module)
    _verify_stack_trace(graph_module)
    _verify_placeholder_names(graph_module, signature)
    graph_module, signature = _remove_unnecessary_copy_op_pass(graph_module, signature)
    return graph_module, signature, dict(ep.state_dict)


def plain_program_reason(ep: Any, cia_to_decomp: Dict[Any, Callable], python_decomp_table: Dict[Any, Callable],
                         joint_loss_index: Optional[int] = None, decompose_custom_triton_ops: bool = False) -> str:
    """Why this call must run the stock re-trace ('' when it need not): for tests and reports."""
    try:
        _check_program(ep, joint_loss_index, decompose_custom_triton_ops)
        decomposed, _, _ = _check_nodes(ep, cia_to_decomp, python_decomp_table)
        _traced_names(ep, {node: found[0] for node, found in
                           _decompositions(decomposed, cia_to_decomp, python_decomp_table).items()})
    except _NotPlain as reason:
        return str(reason) or "not plain"
    return ""


def wrap_decompose(original: Callable[..., Any]) -> Callable[..., Any]:
    """Replacement for ``torch.export.exported_program._decompose_and_get_gm_with_new_signature_constants``."""

    def decompose_and_get_gm_with_new_signature_constants(ep: Any, *, cia_to_decomp: Dict[Any, Callable],
                                                          python_decomp_table: Dict[Any, Callable],
                                                          joint_loss_index: Optional[int],
                                                          decompose_custom_triton_ops: bool) -> Any:
        try:
            _check_program(ep, joint_loss_index, decompose_custom_triton_ops)
            decomposed, preserved, recorded_arguments = _check_nodes(ep, cia_to_decomp, python_decomp_table)
            result = _synthesize(ep, cia_to_decomp, python_decomp_table, decomposed, preserved,
                                 recorded_arguments)
        except _NotPlain:
            _stats.count_retrace(copied=False)
            return original(ep, cia_to_decomp=cia_to_decomp, python_decomp_table=python_decomp_table,
                            joint_loss_index=joint_loss_index,
                            decompose_custom_triton_ops=decompose_custom_triton_ops)
        _stats.count_retrace(copied=True)
        return result

    return decompose_and_get_gm_with_new_signature_constants
