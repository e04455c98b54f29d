"""Hypothesis strategies producing GraphSpecs that are valid by construction.

A graph is drawn as a list of independent *genes* ``(op_name, sel, par)`` (two integers);
genes are then *interpreted* in order against the growing pool of values:
selectors pick inputs (index modulo the number of compatible values, most recent first) and
raw params pick options (index modulo the number of options, simplest first).  Since every
gene is valid against every pool, Hypothesis can delete any gene or shrink any integer
toward 0 and still get a valid graph: shrinking ends in few ops with simple params, and
nothing is ever filtered (no ``assume``).
"""

from __future__ import annotations

from enum import Enum

from hypothesis import strategies as st

from . import _ops
from ._spec import GraphSpec, OpRecord

# Raw gene integers.  A uniformly random integer below 2**32 decodes (mixed radix) to roughly
# uniform choices for every op's params; Hypothesis shrinks each toward 0 = simplest choices.
_SEL = st.integers(0, 2**16 - 1)
_PAR = st.integers(0, 2**32 - 1)


class GeneratorBug(Exception):
    """A drawn GraphSpec failed to build/export/quantize/lower: a bug in the generator."""

    def __init__(self, message, spec=None):
        self.spec = spec
        if spec is not None:
            message = f"{message}\n{spec.describe()}\nreplay: GraphSpec.from_json({spec.to_json()!r})"
        super().__init__(message)


def ops_in_vocabulary(float_target: bool = False) -> dict:
    """Map op name -> ``VocabEntry(aten, core_aten)`` (best effort, names ``aten.<op>.<overload>``).

    ``aten``: ops expected in ``torch.export.export`` output (hand-written hints plus ops measured
    on single-op graphs); ``core_aten``: the same graphs after ``run_decompositions()``.  Edge
    dialect ops carry the same names (``exir_ops.edge.aten.<op>.<overload>``).
    ``float_target``: with the ops quarantined from quantized targets only (``_ops.FLOAT_ONLY``).
    """
    return _ops.vocabulary(float_target)


@st.composite
def _input_shapes(draw, max_inputs=2):
    """x0 = [1, C, H, W] (C<=8, even H<=12, 2<=W<=12); optionally x1, broadcastable or unrelated.

    Plain integer draws only (no flatmap/one_of): keeps Hypothesis's invalid-draw rate low and
    shrinks to ``x0 = [1, 1, 2, 2]`` with no x1.
    """
    c = draw(st.integers(1, 8))
    h = 2 * draw(st.integers(1, 6))
    w = draw(st.integers(2, 12))
    x0 = (1, c, h, w)
    # Fixed draw structure (everything drawn, used or not) keeps mutation/replay from overrunning.
    form = draw(st.integers(0, 5))
    a, b, d = draw(st.integers(1, 8)), draw(st.integers(1, 8)), draw(st.integers(1, 4))
    if form == 0 or max_inputs == 1:
        return (x0,)
    if form == 1:
        return (x0, x0)
    if form == 2:
        return (x0, (1, c, 1, 1))
    if form == 3:
        return (x0, (w,))
    if form == 4:
        return (x0, (a, b))
    return (x0, (d, a, b))


class _Builder:
    """The pool of values a graph grows gene by gene (what `interpret` does in one go), open so
    that a strategy can ask which values a gene's selector can pick before choosing it
    (`graphs_linked`: a node fed by a given node, or beside it)."""

    def __init__(self, input_shapes) -> None:
        self.pool = [tuple(s) for s in input_shapes]
        self.tainted = [False] * len(self.pool)  # see _ops.TAINT_SOURCES: works around a stock ARM crash
        self.n_in = len(self.pool)
        self.consumed: set[int] = set()
        self.records: list[OpRecord] = []

    def candidates(self, name) -> list[int]:
        """The value ids op `name`'s selector chooses among (``sel % len``), most recent first."""
        d = _ops.REGISTRY[name]
        avoid_direct = _ops.AVOID_DIRECT_PRODUCERS.get(name, ())
        return [i for i in reversed(range(len(self.pool)))
                if d.accepts(self.pool[i]) and not (self.tainted[i] and d.avoids_table_taint)
                and not (i >= self.n_in and self.records[i - self.n_in].op in avoid_direct)]

    def add(self, name, sel, par) -> int:
        """Interpret one gene; returns the value id of its output."""
        d = _ops.REGISTRY[name]
        cands = self.candidates(name)
        if not cands:  # unreachable if every op accepts x0 (tested); keep a loud failure
            raise GeneratorBug(f"op {name!r} accepts no value in pool {self.pool}")
        primary = cands[sel % len(cands)]
        excluded = (frozenset(i for i, t in enumerate(self.tainted) if t) if d.avoids_table_taint
                    else frozenset())
        ctx = _ops._Ctx(self.pool, primary, sel // len(cands), par, excluded)
        params, partners, out = d.instantiate(ctx)
        out = tuple(out)
        if not _ops._fits(out):
            raise GeneratorBug(f"op {name!r} on {self.pool[primary]} produced out-of-bounds shape {out} ({params})")
        inputs = [primary] + list(partners)
        self.consumed.update(inputs)
        self.records.append(OpRecord.make(name, inputs, params, out))
        self.pool.append(out)
        self.tainted.append(name in _ops.TAINT_SOURCES
                            or (name not in _ops.TAINT_CLEARERS and any(self.tainted[i] for i in inputs)))
        return len(self.pool) - 1

    def reshaped(self, rank: int) -> int | None:
        """A value of `rank` (x0 reshaped, `properties.ranked_shape`), or None for rank 0 (as drawn)."""
        if not rank:
            return None
        from .properties import ranked_shape

        shape = ranked_shape(self.pool[0], rank)
        if shape == self.pool[0]:
            return 0
        self.records.append(OpRecord.make("reshape", [0], {"shape": list(shape), "infer": False}, shape))
        self.consumed.add(0)
        self.pool.append(shape)
        self.tainted.append(False)
        return len(self.pool) - 1

    def add_on(self, name, sel, par, vid: int | None) -> int:
        """`add`, the node's primary input `vid` when its op can take it (else as `sel` picks)."""
        cands = self.candidates(name)
        if vid is not None and vid in cands:
            sel = cands.index(vid) + len(cands) * sel
        return self.add(name, sel, par)

    def downstream_of(self, vid: int) -> set[int]:
        """`vid` and every value computed from it so far."""
        out = {vid}
        for k, rec in enumerate(self.records):
            if set(rec.inputs) & out:
                out.add(self.n_in + k)
        return out

    def spec(self, seed=0) -> GraphSpec:
        outputs = tuple(i for i in range(self.n_in, len(self.pool)) if i not in self.consumed)
        spec = GraphSpec(tuple(self.pool[:self.n_in]), tuple(self.records), outputs, seed)
        spec.validate()
        return spec


def interpret(input_shapes, genes, seed=0) -> GraphSpec:
    """Turn genes ``[(op_name, sel, par), ...]`` (sel, par: ints >= 0) into a GraphSpec.

    Deterministic; valid for any genes over vocabulary ops (``sel`` picks inputs among
    compatible values, most recent first; ``par`` picks params, simplest first).
    """
    builder = _Builder(input_shapes)
    for name, sel, par in genes:
        builder.add(name, sel, par)
    return builder.spec(seed)


def _check_ops(ops):
    if ops is None:
        return [o for o in _ops.REGISTRY if o not in _ops.QUARANTINED]
    ops = list(ops)
    unknown = [o for o in ops if o not in _ops.REGISTRY]
    if unknown:
        raise ValueError(f"unknown ops {unknown}; see ops_in_vocabulary()")
    if not ops:
        raise ValueError("ops must be non-empty")
    # keep vocabulary order so shrinking always heads to the same (simplest) op first
    return [o for o in _ops.REGISTRY if o in ops]


def graphs(min_ops: int = 1, max_ops: int = 40, ops=None, max_inputs: int = 2):
    """Strategy for GraphSpecs with ``min_ops..max_ops`` ops drawn from ``ops`` (default: all).

    Graph inputs: ``x0`` is ``[1, C, H, W]`` (C<=8, even H<=12, W<=12); with ``max_inputs=2``
    an optional ``x1`` is broadcast-compatible with x0 or unrelated.  Outputs are all op values
    no other op consumes.
    """
    if not (0 <= min_ops <= max_ops):
        raise ValueError(f"need 0 <= min_ops <= max_ops, got {min_ops}, {max_ops}")
    if max_ops < 1:
        raise ValueError("max_ops must be >= 1")
    min_ops = max(min_ops, 1)
    if max_inputs not in (1, 2):
        raise ValueError("max_inputs must be 1 or 2")
    names = _check_ops(ops)
    gene = st.tuples(st.sampled_from(names), _SEL, _PAR)
    shapes = _input_shapes(max_inputs)

    @st.composite
    def _graphs(draw):
        ins = draw(shapes)
        # Draw the op count first (uniform, so big graphs are common) and then that many
        # independent genes; shrinking lowers the count and simplifies genes.
        n = draw(st.integers(min_ops, max_ops))
        genes = [draw(gene) for _ in range(n)]
        seed = draw(st.integers(0, 2**16 - 1))
        return interpret(ins, genes, seed)

    return _graphs()


class Link(Enum):
    """How the two nodes `graphs_linked` places relate."""

    FEEDS = "feeds"  # the second node takes the first node's output (its primary input)
    BESIDE = "beside"  # the second node's primary input is neither the first node nor computed from it


def spread(n: int):
    """An index in 0..n-1, about as likely each, shrinking to 0.

    Why not ``st.integers(0, n - 1)``: Hypothesis draws the bounds and small values far more
    often than the others (measured, 0..5 over 60 draws with seed 0: 0 drawn 25 times, 4 once),
    so a property chosen by a small integer is mostly its first option. A wide integer, mixed
    (Fibonacci hashing), lands near-uniformly; 0 stays 0, so shrinking heads to the first."""
    if n < 1:
        raise ValueError(f"spread needs n >= 1, got {n}")
    if n == 1:
        return st.just(0)
    return _PAR.map(lambda v: 0 if v == 0 else (((v * 2654435761) % 2**32) >> 16) % n)


def _rank_draw(ranks: bool, room: int):
    """The rank drawn for a chain's operand: 0 (as drawn: the rank its producers give, shrinking
    there) or 1..MAX_RANK, about as likely each (`properties`: plain draws give rank 4 almost
    always), when asked for and there is room for the reshape that makes it."""
    return spread(_ops.MAX_RANK + 1) if ranks and room > 0 else st.just(0)


def graphs_linked(first, then, link: Link, ops=None, max_ops: int = 4, max_inputs: int = 2, ranks: bool = False):
    """Strategy for GraphSpecs holding a node of one of the ``first`` ops and, after it, a node of
    one of the ``then`` ops related to it by ``link``; up to ``max_ops - 2`` other ops (from
    ``ops``, default all) go before the first node, between the two, or after both.

    Why: a relation between two particular ops (an op fed by another) is what plain draws leave
    to chance: the second node must come later *and* its selector must pick the first node's
    value among every compatible one. Here the second node's selector is chosen from the values
    its op can take (``sel % len(candidates)`` picks exactly the wanted one), so the relation
    holds whenever the second op can take the value at all (else the nearest value that keeps
    it: one computed from the first node for FEEDS, any other for BESIDE). Shrinking heads to
    the two nodes alone.

    ``ranks``: the first node's primary input is of a drawn rank (1..5, or 0: as drawn), a
    reshape of x0 taking one of the other ops' places: a node fed by it then has that rank too
    for every op that keeps its input's shape (`generators.random.properties`).
    """
    first, then, others = _check_ops(first), _check_ops(then), _check_ops(ops)
    if max_ops < 2:
        raise ValueError(f"graphs_linked needs max_ops >= 2, got {max_ops}")
    if not isinstance(link, Link):
        raise ValueError(f"link must be a Link, got {link!r}")
    shapes = _input_shapes(max_inputs)
    gene = st.tuples(st.sampled_from(others), _SEL, _PAR)

    @st.composite
    def linked(draw):
        ins = draw(shapes)
        head = draw(st.tuples(st.sampled_from(first), _SEL, _PAR))
        tail, pick, rounds, par = (draw(st.sampled_from(then)), draw(_SEL), draw(_SEL), draw(_PAR))
        # each other op: 0 before the first node, 1 between the two, 2 after both
        extras = [(draw(st.integers(0, 2)), draw(gene)) for _ in range(draw(st.integers(0, max_ops - 2)))]
        rank = draw(_rank_draw(ranks, max_ops - 2))
        extras = extras[:max_ops - 2 - bool(rank)]
        builder = _Builder(ins)
        for place, (name, sel, p) in extras:
            if place == 0:
                builder.add(name, sel, p)
        anchor = builder.add_on(*head, builder.reshaped(rank))
        for place, (name, sel, p) in extras:
            if place == 1:
                builder.add(name, sel, p)
        cands = builder.candidates(tail)
        below = builder.downstream_of(anchor)
        if link is Link.FEEDS:
            wanted = [anchor] if anchor in cands else [c for c in cands if c in below]
        else:
            wanted = [c for c in cands if c not in below]
        chosen = (wanted or cands)[pick % len(wanted or cands)]
        builder.add(tail, cands.index(chosen) + len(cands) * rounds, par)
        for place, (name, sel, p) in extras:
            if place == 2:
                builder.add(name, sel, p)
        return builder.spec(draw(st.integers(0, 2**16 - 1)))

    return linked()


def graphs_chained(first, middle, then, hops: int, ops=None, max_ops: int = 4, max_inputs: int = 2,
                   ranks: bool = False):
    """Strategy for GraphSpecs holding a chain ``first -> m1 -> ... -> then``: a node of one of
    the ``then`` ops ``hops`` producers downstream of a node of one of the ``first`` ops, through
    ``hops - 1`` nodes of ``middle`` ops, each fed by the one before (when its op cannot take
    that value, the nearest value computed from it); up to ``max_ops - hops - 1`` other ops (from
    ``ops``, default all) go before the chain or after it.

    Why: `graphs_linked` puts the second node right after the first; a node two or three
    producers further down (a pass that rewrites what a targeted op feeds through another op)
    is left to chance, and plain draws almost never line up three particular ops in a row.
    ``ranks``: as for `graphs_linked`, the first node's input is of a drawn rank.
    """
    first, middle, then, others = _check_ops(first), _check_ops(middle), _check_ops(then), _check_ops(ops)
    if hops < 1 or max_ops < hops + 1:
        raise ValueError(f"graphs_chained needs hops >= 1 and max_ops >= hops + 1, got {hops}, {max_ops}")
    shapes = _input_shapes(max_inputs)
    gene = st.tuples(st.sampled_from(others), _SEL, _PAR)
    link = st.tuples(_SEL, _SEL, _PAR)  # pick (which wanted value), rounds (partners' selector), params

    @st.composite
    def chained(draw):
        ins = draw(shapes)
        head = draw(st.tuples(st.sampled_from(first), _SEL, _PAR))
        chain = [(draw(st.sampled_from(middle)), *draw(link)) for _ in range(hops - 1)]
        chain.append((draw(st.sampled_from(then)), *draw(link)))
        extras = [(draw(st.booleans()), draw(gene)) for _ in range(draw(st.integers(0, max_ops - hops - 1)))]
        rank = draw(_rank_draw(ranks, max_ops - hops - 1))
        extras = extras[:max_ops - hops - 1 - bool(rank)]
        builder = _Builder(ins)
        for after, (name, sel, p) in extras:
            if not after:
                builder.add(name, sel, p)
        prev = builder.add_on(*head, builder.reshaped(rank))
        for name, pick, rounds, par in chain:
            cands = builder.candidates(name)
            below = builder.downstream_of(prev)
            wanted = [prev] if prev in cands else [c for c in cands if c in below]
            chosen = (wanted or cands)[pick % len(wanted or cands)]
            prev = builder.add(name, cands.index(chosen) + len(cands) * rounds, par)
        for after, (name, sel, p) in extras:
            if after:
                builder.add(name, sel, p)
        return builder.spec(draw(st.integers(0, 2**16 - 1)))

    return chained()


def models(min_ops: int = 1, max_ops: int = 40, ops=None, max_inputs: int = 2):
    """Strategy for ``(torch.nn.Module, example_inputs)`` built from ``graphs(...)``."""
    return graphs(min_ops, max_ops, ops, max_inputs).map(lambda spec: spec.build())


_FOCUS_EXTRA = 6  # other vocabulary ops mixed into a focused graph: a context for the route ops
_FOCUS_ROUTES = 6  # routes one focused graph may combine (a shard's share is about that size)
_KEEP_ODDS = 3  # a focused graph keeps each of them unless a draw in 0..3 is 0


def _distinct_routes(routes, float_target: bool = False, ops=None) -> list[tuple[str, ...]]:
    """`routes` restricted to the ops a graph may draw (within `ops`, if given), deduplicated, in a
    fixed (sorted) order."""
    names = _check_ops(ops)
    routable = set(names) | (set(_ops.FLOAT_ONLY) if float_target else set())
    return sorted({tuple(op for op in r if op in routable) for r in routes} - {()})


def route_share(routes, shard: int = 0, shards: int = 1, float_target: bool = False) -> list[tuple[str, ...]]:
    """The routes shard `shard` of `shards` focuses on: the distinct routes dealt round-robin in
    sorted order, so the shares are disjoint, differ in size by one at most, and together hold
    every route (with more shards than routes, shard k takes route k mod their number).

    Why: each shard draws the same number of graphs, and a focused graph holds up to
    ``_FOCUS_ROUTES`` routes; a share about that small is held almost whole by every focused graph
    of its shard, so that a route of one rare op is drawn in most of them, not once in dozens.  A fixed partition, not one that
    follows what the campaign has seen: the strategy stays stateless and a failure replays."""
    if shards < 1 or not 0 <= shard < shards:
        raise ValueError(f"need 0 <= shard < shards, got shard {shard} of {shards}")
    distinct = _distinct_routes(routes, float_target)
    if not distinct:
        return []
    if shards > len(distinct):
        return [distinct[shard % len(distinct)]]
    return distinct[shard::shards]


def graphs_toward(routes, max_ops: int = 40, max_inputs: int = 2, float_target: bool = False, ops=None):
    """Graphs in which some of ``routes`` (vocabulary-op tuples, one per pass to reach) are drawn:
    some draws are plain ``graphs(...)``, most take up to six routes in a row (of the sorted
    routes, from a drawn start), keep each with odds 3 in 4, and draw a graph holding one op of
    each, mixed with more of their ops and up to six other ops (so that the route ops are not the whole graph: fastpass then has cold nodes to copy
    around the pass's rewrite).

    Uniform over distinct routes rather than over ops: a pass whose op only one vocabulary op
    presents (acosh, index_put, unfold) gets as many graphs as one that forty ops reach, where
    plain draws over the whole vocabulary would give it one graph in dozens.  Shrinking heads to
    one route and no extra op.  ``float_target``: routes may hold the ``_ops.FLOAT_ONLY`` ops.
    A campaign split into shards passes each shard its ``route_share``. ``ops`` restricts every
    op drawn, the routes' included (the gate's skip graphs: routes of suspect ops, and no
    targeted op anywhere).
    """
    names = _check_ops(ops)
    distinct = _distinct_routes(routes, float_target, ops)
    plain = graphs(1, max_ops, ops=ops, max_inputs=max_inputs)
    if not distinct:
        return plain
    shapes = _input_shapes(max_inputs)

    @st.composite
    def focused(draw):
        # up to _FOCUS_ROUTES routes in a row from a drawn start, each kept unless its draw is 0:
        # a focused graph holds most of a shard's small share (one draw per route: Hypothesis's
        # choice of one element among many is skewed toward the first ones); shrinking heads to
        # the first route alone
        start = draw(st.integers(0, len(distinct) - 1))
        ring = (distinct[start:] + distinct[:start])[:_FOCUS_ROUTES]
        chosen = ([r for r in ring if draw(st.integers(0, _KEEP_ODDS))] or ring[:1])[:max_ops]
        core = list(dict.fromkeys(op for r in chosen for op in r))
        extra = draw(st.lists(st.sampled_from([op for op in names if op not in core]), max_size=_FOCUS_EXTRA,
                              unique=True))
        ins = draw(shapes)
        # one op of every chosen route, at drawn places among the others (shrinking: first)
        genes = [draw(st.tuples(st.sampled_from(list(r)), _SEL, _PAR)) for r in chosen]
        for _ in range(draw(st.integers(0, max_ops - len(genes)))):
            gene = draw(st.tuples(st.sampled_from(core + extra), _SEL, _PAR))
            genes.insert(draw(st.integers(0, len(genes))), gene)
        return interpret(ins, genes, draw(st.integers(0, 2**16 - 1)))

    # focus first (Hypothesis shrinks to the first choice), weighed double
    return one_of_weighed((focused(), 2), (plain, 1))


def _same(value):
    return value


def one_of_weighed(*choices):
    """A strategy drawing from one of `choices` ((strategy, integer weight) pairs) with odds
    weight / total, shrinking toward the first. Not ``st.one_of``: it flattens nested one_ofs into
    one list of leaves and drops a leaf that is the same object as another, so both a repeated
    strategy and a group of several branches get the weight of their leaves, not the one asked
    for (measured: ``one_of(a, a, b)`` draws a and b half and half; ``one_of(one_of(a, b), c)``
    a third each)."""
    table = [strategy for strategy, weight in choices for _ in range(weight)]
    if not table:
        raise ValueError("one_of_weighed needs a choice with a positive weight")
    if all(strategy is table[0] for strategy in table):
        return table[0]
    return st.sampled_from(table).flatmap(_same)
