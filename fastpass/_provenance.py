"""Share ``from_node`` provenance chains instead of deep-copying them.

Why: ``torch.fx.traceback.set_current_meta`` (entered by ``Interpreter.run_node``
for *every* node of *every* retracing pass) builds ``NodeSource(node, ...)``,
whose ``__init__`` does ``copy.deepcopy(node.meta["from_node"])``.  The chain
grows by one level per pass that creates nodes, so late in the ARM pipeline
each node pays for a deep copy of a long tree, most of which is thrown away
(``ExportPass._fx`` overwrites the new node's ``from_node`` with the old one).

NodeSource objects are never mutated after construction anywhere in
torch/executorch (checked: the only in-place edits in torch append to a node's
*own* ``meta["from_node"]`` *list*, e.g. GraphTransformObserver, never to a
NodeSource's ``from_node``/``action``).  So a fresh outer list that *shares*
the NodeSource elements is observationally identical: ``to_dict()`` yields the
same structure (graph ids are plain ints captured at creation time).

The replacement below is a line-for-line copy of torch 2.13.0's
``NodeSource.__init__`` except the deepcopy -> ``list(...)``.
"""

from __future__ import annotations

import copy

from torch.fx.traceback import NodeSource, NodeSourceAction


def shared_nodesource_init(self, node, pass_name="", action=None) -> None:  # noqa: ANN001
    self.pass_name = pass_name

    if action is None:
        action = []
    elif not isinstance(action, list):
        action = [action]
    for a in action:
        if not isinstance(a, NodeSourceAction):
            raise AssertionError(f"Expected NodeSourceAction, got {type(a)}")
    self.action = action
    if node:
        self.node_info = NodeSource.NodeInfo(
            name=node.name, target=str(node.target), graph_id=id(node.graph)
        )
        if "from_node" in node.meta:
            src = node.meta["from_node"]
            # Shallow: a new list owned by this NodeSource, elements shared.
            # Anything that is not a plain list keeps the stock deep copy.
            self.from_node = list(src) if type(src) is list else copy.deepcopy(src)
        else:
            self.from_node = []
    else:
        self.node_info = None
        self.from_node = []

    self._action_string = None
    self._dict = None
