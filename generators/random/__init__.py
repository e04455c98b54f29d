"""Random, valid-by-construction, shrinkable graphs for differential testing of ARM lowering.

Public surface::

    GraphSpec, OpRecord             # frozen JSON-able DAG description; .build(), .to_python()
    graphs(min_ops, max_ops, ops, max_inputs)   # Hypothesis strategy -> GraphSpec
    graphs_toward(routes, max_ops, ops)  # the same, most of them holding some of `routes` (reach.py)
    graphs_linked(first, then, link, ops, max_ops)  # a `then` node fed by (Link.FEEDS) or beside a `first` one
    graphs_chained(first, middle, then, hops, ops, max_ops)  # a `then` node `hops` producers after a `first` one
        # both with ranks=True: the first node's operand of a drawn rank (1..5), see properties.py
    spread(n)                       # an index in 0..n-1, near-uniform, shrinking to 0
    properties                      # the ranks and dtypes an op's operands can be presented on
    route_share(routes, shard, shards)  # the routes one shard of a campaign aims at
    models(min_ops, max_ops, ops, max_inputs)   # Hypothesis strategy -> (module, inputs)
    ops_in_vocabulary()             # {op name: (expected aten ops, ...)}
    FLOAT_ONLY                      # the op names drawn on float targets only (quarantined from quantized ones)
    check_buildable(spec, ...)      # export/quantize/lower, raising GeneratorBug
    GeneratorBug
"""

# First: the vocabulary is _ops's REGISTRY completed by _ops_reach (which imports _ops and
# registers the ops that reach the remaining annotated passes), so every module of the package,
# imported after this line, sees the whole vocabulary; _ops itself imports no sibling.
from . import _ops_reach  # noqa: F401  (isort: skip)
from ._check import check_buildable
from ._ops import FLOAT_ONLY
from ._spec import GraphSpec, OpRecord
from ._strategy import (GeneratorBug, Link, graphs, graphs_chained, graphs_linked, graphs_toward, interpret,
                        models, one_of_weighed, ops_in_vocabulary, route_share, spread)

__all__ = [
    "FLOAT_ONLY",
    "GeneratorBug",
    "GraphSpec",
    "Link",
    "OpRecord",
    "check_buildable",
    "graphs",
    "graphs_chained",
    "graphs_linked",
    "graphs_toward",
    "interpret",
    "models",
    "one_of_weighed",
    "ops_in_vocabulary",
    "route_share",
    "spread",
]
