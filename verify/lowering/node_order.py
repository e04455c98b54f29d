"""The iteration order of sets of fx Nodes, made a controlled variable.

Why: an `fx.Node` hashes by identity, i.e. by its memory address, so iterating a `set` of nodes
visits them in an order that depends on where the allocator put them. A pass that creates nodes
while iterating such a set names them (and records their provenance) in that order, and its
output then varies from one process, or one call, to the next with no change in its input.
executorch 1.5.1 has one: ConvertInt64OutputOpsToInt32Pass iterates `safe_consumers: Set[Node]`
and inserts a cast per int64 constant, so `meta['from_node']` names `..._2` or `..._3` by turns
(measured: stock against stock, 1 call in 8 differed). Fastpass allocates differently from
stock, so such a pass looks like a fastpass divergence, intermittently.

`ordered_node_hashes(order)` replaces `Node.__hash__` for one block with an index given to each
node when it is first hashed (nodes are hashed from their construction on: `Node.__init__`
registers the node as a user of its inputs), in ascending or descending order. The program is
deterministic up to the first set iteration that matters, so the indices are the same in two
calls of the same lowering, and the two orders iterate a set in opposite orders: a set's slot
for hash h is `h & mask`, and `~i & mask == mask - (i & mask)` (exact wherever no two of its
nodes share a slot; a negated index would not do: `-i & mask` is 0 when `i & mask` is). Two
stock lowerings of the same input, one under each order, that differ prove that stock depends
on node-set iteration order; if one of them gives exactly the fastpass result, the difference
is stock's own (verify.compare.comparison, the one comparison: used by crosscheck, run's recheck, the
gate and fuzz before they call a difference a fastpass divergence). Equality stays identity:
only the order of sets (and the layout of dicts, never their order) changes.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from enum import Enum
from typing import Callable, Iterator, TypeVar

T = TypeVar("T")

_INDEX = "_verify_first_hash_index"  # in the node's __dict__: nothing compares or prints it


class NodeOrder(str, Enum):
    """Which hash `fx.Node` gets (its `.value` is what reports carry)."""

    ASCENDING = "ascending"  # the index of the node's first hash
    DESCENDING = "descending"  # its complement, -1 - index: small sets iterate the other way round

    def __str__(self) -> str:
        return self.value


def _index_hash(order: NodeOrder, indices: Iterator[int]):
    descending = order is NodeOrder.DESCENDING
    block = object()  # an index given in an earlier block (a node that outlived it) is not reused

    def node_hash(node) -> int:  # noqa: ANN001
        state = node.__dict__
        given = state.get(_INDEX)
        if given is None or given[0] is not block:
            given = state[_INDEX] = (block, next(indices))
        return ~given[1] if descending else given[1]

    return node_hash


@functools.lru_cache(maxsize=None)
def _patches():
    """The one Patches state, made on first use (importing this module imports no fastpass/torch:
    the pytest plugin and the runner import it)."""
    from fastpass.patching import Patches

    return Patches("verify.lowering.node_order", "leave the enclosing ordered_node_hashes block")


@contextlib.contextmanager
def ordered_node_hashes(order: NodeOrder):
    """Within the block, every `fx.Node` hashes by its first-hash index in `order`.

    A node that existed before the block sits in dicts and sets under its address hash, which
    lookups inside the block would no longer find: enter the block before the program is copied,
    so that every node the lowering touches is made, and first hashed, inside it."""
    from torch.fx import Node

    from fastpass.patching import PatchPoint

    patches = _patches()
    indices = itertools.count(1)  # ~i <= -2: never the -1 CPython reserves
    patches.install([PatchPoint(Node, "__hash__", (), wrap=lambda _address_hash: _index_hash(order, indices),
                                why="node sets iterate in first-hash order (or its reverse), not address order",
                                inherited=True)])
    try:
        yield
    finally:
        patches.restore()


def under_each_order(run: Callable[[], T]) -> tuple[T, ...]:
    """`run()` once under each NodeOrder (ascending, then descending): what a recheck compares.
    `run` must make its own copy of the program inside (see ordered_node_hashes)."""
    results = []
    for order in NodeOrder:
        with ordered_node_hashes(order):
            results.append(run())
    return tuple(results)
