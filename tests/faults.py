"""Faults the harness exists to catch, injected into one lowering so a test can assert the
harness reports each, as divergent, at the pass where it was injected; and, at the end
(`FASTPASS_FAULTS`), single faults planted in fastpass's own rules, each of which a rule test
must catch."""

from __future__ import annotations

import contextlib

import torch


@contextlib.contextmanager
def after_pass(pass_cls, mutate, when=lambda: True):
    """Run `mutate(graph_module)` on what `pass_cls` returns, whenever `when()` holds: a bug in
    that pass (`when=fastpass.is_enabled`: a bug that exists only with fastpass on). The pass's
    own `call`, or the one it inherits, is put back after."""
    own = pass_cls.__dict__.get("call")
    inherited = pass_cls.call

    def call(self, graph_module):
        result = inherited(self, graph_module)
        if when():
            mutate(result.graph_module)
            result.graph_module.recompile()
        return result

    pass_cls.call = call
    try:
        yield
    finally:
        if own is None:
            del pass_cls.call
        else:
            pass_cls.call = own


def first_call_function(graph_module, predicate=lambda n: True):
    return next(n for n in graph_module.graph.nodes if n.op == "call_function" and predicate(n))


def rename_node(graph_module) -> None:
    node = first_call_function(graph_module, lambda n: "convolution" in str(n.target))
    node._rename(node.name + "_renamed")


def change_target(graph_module) -> None:
    from executorch.exir.dialects._ops import ops as exir_ops

    node = first_call_function(graph_module, lambda n: "aten.add.Tensor" in str(n.target) or "add.Tensor" in n.name
                               or n.name.startswith("aten_add_tensor"))
    node.target = exir_ops.edge.aten.sub.Tensor


def stale_val(graph_module) -> None:
    node = first_call_function(graph_module, lambda n: "view_copy" in str(n.target))
    val = node.meta["val"]
    node.meta["val"] = val.new_empty_strided(val.shape, tuple(reversed(val.stride())))


def drop_meta_key(graph_module) -> None:
    node = first_call_function(graph_module, lambda n: "stack_trace" in n.meta)
    del node.meta["stack_trace"]


@contextlib.contextmanager
def flip_payload_byte():
    """The backend's emitted bytes change, while the TOSA it compiled from does not."""
    from executorch.backends.arm.tosa.backend import TOSABackend

    original = TOSABackend.__dict__["preprocess"]

    def preprocess(edge_program, compile_specs):
        result = original.__func__(edge_program, compile_specs)
        data = bytearray(result.processed_bytes)
        data[len(data) // 2] ^= 0x01
        result.processed_bytes = bytes(data)
        return result

    TOSABackend.preprocess = staticmethod(preprocess)
    try:
        yield
    finally:
        TOSABackend.preprocess = original


@contextlib.contextmanager
def change_reference_output():
    """The reference model answers differently for the same bytes (a changed output)."""
    import tosa_reference_model

    original = tosa_reference_model.run

    def run(*args, **kwargs):
        outputs, status = original(*args, **kwargs)
        outputs = [o.copy() for o in outputs]
        outputs[0].flat[0] = outputs[0].flat[0] + 1
        return outputs, status

    tosa_reference_model.run = run
    try:
        yield
    finally:
        tosa_reference_model.run = original


@contextlib.contextmanager
def drop_pass(pass_cls):
    """The pipeline loses a pass: the pass sequences part."""
    from executorch.backends.arm._passes.arm_pass_manager import ArmPassManager

    original = ArmPassManager.__dict__["add_pass"]
    original_validate = ArmPassManager.__dict__["validate_constraints_mandatory"]

    def add_pass(self, p):
        if type(p) is not pass_cls:
            original(self, p)

    ArmPassManager.add_pass = add_pass
    ArmPassManager.validate_constraints_mandatory = lambda self: None  # it would name the missing pass
    try:
        yield
    finally:
        ArmPassManager.add_pass = original
        ArmPassManager.validate_constraints_mandatory = original_validate


@contextlib.contextmanager
def flip_program_byte():
    """One byte of the serialized program (the .pte) changes after the emitter wrote it."""
    from executorch.exir.program._program import ExecutorchProgramManager

    original = ExecutorchProgramManager.__dict__["buffer"]

    def buffer(self):
        data = bytearray(original.fget(self))
        data[len(data) // 2] ^= 0x01
        return bytes(data)

    ExecutorchProgramManager.buffer = property(buffer)
    try:
        yield
    finally:
        ExecutorchProgramManager.buffer = original


@contextlib.contextmanager
def change_top_level_constant(name, change):
    """Delegation hands back a top-level constant (one the partitioner left on the CPU) changed:
    `change(tensor)` edits the lowered program's copy in place, nothing inside a delegate."""
    from executorch.exir.program._program import EdgeProgramManager

    original = EdgeProgramManager.__dict__["to_backend"]

    def to_backend(self, *args, **kwargs):
        lowered = original(self, *args, **kwargs)
        with torch.no_grad():
            change(lowered.exported_program().state_dict[name])
        return lowered

    EdgeProgramManager.to_backend = to_backend
    try:
        yield
    finally:
        EdgeProgramManager.to_backend = original


def add_one_to_first_element(tensor) -> None:
    tensor.view(-1)[0] += 1


def flip_requires_grad(tensor) -> None:
    tensor.requires_grad_(not tensor.requires_grad)


def raise_in(graph_module) -> None:
    raise RuntimeError("injected failure")


__all__ = ["FASTPASS_FAULTS", "HARNESS_FAULTS", "add_one_to_first_element", "after_pass", "change_reference_output",
           "change_target", "change_top_level_constant", "ciatable_unchanged_by_count",
           "copy_multi_output_as_single", "drop_meta_key", "emit_ignores_a_pass_s_own_tracer",
           "emit_ignores_the_context", "emit_sets_metadata_before_the_update", "emit_takes_any_argument_as_a_leaf", "drop_pass", "flip_payload_byte", "flip_program_byte",
           "flip_requires_grad", "ledger_machinery_only", "program_errors_alike_if_both_failed", "raise_in",
           "reference_delegate_count_ignored", "reference_first_set_only", "rename_node",
           "retrace_describes_every_input_as_plain", "retrace_ignores_the_table", "retrace_keeps_names",
           "retrace_keeps_the_arguments_as_written", "retrace_keeps_the_tensor_meta",
           "retrace_takes_any_value_as_handed_back", "retrace_gives_a_nothing_op_a_value",
           "retrace_probes_around_the_lone_trace", "retrace_records_mutation",
           "retrace_records_view_ops_unchanged", "retrace_skips_dispatch_annotations",
           "stale_val", "torch", "verifyonce_key_without_kwargs"]


# ------------------------------------------------------------------------------------------------
# Faults planted in fastpass itself: each is one realistic slip in one rule of fastpass's
# copy/cache machinery, installed for a `with` block (the very same object put back after).
# tests/test_fastpass_multioutput.py runs the rule's test with each planted and requires it to
# fail, so the suite itself shows that every such test kills its fault.


@contextlib.contextmanager
def _replaced(owner, name: str, value):
    original = owner.__dict__[name]
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


def copy_multi_output_as_single():
    """copy: a copied node whose `val` is a tuple or list (split_with_sizes, var_mean, topk,
    max_pool2d_with_indices, native_layer_norm ...) takes the single-FakeTensor shortcut (`val`
    kept, `tensor_meta` None) instead of `set_metadata`'s per-output `tensor_meta`; as if
    `_copyable_val` ended in `return True if _val_copyable(val, mode) else None`."""
    from fastpass import _copy

    real = _copy._copyable_val

    def copyable_val(val, mode):
        single = real(val, mode)
        return True if single is False else single

    return _replaced(_copy, "_copyable_val", copyable_val)


def ciatable_unchanged_by_count():
    """ciatable: "the dispatcher lists the same CIA registrations as last time" judged by how many
    names there are, so one registration swapped for another looks unchanged; as if
    `_Materialized.unchanged` read `len(names) == len(self.names or ()) and ...`."""
    from fastpass import _ciatable

    def unchanged(self, names):
        return self.names is not None and len(names) == len(self.names) and self.still_materialized()

    return _replaced(_ciatable._Materialized, "unchanged", unchanged)


def verifyonce_key_without_kwargs():
    """verifyonce: the graph-state key leaves out every node's kwargs (a dict argument keys as
    empty), so a rewired keyword argument looks like the state already checked; as if
    `graph_state` appended `(node.op, target, _arg_key(node.args, position), (), val)`."""
    from fastpass import _verifyonce

    real = _verifyonce._arg_key

    def arg_key(arg, position):
        return ("d", ()) if isinstance(arg, dict) else real(arg, position)

    return _replaced(_verifyonce, "_arg_key", arg_key)


def retrace_ignores_the_table():
    """retrace: "the trace records this op unchanged" decided without the decomposition table,
    so a program whose op the table decomposes is written back undecomposed; as if
    `_op_is_recorded_unchanged` read only `isinstance(target, torch._ops.OpOverload)`."""
    from fastpass import _retrace

    return _replaced(_retrace, "_op_is_recorded_unchanged",
                     lambda target, cia_to_decomp, python_decomp_table: isinstance(target, torch._ops.OpOverload))


def retrace_keeps_names():
    """retrace: the names the trace would give taken to be the names the program has, so a node
    a pass renamed keeps its name where the re-trace names it again by its op; as if
    `_traced_names` returned `[n.name for n in ep.graph.nodes if n.op != "output"]`."""
    from fastpass import _retrace

    return _replaced(_retrace, "_traced_names", lambda ep, decompositions=None: [
        n.name for n in ep.graph.nodes if n.op in ("placeholder", "call_function")])


def retrace_skips_dispatch_annotations():
    """retrace: a node a pass moved to another op (EDGE_DO_NOT_DECOMP.linear) written without
    what dispatching its op writes into its `custom` meta (a dynamo-disabled function's
    annotation); as if `_dispatch_annotations` returned `{}`."""
    from fastpass import _retrace

    return _replaced(_retrace, "_dispatch_annotations", lambda nodes, cia_to_decomp: {})


def retrace_probes_around_the_lone_trace():
    """retrace: the probe for what a decomposed op's dispatch writes into `custom` made the
    current meta before the lone trace of the op starts instead of inside it, so it also holds
    make_fx's own dispatch_trace annotation (the slip this feature's first version made, found
    by comparing with stock); planted as that annotation added to every probe."""
    from fastpass import _retrace

    real = _retrace._decompositions

    def decompositions(nodes, cia_to_decomp, python_decomp_table):
        found = real(nodes, cia_to_decomp, python_decomp_table)
        for _, probe in found.values():
            probe.update({"_torchdynamo_disable": True, "_torchdynamo_disable_recursive": True,
                          "_torchdynamo_disable_method": "dispatch_trace"})
        return found

    return _replaced(_retrace, "_decompositions", decompositions)


def retrace_records_view_ops_unchanged():
    """retrace: a CIA op that is in neither table (the view-like reshape and flatten export cannot
    preserve, which the trace decomposes by their own kernels) taken to be recorded as it is; as
    if `_op_is_recorded_unchanged` ended in `return True` for an op with a CIA kernel."""
    from fastpass import _retrace

    real = _retrace._op_is_recorded_unchanged

    def recorded_unchanged(target, cia_to_decomp, python_decomp_table):
        if real(target, cia_to_decomp, python_decomp_table):
            return True
        return isinstance(target, torch._ops.OpOverload) and target not in cia_to_decomp \
            and target not in python_decomp_table

    return _replaced(_retrace, "_op_is_recorded_unchanged", recorded_unchanged)


def retrace_describes_every_input_as_plain():
    """retrace: every placeholder described as a user input (`PlainAOTInput(i)`), the
    parameters and buffers too; as if `_input_descs` returned `[PlainAOTInput(i) for i in
    range(len(specs))]`."""
    from torch._functorch._aot_autograd.descriptors import PlainAOTInput

    from fastpass import _retrace

    return _replaced(_retrace, "_input_descs", lambda ep, mod: [
        PlainAOTInput(i) for i in range(len(ep.graph_signature.input_specs))])


def retrace_keeps_the_tensor_meta():
    """retrace: a node recorded unchanged keeps its own `tensor_meta` (right for ATen IR, whose
    was extracted by the earlier trace; a training-IR node's was extracted with grad enabled);
    as if `_traced_tensor_meta` returned `node.meta["tensor_meta"]`."""
    from fastpass import _retrace

    return _replaced(_retrace, "_traced_tensor_meta", lambda node: node.meta["tensor_meta"])


def retrace_records_mutation():
    """retrace: an op that writes an input (training IR's `relu_`) taken to be recorded as it is,
    where the trace functionalizes it; as if `_functional` returned True."""
    from fastpass import _retrace

    return _replaced(_retrace, "_functional", lambda target: True)


def retrace_keeps_the_arguments_as_written():
    """retrace: a node's arguments written as the node holds them, so a positional argument a
    pass wrote by keyword stays a keyword where the trace records it positionally; as if
    `_as_the_trace_records` returned them unchanged."""
    from fastpass import _retrace

    return _replaced(_retrace, "_as_the_trace_records", lambda target, args, kwargs: (tuple(args), dict(kwargs)))


def retrace_takes_any_value_as_handed_back():
    """retrace: every value taken to come back from the dispatcher as it was given, an int given
    for a float too (handed back as a float); as if `_conforms` returned True."""
    from fastpass import _retrace

    return _replaced(_retrace, "_conforms", lambda value, schema_type: True)


def retrace_gives_a_nothing_op_a_value():
    """retrace: an op that returns nothing written with ``val`` None and a ``tensor_meta``, where
    the trace writes neither; as if `_copied_meta` always wrote them."""
    from fastpass import _retrace

    real = _retrace._copied_meta

    def copied_meta(module_node, node, target, val, tensor_meta, new_args):
        meta = real(module_node, node, target, val, tensor_meta, new_args)
        meta.setdefault("val", None)
        meta.setdefault("tensor_meta", None)
        return meta

    return _replaced(_retrace, "_copied_meta", copied_meta)


def emit_ignores_the_context():
    """emit: a dispatched node created by the shortcut whatever meta its pass handed `_fx`, so what
    the node's meta context writes and that meta does not overwrite is lost; as if
    `_is_the_context` read `return "from_node" in meta`."""
    from fastpass import _dispatched

    return _replaced(_dispatched, "_is_the_context", lambda meta: "from_node" in meta)


def emit_takes_any_argument_as_a_leaf():
    """emit: an argument of a type the walk does not know (a real tensor) kept as it is instead of
    going the stock way (`create_arg` makes it a `get_attr` node); as if `_LEAF_TYPES` held every
    type."""
    from fastpass import _dispatched

    class _Every(frozenset):
        def __contains__(self, item):
            return True

    return _replaced(_dispatched, "_LEAF_TYPES", _Every())


def emit_ignores_a_pass_s_own_tracer():
    """emit: a pass's own tracer (a subclass of `ExportTracer` converting arguments its own way)
    bypassed like the stock one; as if `_stock_tracer` read `isinstance(tracer, ExportTracer)`."""
    from executorch.exir.pass_base import ExportPass
    from fastpass import _dispatched

    return _replaced(_dispatched, "_stock_tracer",
                     lambda tracer, base: isinstance(tracer, ExportPass.ExportTracer))


def emit_sets_metadata_before_the_update():
    """emit: the node's dispatched value set before the meta update that copies the interpreted
    node's meta, so the update puts the old `val` back (a slip of line order in
    `_fx_emitting`); planted as the old `val` restored on every node emit creates."""
    from fastpass import _dispatched

    real = _dispatched._fx_emitting

    def fx_emitting(self, base, target, args, kwargs, meta, *rest):
        res = real(self, base, target, args, kwargs, meta, *rest)
        if res is not None and "val" in meta.data:
            res.node.meta["val"] = meta.data["val"]
        return res

    return _replaced(_dispatched, "_fx_emitting", fx_emitting)


FASTPASS_FAULTS = {"copy_multi_output_as_single": copy_multi_output_as_single,
                   "emit_ignores_the_context": emit_ignores_the_context,
                   "emit_takes_any_argument_as_a_leaf": emit_takes_any_argument_as_a_leaf,
                   "emit_ignores_a_pass_s_own_tracer": emit_ignores_a_pass_s_own_tracer,
                   "emit_sets_metadata_before_the_update": emit_sets_metadata_before_the_update,
                   "ciatable_unchanged_by_count": ciatable_unchanged_by_count,
                   "verifyonce_key_without_kwargs": verifyonce_key_without_kwargs,
                   "retrace_ignores_the_table": retrace_ignores_the_table,
                   "retrace_keeps_names": retrace_keeps_names,
                   "retrace_skips_dispatch_annotations": retrace_skips_dispatch_annotations,
                   "retrace_probes_around_the_lone_trace": retrace_probes_around_the_lone_trace,
                   "retrace_records_view_ops_unchanged": retrace_records_view_ops_unchanged,
                   "retrace_describes_every_input_as_plain": retrace_describes_every_input_as_plain,
                   "retrace_keeps_the_tensor_meta": retrace_keeps_the_tensor_meta,
                   "retrace_records_mutation": retrace_records_mutation,
                   "retrace_keeps_the_arguments_as_written": retrace_keeps_the_arguments_as_written,
                   "retrace_takes_any_value_as_handed_back": retrace_takes_any_value_as_handed_back,
                   "retrace_gives_a_nothing_op_a_value": retrace_gives_a_nothing_op_a_value}


# ------------------------------------------------------------------------------------------------
# Faults planted in the harness's own verdict rules: each is one realistic slip that passed every
# test until tests/test_verdict_rules.py (issue 44's hand sample), installed for a `with` block
# (the very same objects put back after). `test_each_rule_test_kills_its_fault` there plants each
# one and requires its check to fail.


@contextlib.contextmanager
def _check_replaced(name: str, check):
    """`verify.compare.CHECKS[name]` (what `compare` runs) and the module's function replaced."""
    from verify.compare import checks

    attribute = f"check_{name}"
    original, listed = checks.__dict__[attribute], checks.CHECKS[name]
    setattr(checks, attribute, check)
    checks.CHECKS[name] = check
    try:
        yield
    finally:
        setattr(checks, attribute, original)
        checks.CHECKS[name] = listed


def reference_first_set_only():
    """reference: only the first reference input set of each delegate is compared (as if the
    loop read `zip(ra.outputs[:1], rb.outputs[:1])`): a difference on the second set passes."""
    import dataclasses

    from verify.compare import checks

    real = checks.check_reference

    def first_only(result):
        return dataclasses.replace(result, reference=[dataclasses.replace(run, outputs=run.outputs[:1])
                                                      for run in result.reference])

    return _check_replaced("reference", lambda a, b: real(first_only(a), first_only(b)))


def reference_delegate_count_ignored():
    """reference: a different number of delegates with reference runs is not a difference (as if
    the `len(a.reference) != len(b.reference)` test were gone): the runs both have are zipped."""
    import dataclasses

    from verify.compare import checks

    real = checks.check_reference

    def check(a, b):
        n = min(len(a.reference), len(b.reference))
        return real(dataclasses.replace(a, reference=a.reference[:n]), dataclasses.replace(b, reference=b.reference[:n]))

    return _check_replaced("reference", check)


def program_errors_alike_if_both_failed():
    """program: two lowerings whose `to_executorch()` both failed count as "not serialized in
    either mode, the same way" whatever the errors (as if the rule read
    `(a.program_error is None) != (b.program_error is None)`)."""
    import dataclasses

    from verify.compare import checks

    real = checks.check_program

    def check(a, b):
        if a.program_error is not None and b.program_error is not None:
            b = dataclasses.replace(b, program_error=a.program_error)
        return real(a, b)

    return _check_replaced("program", check)


def ledger_machinery_only():
    """ledger: a proof holds if only the machinery digest matches: a proof made for another
    executorch or torch version reads as current (as if `Ledger.status` compared
    `self.proven_against.machinery != now.machinery`)."""
    import dataclasses

    from fastpass.annotations import _proofs

    real = _proofs.Ledger.status

    def status(self, name, annotation, now=None):
        if self.proven_against is not None:
            now = dataclasses.replace(now or _proofs.ProvenAgainst.now(), executorch=self.proven_against.executorch,
                                      torch=self.proven_against.torch)
        return real(self, name, annotation, now)

    return _replaced(_proofs.Ledger, "status", status)


HARNESS_FAULTS = {"reference_first_set_only": reference_first_set_only,
                  "reference_delegate_count_ignored": reference_delegate_count_ignored,
                  "program_errors_alike_if_both_failed": program_errors_alike_if_both_failed,
                  "ledger_machinery_only": ledger_machinery_only}
