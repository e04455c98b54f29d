"""Test passes for the annotation gate (tests/test_gate.py): deliberately wrong ones the gate
must reject, and sound ones it must accept. Each declares `targeted_ops` (and optionally
`skip_sound`/`copy_sound`), which `verify gate` turns into a fastpass annotation."""

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportPass, PassResult

RELU = exir_ops.edge.aten.relu.default
NEG = exir_ops.edge.aten.neg.default
ADD = exir_ops.edge.aten.add.Tensor
SIGMOID = exir_ops.edge.aten.sigmoid.default
CLONE = exir_ops.edge.aten.clone.default
TO_COPY = exir_ops.edge.aten._to_copy.default


class UndeclaredRewritePass(ExportPass):
    """(a) unsound-copy: declares relu but also rewrites neg (neg(x) -> neg(neg(neg(x))))."""

    targeted_ops = (RELU,)
    skip_sound = False  # the gate must blame copy, so only copy is claimed
    copy_sound = True

    def call_operator(self, op, args, kwargs, meta):
        if op == RELU:
            return super().call_operator(exir_ops.edge.aten.clamp.default, (args[0], 0.0), {}, meta)
        if op == NEG:
            x = super().call_operator(NEG, args, kwargs, meta)
            x = super().call_operator(NEG, (x,), {}, meta)
            return super().call_operator(NEG, (x,), {}, meta)
        return super().call_operator(op, args, kwargs, meta)


class ActsWithoutTargetsPass(ExportPass):
    """(b) unsound-skip: declares relu, but when no relu is present it inserts a clone after the
    first graph input (in call(), before the retrace, so copy is fine)."""

    targeted_ops = (RELU,)

    def call_operator(self, op, args, kwargs, meta):
        if op == RELU:
            return super().call_operator(exir_ops.edge.aten.clamp.default, (args[0], 0.0), {}, meta)
        return super().call_operator(op, args, kwargs, meta)

    def call(self, graph_module):
        graph = graph_module.graph
        if not graph.find_nodes(op="call_function", target=RELU):
            first = next(n for n in graph.nodes if n.op == "placeholder" and "val" in n.meta)
            users = list(first.users)
            if users:
                with graph.inserting_after(first):
                    clone = graph.call_function(CLONE, (first,))
                clone.meta["val"] = first.meta["val"].clone()
                for user in users:
                    user.replace_input_with(first, clone)
                graph_module.recompile()
        return super().call(graph_module)


class CountingStatePass(ExportPass):
    """(c) unsound-copy: counts every node its call_operator sees and rewrites relu differently
    once it has seen more than two nodes; with copy on, cold nodes never reach call_operator."""

    targeted_ops = (RELU,)

    def call(self, graph_module):
        self.seen = 0
        return super().call(graph_module)

    def call_operator(self, op, args, kwargs, meta):
        self.seen += 1
        if op == RELU:
            if self.seen > 2:
                return super().call_operator(exir_ops.edge.aten.hardtanh.default, (args[0], 0.0, 6.0), {}, meta)
            return super().call_operator(exir_ops.edge.aten.clamp.default, (args[0], 0.0), {}, meta)
        return super().call_operator(op, args, kwargs, meta)


class ChangeDtypePass(ExportPass):
    """(d) sound: relu(x) -> relu(x).to(float64); downstream nodes see a float64 input, so with
    copy on they must be re-dispatched (fastpass's input-metadata rule), not copied."""

    targeted_ops = (RELU,)

    def call_operator(self, op, args, kwargs, meta):
        if op == RELU:
            out = super().call_operator(op, args, kwargs, meta)
            return super().call_operator(TO_COPY, (out,), {"dtype": torch.float64}, meta)
        return super().call_operator(op, args, kwargs, meta)


class InsertBeforeRetracePass(ExportPass):
    """(e) sound: overrides call(), inserting a clone in front of every sigmoid before delegating
    to super().call() (which retraces); call_operator rewrites sigmoid only."""

    targeted_ops = (SIGMOID,)

    def call(self, graph_module):
        graph = graph_module.graph
        for node in list(graph.find_nodes(op="call_function", target=SIGMOID)):
            src = node.args[0]
            with graph.inserting_before(node):
                clone = graph.call_function(CLONE, (src,))
            clone.meta["val"] = src.meta["val"].clone()
            node.replace_input_with(src, clone)
        graph_module.recompile()
        return super().call(graph_module)

    def call_operator(self, op, args, kwargs, meta):
        if op == SIGMOID:
            x = super().call_operator(op, args, kwargs, meta)
            return super().call_operator(exir_ops.edge.aten.mul.Tensor, (x, x), {}, meta)
        return super().call_operator(op, args, kwargs, meta)


class NoRetracePass(ExportPass):
    """(f) unexercised under copy: claims copy-sound, but edits the graph in place and never
    retraces, so fastpass never copies a node in it: nothing proves the copy claim."""

    targeted_ops = (RELU,)
    skip_sound = False
    copy_sound = True

    def call(self, graph_module):
        for node in graph_module.graph.find_nodes(op="call_function", target=RELU):
            node.target = exir_ops.edge.aten.clamp.default
            node.args = (node.args[0], 0.0)
        graph_module.recompile()
        return PassResult(graph_module, False)


class TagsInNodeSetOrderPass(ExportPass):
    """(g) stock nondeterminism, not a fastpass fault: after its retrace it tags the relu-derived
    clamps in the iteration order of a *set* of nodes (address order, as executorch's
    ConvertInt64OutputOpsToInt32Pass iterates `safe_consumers`). The address order is simulated
    so that the test is deterministic: graph order stock, the reverse with fastpass on; under
    verify.lowering.node_order, the set's own order. `fastpass_offset` makes fastpass's tags ones
    no order gives (a fault hiding behind stock's nondeterminism)."""

    targeted_ops = (RELU,)
    skip_sound = False
    copy_sound = True
    fastpass_offset = 0

    def call_operator(self, op, args, kwargs, meta):
        if op == RELU:
            return super().call_operator(exir_ops.edge.aten.clamp.default, (args[0], 0.0), {}, meta)
        return super().call_operator(op, args, kwargs, meta)

    def call(self, graph_module):
        import fastpass
        from torch.fx import Node

        result = super().call(graph_module)
        nodes = [n for n in result.graph_module.graph.nodes if n.op == "call_function"]
        if Node.__hash__ is not object.__hash__:
            ordered = list(set(nodes))
        else:
            ordered = list(reversed(nodes)) if fastpass.is_enabled() else nodes
        for index, node in enumerate(ordered):
            node.meta["visit_index"] = index + (self.fastpass_offset if fastpass.is_enabled() else 0)
        return result


class TagsInNodeSetOrderWithFaultPass(TagsInNodeSetOrderPass):
    """(h) unsound-copy: as (g), plus tags that stock writes under no node order."""

    fastpass_offset = 100


EXP = exir_ops.edge.aten.exp.default


class RewritesWhatTargetsFeedPass(ExportPass):
    """(i) unsound-copy, aimed search: declares relu and rewrites neg, but only a neg fed by a relu
    (neg(relu(x)) -> neg(neg(neg(relu(x))))), the neighbour of what it targets. With copy on, the
    relu is re-dispatched, its output is metadata-identical, so the neg after it is copied and
    never reaches call_operator. A neg fed by anything else is left alone, so only a graph in
    which a targeted node feeds the suspect shows the fault."""

    targeted_ops = (RELU,)
    skip_sound = False  # the gate must blame copy
    copy_sound = True

    def call_operator(self, op, args, kwargs, meta):
        if op == NEG and getattr(getattr(args[0], "node", None), "target", None) == RELU:
            x = super().call_operator(NEG, args, kwargs, meta)
            x = super().call_operator(NEG, (x,), {}, meta)
            return super().call_operator(NEG, (x,), {}, meta)
        return super().call_operator(op, args, kwargs, meta)


class RewritesUndeclaredOpPass(ExportPass):
    """(j) unsound-skip, aimed search: declares relu, but its code also rewrites exp
    (exp(x) -> neg(neg(exp(x)))), an op named in the code and absent from targeted_ops. On a graph
    with an exp and no relu fastpass skips the pass, and the exp stays as it was. Only exp
    presents aten.exp, one vocabulary op in a hundred: skip graphs drawn from the whole
    vocabulary minus relu hold it in a few per cent of examples."""

    targeted_ops = (RELU,)
    skip_sound = True
    copy_sound = False  # the gate must blame skip

    def call_operator(self, op, args, kwargs, meta):
        if op == RELU:
            return super().call_operator(exir_ops.edge.aten.clamp.default, (args[0], 0.0), {}, meta)
        if op == EXP:
            x = super().call_operator(EXP, args, kwargs, meta)
            x = super().call_operator(NEG, (x,), {}, meta)
            return super().call_operator(NEG, (x,), {}, meta)
        return super().call_operator(op, args, kwargs, meta)

