"""Input graphs for the gate, aimed per pass at what could make its annotation unsound.

A pass's *suspects* are the ops its code names (`passes.ops_named_by`: its class, helpers and
bases) beyond its targeted ops: an op it may rewrite although its annotation does not say so.
The graphs drawn (`strategy_for`) meet them on purpose:

* skip: graphs without the targeted ops, most of them holding suspects (`DrawKind.SUSPECT_IN_SKIP`;
  a fastpass skip there leaves a suspect the pass would have rewritten), and plain ones;
* copy: graphs with a targeted op and a suspect in each relation, drawn deliberately
  (`generators.random.graphs_linked`): the suspect fed by the targeted node (fastpass copies
  exactly that node after re-dispatching the targeted one: its input is metadata-identical),
  the suspect two and three producers downstream of it through cold nodes
  (`generators.random.graphs_chained`), the suspect feeding it, and the two side by side; plus
  targeted ops behind a cold op, the forms the pass acts on (`form_route`), and unrestricted neighbours (an undeclared op may be
  named nowhere: a rule by property, a helper the names do not reach).

In the copy graphs drawn with a suspect in a relation, the suspect's operands are drawn too
(issue 43, item 4: a pass may rewrite an op on one rank or on integer operands only): the chain's
first node on a value of a drawn rank (`ranks=True`), the suspect on a drawn dtype among those the
stage presents it on (`_dtype_form`, `generators.random.properties`).

`Aim.kinds(spec)` says which of these a drawn graph is, read off its structure (not from the
branch that drew it): the per-pass counts in a gate verdict are what was really drawn;
`Aim.coverage(spec)` the ranks, dtypes and distances each suspect was drawn on, and
`Aim.not_presented()` what the stage's vocabulary cannot present."""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import Iterable

from verify.gate.passes import op_name
from verify.vocabulary import Feature, FeatureSet


class DrawKind(str, Enum):
    """What a drawn graph puts in front of a pass, relative to its targeted ops and suspects."""

    SUSPECT_IN_SKIP = "suspect-in-skip"  # no targeted op, a suspect op: what a skip must not hide
    TARGETED_TO_SUSPECT = "targeted->suspect"  # a suspect node fed by a targeted node
    SUSPECT_TO_TARGETED = "suspect->targeted"  # a targeted node fed by a suspect node
    SUSPECT_BESIDE_TARGETED = "suspect-beside-targeted"  # both, neither computed from the other
    # an op the pass's own target_ops declares and its annotation does not target, no targeted op:
    # both a skip (nothing targeted) and a copy (the node is not targeted) would leave it unrewritten
    DECLARED_UNTARGETED = "declared-untargeted"
    # a suspect node two / three producers downstream of a targeted node, through cold nodes (no
    # targeted op, no suspect) each fed by the one before: fastpass copies the whole chain after
    # re-dispatching the targeted node (issue 43: targeted -> cold -> rewritten went unseen)
    TARGETED_TO_SUSPECT_2 = "targeted->cold->suspect"
    TARGETED_TO_SUSPECT_3 = "targeted->cold->cold->suspect"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Aim:
    """One pass's vocabulary, split by what its ops present to the pass: `hit` (a targeted op),
    `miss` (the others) and `routes` (suspect op name -> the `miss` ops presenting it)."""

    hit: tuple[str, ...]
    miss: tuple[str, ...]
    routes: dict[str, tuple[str, ...]]
    declared: dict[str, tuple[str, ...]] = field(default_factory=dict)  # declared, untargeted op -> `miss` ops presenting it
    # suspect op name -> the typed vocabulary ops presenting it on integer/bool operands (a float
    # stage only: `generators.random.properties.typed_presenting`), drawn where a dtype is aimed at
    typed: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unrouted: tuple[str, ...] = ()  # suspects no vocabulary op of the stage presents

    @classmethod
    def of(cls, targeted_ops: Iterable, suspects: Iterable[str] = (), universe: Iterable[str] | None = None,
           declared: Iterable[str] = (), pipeline: bool = True) -> "Aim":
        """Cached by op names: a registry run builds a pass's strategy for every graph drawn for
        it (and Hypothesis rebuilds it to replay and shrink); the split costs ~0.1 s. `pipeline`:
        the pass runs in the lowering pipeline, not directly on the edge graph (a typed split
        presents slice_copy there only: `generators.random.properties.PIPELINE_PRESENTED`)."""
        return _aim_of(frozenset(op_name(o) for o in targeted_ops), frozenset(suspects),
                       tuple(universe) if universe else None, frozenset(declared), pipeline)

    @property
    def suspect_ops(self) -> frozenset[str]:
        return frozenset(op for name in self.routes for op in self.presenting(name))

    def presenting(self, name: str) -> tuple[str, ...]:
        """Every vocabulary op presenting suspect `name`, the typed ones included."""
        return tuple(self.routes.get(name, ())) + tuple(self.typed.get(name, ()))

    def forms(self, name: str) -> dict[str, tuple[str, ...]]:
        """dtype -> the vocabulary ops presenting suspect `name` on operands of that dtype."""
        from generators.random.properties import forms

        return forms(self.presenting(name), name)

    def not_presented(self) -> dict[str, list[str]]:
        """Per suspect, the ranks and dtypes no vocabulary op of the stage presents it on
        (`generators.random.properties.not_presented`; only the suspects missing some), and
        `unrouted`: the suspects no vocabulary op presents at all. Never counted as covered."""
        from generators.random.properties import not_presented

        out = {name: missing for name in sorted(self.routes) if (missing := not_presented(self.presenting(name), name))}
        return dict(out, unrouted=list(self.unrouted)) if self.unrouted else out

    def coverage(self, spec) -> Counter:
        """(suspect, rank, dtype, distance) of every suspect node of `spec`: the rank and dtype of
        its operand (`generators.random.properties.operand`) and its distance from the nearest
        targeted node upstream (1: fed by it; 0: none upstream)."""
        from generators.random.properties import operand

        by_op: dict[str, list[str]] = {}
        for name in self.routes:
            for op in self.presenting(name):
                by_op.setdefault(op, []).append(name)
        hit, n_in = set(self.hit), spec.n_inputs
        distance: list[int] = []  # op index -> hops from the nearest targeted node upstream, 0: none
        found = Counter()
        for rec in spec.ops:
            ups = [distance[v - n_in] if spec.ops[v - n_in].op not in hit else 0 for v in rec.inputs if v >= n_in]
            fed = [v for v in rec.inputs if v >= n_in and spec.ops[v - n_in].op in hit]
            distance.append(1 if fed else min((d + 1 for d in ups if d), default=0))
            for name in by_op.get(rec.op, ()):
                rank, dtype = operand(spec, rec, name)
                found[(name, rank, dtype, distance[-1])] += 1
        return found

    @property
    def declared_ops(self) -> frozenset[str]:
        return frozenset(op for ops in self.declared.values() for op in ops)

    def kinds(self, spec) -> frozenset[DrawKind]:
        """The kinds `spec` is (a graph may be several), from its nodes' ops and edges: a node is
        targeted if its vocabulary op presents a targeted op, a suspect if it presents a suspect
        (and no targeted op); "fed by" is a direct input, "beside" neither node upstream of the
        other."""
        hit, sus = set(self.hit), self.suspect_ops
        n_in = spec.n_inputs
        tag = ["T" if rec.op in hit else "S" if rec.op in sus else "" for rec in spec.ops]
        upstream: list[set[int]] = []  # op index -> op indices it is computed from
        for rec in spec.ops:
            ups = set()
            for vid in rec.inputs:
                if vid >= n_in:
                    ups |= {vid - n_in} | upstream[vid - n_in]
            upstream.append(ups)
        targeted = [k for k, t in enumerate(tag) if t == "T"]
        suspects = [k for k, t in enumerate(tag) if t == "S"]
        found = set()
        declared = self.declared_ops
        if not targeted and any(rec.op in declared for rec in spec.ops):
            found.add(DrawKind.DECLARED_UNTARGETED)
        if suspects and not targeted:
            found.add(DrawKind.SUSPECT_IN_SKIP)
        for k in suspects:
            fed_by = {vid - n_in for vid in spec.ops[k].inputs if vid >= n_in}
            if any(tag[j] == "T" for j in fed_by):
                found.add(DrawKind.TARGETED_TO_SUSPECT)
            if any(t not in upstream[k] and k not in upstream[t] for t in targeted):
                found.add(DrawKind.SUSPECT_BESIDE_TARGETED)
        for k in targeted:
            if any(vid >= n_in and tag[vid - n_in] == "S" for vid in spec.ops[k].inputs):
                found.add(DrawKind.SUSPECT_TO_TARGETED)
        found |= _chain_kinds(spec, tag)
        return frozenset(found)

    def tally(self, counts: Counter, spec) -> None:
        """Count `spec`'s kinds into `counts`."""
        counts.update(self.kinds(spec))


def _chain_kinds(spec, tag: list[str]) -> set[DrawKind]:
    """The chain kinds `spec` holds (`tag`: "T" targeted, "S" suspect, "" cold, per op): a
    suspect fed by a cold node fed by a targeted node (distance 2), or through two cold nodes
    (distance 3); any input of a node counts as "fed by"."""
    n_in = spec.n_inputs

    def producers(k: int) -> list[int]:
        return [vid - n_in for vid in spec.ops[k].inputs if vid >= n_in]

    found = set()
    for k, t in enumerate(tag):
        if t != "S":
            continue
        for c1 in (j for j in producers(k) if tag[j] == ""):
            if any(tag[j] == "T" for j in producers(c1)):
                found.add(DrawKind.TARGETED_TO_SUSPECT_2)
            if any(tag[c2] == "" and any(tag[j] == "T" for j in producers(c2)) for c2 in producers(c1)):
                found.add(DrawKind.TARGETED_TO_SUSPECT_3)
    return found


@functools.lru_cache(maxsize=1024)
def _aim_of(targeted: frozenset[str], suspects: frozenset[str], universe: tuple[str, ...] | None,
            declared: frozenset[str] = frozenset(), pipeline: bool = True) -> Aim:
    from generators.random import FLOAT_ONLY
    from generators.random.properties import typed_presenting

    hit, miss = vocabulary_split(targeted, universe)
    routes = suspect_routes(targeted, suspects, miss)
    declared_routes = suspect_routes(targeted, declared, miss)
    # a float stage draws the whole vocabulary with its FLOAT_ONLY ops (plan.stage_ops); --ops
    # draws only the ops it names
    float_stage = universe is not None and FLOAT_ONLY <= set(universe)
    typed = {name: tuple(typed_presenting([name], float_stage, pipeline)) for name in sorted(set(suspects) - targeted)}
    typed = {name: ops for name, ops in typed.items() if ops and name in routes}
    unrouted = tuple(sorted(set(suspects) - targeted - set(routes)))
    return Aim(tuple(hit), tuple(miss), {name: tuple(ops) for name, ops in routes.items()},
               {name: tuple(ops) for name, ops in declared_routes.items()}, typed, unrouted)


def coverage_json(counts: Counter) -> dict[str, dict[str, int]]:
    """A verdict's record of `Aim.coverage` (JSON): per suspect, `"r<rank> <dtype> d<distance>"`
    -> graphs drawn (d0: no targeted node upstream of it)."""
    out: dict[str, dict[str, int]] = {}
    for (name, rank, dtype, dist), n in sorted(counts.items()):
        out.setdefault(name, {})[f"r{rank} {dtype} d{dist}"] = int(n)
    return out


# The kinds `strategy_for` draws on purpose, each in branches of its own. A test removes one to
# show that the toy pass it exists for is then no longer found (tests/test_gate_aim.py).
AIMED: frozenset[DrawKind] = frozenset(DrawKind)


def drawn_counts(counts: Counter) -> dict[str, int]:
    """A verdict's record of the kinds drawn (JSON): every kind, zero included, so that a reader
    sees what was never drawn."""
    return {kind.value: int(counts.get(kind, 0)) for kind in DrawKind}


def vocabulary_split(targeted_ops: Iterable, universe: Iterable[str] | None = None) -> tuple[list[str], list[str]]:
    """(vocabulary ops expected to present a targeted op to the pass, the others), within `universe`.

    An op is matched in every form the pass can receive it (`generators.random.reach.presented_ops`:
    aten and core-ATen names, and what to_edge turns them into, e.g. `expand_copy`, dim-order ops),
    so that passes targeting edge forms get graphs biased toward them too."""
    from generators.random import ops_in_vocabulary
    from generators.random.reach import presented_ops

    names = {op_name(o) for o in targeted_ops}
    allowed = set(universe) if universe else None
    # a universe may hold the FLOAT_ONLY ops (plan.stage_ops on a float stage): split those too
    vocab = ops_in_vocabulary(float_target=allowed is not None)
    hit, miss = [], []
    for op, entry in vocab.items():
        if allowed is not None and op not in allowed:
            continue
        (hit if presented_ops(entry) & names else miss).append(op)
    return hit, miss


def suspect_routes(targeted_ops: Iterable, suspects: Iterable[str], universe: list[str]) -> dict[str, list[str]]:
    """Suspect op name -> the vocabulary ops (within `universe`) that present it, for every op the
    pass's code names beyond its targeted ops. Each name gets an equal share of the suspect
    graphs, so that one named op is not drowned by another that many vocabulary ops present."""
    routes = {}
    for name in sorted(set(suspects) - {op_name(o) for o in targeted_ops}):
        presenting = vocabulary_split([name], universe)[0] if universe else []
        if presenting:
            routes[name] = presenting
    return routes


def form_route(pass_class: type, universe: Iterable[str] | None = None) -> list[str]:
    """The vocabulary ops (within `universe`) that present `pass_class`'s op in the one form it
    acts on (`generators.random.reach.FORM_ROUTES`: add/sub with alpha != 1, a split with a node
    upstream, ...): biasing by targeted ops alone draws those forms rarely or never."""
    from generators.random import ops_in_vocabulary
    from generators.random.reach import FORM_ROUTES

    route = FORM_ROUTES.get(pass_class.__name__)
    if route is None:
        return []
    allowed = set(universe) if universe else set(ops_in_vocabulary())
    return [op for op in route[0] if op in allowed]


def annotation_route(pass_class: type, universe: Iterable[str] | None = None) -> list[str]:
    """The vocabulary ops (within `universe`) after which the quantizer's transform_for_annotation
    pipeline retraces before it runs `pass_class` (`reach.ANNOTATION_RETRACERS`, measured).

    Why: fastpass skips a pass, or copies a node, only in a graph a retrace made (a retrace
    fixed point; creation signatures), and the graph torch.export hands the quantizer, with the
    meta keys the quantizer adds, is neither: in that pipeline fastpass acts only after a pass
    of it has retraced (DecomposeGroupNormPass without aten.group_norm skipped its group norm,
    wrongly, only after a sign or remainder had been decomposed)."""
    from generators.random.reach import ANNOTATION_RETRACERS, annotation_pipeline

    order = annotation_pipeline()
    if pass_class.__name__ not in order:
        return []
    before = order[:order.index(pass_class.__name__)]
    allowed = set(universe) if universe else None
    return [op for name in before for op in ANNOTATION_RETRACERS.get(name, ()) if allowed is None or op in allowed]


def annotation_strategy(targeted_ops: Iterable, max_ops: int, ops: list[str] | None, want: FeatureSet,
                        suspects: Iterable[str], declared: Iterable[str], companions: list[str]):
    """Graphs for a pass checked in the quantizer's pipeline (`check.run_annotation`): each holds
    a `companions` op (`annotation_route`: without one, fastpass does nothing there to judge)
    beside, for skip, a suspect's or a declared op's route with no targeted op, and for copy, a
    targeted op. The same draw kinds as `strategy_for`, each paired with a companion."""
    from hypothesis import strategies as st

    from generators.random import Link, graphs, graphs_linked, graphs_toward, one_of_weighed

    aim = Aim.of(targeted_ops, suspects, ops, declared)
    hit, miss, mates = list(aim.hit), list(aim.miss), tuple(companions)
    groups = []  # (strategy, weight)
    if want.covers(Feature.SKIP) and miss:
        untargeted = tuple(op for op in mates if op in miss)
        routes = [aim.routes[name] for name in sorted(aim.routes)] + [aim.declared[name] for name in sorted(aim.declared)]
        if routes and untargeted and DrawKind.SUSPECT_IN_SKIP in AIMED:
            groups.append((st.sampled_from(routes).flatmap(
                lambda route: graphs_linked(list(route), list(untargeted), Link.BESIDE, ops=miss, max_ops=max_ops)), 2))
        groups.append((graphs_toward([untargeted], max_ops, ops=miss) if untargeted else graphs(1, max_ops, ops=miss), 1))
    if want.covers(Feature.COPY) and hit and mates:
        groups.append((graphs_linked(hit, list(mates), Link.BESIDE, ops=ops, max_ops=max_ops), 2))
    if not groups:
        groups.append((graphs_toward([mates], max_ops, ops=ops) if mates else graphs(1, max_ops, ops=ops), 1))
    return one_of_weighed(*groups)


def form_link(pass_class: type, universe: Iterable[str] | None = None) -> tuple[list[str], list[str]] | None:
    """(producer ops, consumer ops) within `universe` when `pass_class` acts only where a node of
    one directly feeds a node of the other (`generators.random.reach.FORM_LINKS`), else None."""
    from generators.random import ops_in_vocabulary
    from generators.random.reach import FORM_LINKS

    entry = FORM_LINKS.get(pass_class.__name__)
    if entry is None:
        return None
    allowed = set(universe) if universe else set(ops_in_vocabulary())
    producers, consumers = [op for op in entry[0] if op in allowed], [op for op in entry[1] if op in allowed]
    return (producers, consumers) if producers and consumers else None


def strategy_for(targeted_ops: Iterable, max_ops: int = 4, ops: list[str] | None = None,
                 want: FeatureSet = FeatureSet.BOTH,
                 suspects: Iterable[str] = (), forms: Iterable[str] = (),
                 link: tuple[list[str], list[str]] | None = None, declared: Iterable[str] = (),
                 pipeline: bool = True):
    """Graphs for a pass (see the module docstring): only targeted ops; none of them, most with
    suspects; targeted ops behind a cold op; each suspect fed by, feeding and beside a targeted
    node; the forms the pass acts on; unrestricted neighbours. `ops` restricts the vocabulary.

    `suspects` are op names the pass's code names (`passes.ops_named_by`) beyond its targeted
    ops: read from the code, not the annotation, so an op dropped from an annotation is still
    drawn on purpose (the pass would rewrite a node fastpass copies or skips: a divergence the
    search then finds). Each name gets an equal share of the aimed graphs.

    `want` narrows the mix to what a feature needs as evidence: COPY keeps the branches with
    targeted ops *and* other ops (the pass runs, and has cold nodes to copy), SKIP keeps the
    graphs without targeted ops (the pass has nothing to do); BOTH is the full mix.

    `forms` (`form_route`) are the vocabulary ops that present the form the pass acts on: for
    copy, graphs of those ops with a cold op first are drawn as well (weighed double). `link`
    (`form_link`): for copy, graphs in which a producer op's node feeds a consumer op's node
    (weighed double).

    `declared` (`passes.ops_declared_by`: the pass's own target_ops) beyond the targeted ops are
    drawn in a group of their own, as often as the skip suspects, whatever the feature: a graph
    holding one and no targeted op is skipped by fastpass (skip) or has the node copied (copy)
    where the pass, by its own declaration, rewrites it.

    `pipeline`: the pass runs in the lowering pipeline (`Aim.of`), not directly on the edge graph."""
    from hypothesis import strategies as st

    from generators.random import graphs, graphs_toward, one_of_weighed

    aim = Aim.of(targeted_ops, suspects, ops, declared, pipeline)
    hit, miss, routes = list(aim.hit), list(aim.miss), aim.routes
    for_skip, for_copy = want.covers(Feature.SKIP), want.covers(Feature.COPY)
    # Aimed branches and the plain ones form groups of set weight per feature (one_of_weighed:
    # st.one_of would weigh each group by its number of branches), so that adding suspects does
    # not crowd out the forms and cold-first graphs copy evidence rests on.
    skip_aimed, copy_aimed, plain = [], [], []  # (strategy, weight) pairs
    forms = list(forms)
    # a form op that presents no targeted op is the strongest suspect for skip: the pass acts on
    # that form, and fastpass would skip it there
    skip_forms = [op for op in forms if op in aim.miss]
    if (routes or skip_forms) and miss and for_skip and DrawKind.SUSPECT_IN_SKIP in AIMED:
        skip_aimed.append((_suspects_in_skip(aim, max_ops, skip_forms), 1))
    if routes and hit and for_copy and max_ops >= 2:
        # a suspect downstream of a targeted node, fed by it (weighed double: what fastpass copies
        # after a re-dispatch) or two or three producers after it through cold nodes
        downstream = _downstream(aim, max_ops, ops)
        copy_aimed += [downstream] if downstream is not None else []
        weights = {DrawKind.SUSPECT_TO_TARGETED: 1, DrawKind.SUSPECT_BESIDE_TARGETED: 1}
        copy_aimed += [(_linked(aim, kind, max_ops, ops), weight) for kind, weight in weights.items() if kind in AIMED]
    if routes and for_copy:  # neighbours: the suspects among the targeted ops, in any order
        copy_aimed.append((st.sampled_from(sorted(routes)).flatmap(
            lambda name: graphs(1, max_ops, ops=hit + list(routes[name]))), 1))
    if hit and (want is FeatureSet.BOTH or (want is FeatureSet.COPY and not miss)):
        plain.append((graphs(1, max_ops, ops=hit), 1))
    if miss and for_skip:
        plain.append((graphs(1, max_ops, ops=miss), 1))
    if hit and miss and for_copy:
        # the most informative for copy: weighed double
        plain.append((_behind_cold(hit, miss, min(2, max_ops), max_ops, max_extra=3), 2))
    if forms and for_copy:
        cold = [op for op in miss if op not in forms]
        with_forms = graphs(1, max_ops, ops=forms)
        if cold and max_ops >= 2:
            with_forms = _behind_cold(forms, cold, 2, max_ops, max_extra=2)
        plain.append((with_forms, 2))
    if link and for_copy and max_ops >= 2:
        from generators.random import Link, graphs_linked

        plain.append((graphs_linked(link[0], link[1], Link.FEEDS, ops=ops, max_ops=max_ops), 2))
    if not plain and not skip_aimed and not copy_aimed:
        plain.append((graphs(1, max_ops, ops=ops), 1))
    # skip: suspects in two draws of three (graphs_toward adds plain ones of its own)
    groups = [(one_of_weighed(*skip_aimed), 2)] if skip_aimed else []
    if aim.declared and miss and DrawKind.DECLARED_UNTARGETED in AIMED:
        groups.append((graphs_toward([aim.declared[name] for name in sorted(aim.declared)], max_ops, ops=miss), 2))
    groups += [(one_of_weighed(*copy_aimed), 1)] if copy_aimed else []
    groups += [(one_of_weighed(*plain), 1)] if plain else []
    return one_of_weighed(*groups)


def _suspects_in_skip(aim: Aim, max_ops: int, forms: list[str] = ()):
    """Skip graphs holding suspects: no targeted op anywhere, one op of each of a few suspects'
    routes (`graphs_toward` restricted to `miss`: uniform over suspects, not over the vocabulary
    ops presenting them), among other untargeted ops; a third plain untargeted graphs. `forms`
    (the pass's form ops that present no targeted op) are one route more: many vocabulary ops
    present a suspect like `permute_copy`, and only the form op presents what the pass rewrites
    (a permute of rank > 4 with singleton dims)."""
    from generators.random import graphs_toward

    routes = [aim.routes[name] for name in sorted(aim.routes)] + ([tuple(forms)] if forms else [])
    return graphs_toward(routes, max_ops, ops=list(aim.miss))


def _linked(aim: Aim, kind: DrawKind, max_ops: int, ops: list[str] | None):
    """Copy graphs with a targeted node and a node of one suspect (an equal share each) in the
    relation `kind`, other ops (any: unrestricted) before, between or after them."""
    from hypothesis import strategies as st

    from generators.random import Link, graphs_linked

    hit = list(aim.hit)

    def draw(route: list[str]):
        if kind is DrawKind.TARGETED_TO_SUSPECT:
            return graphs_linked(hit, route, Link.FEEDS, ops=ops, max_ops=max_ops, ranks=True)
        if kind is DrawKind.SUSPECT_TO_TARGETED:
            return graphs_linked(route, hit, Link.FEEDS, ops=ops, max_ops=max_ops, ranks=True)
        return graphs_linked(hit, route, Link.BESIDE, ops=ops, max_ops=max_ops, ranks=True)

    return st.sampled_from(sorted(aim.routes)).flatmap(lambda name: _dtype_form(aim, name).flatmap(draw))


def _dtype_form(aim: Aim, name: str):
    """The vocabulary ops presenting suspect `name` on one dtype, the dtype drawn among those the
    stage presents it on, each as likely (float32 first: shrinking heads there). Why: `add`
    presents an add of float32 values only; an add of two int32 ones, which a pass may treat
    apart, is presented by `int32_add` alone (issue 43, item 4)."""
    from generators.random import spread

    forms = [list(ops) for ops in aim.forms(name).values()]
    return spread(len(forms)).map(forms.__getitem__)


# distance from the targeted node -> (its kind, its weight among the downstream graphs); the
# neighbour (distance 1) weighs double, as before the chains were drawn
_DOWNSTREAM = {1: (DrawKind.TARGETED_TO_SUSPECT, 2), 2: (DrawKind.TARGETED_TO_SUSPECT_2, 1),
               3: (DrawKind.TARGETED_TO_SUSPECT_3, 1)}


def _downstream(aim: Aim, max_ops: int, ops: list[str] | None) -> tuple[object, int] | None:
    """(strategy, weight): copy graphs with a node of one suspect (an equal share each) at a
    distance drawn from `_DOWNSTREAM` (each kind in AIMED that fits in `max_ops`) after a
    targeted node: fed by it (`graphs_linked`), or through one or two cold ops, neither targeted
    nor suspect, each fed by the one before (`generators.random.graphs_chained`).

    Why chains: fastpass re-dispatches the targeted node and then copies every node after it
    whose inputs are metadata-identical, so a rewrite the pass makes a few producers further
    down is skipped just like its neighbour's (issue 43: targeted -> cold -> rewritten). Why the
    distance is drawn inside one strategy rather than as branches of their own: Hypothesis's
    generation mutates what it drew, and a short search that settled on one branch early drew
    no chain at all (0 of 60 with seed 0); an integer inside a graph's draw is mutated too."""
    from hypothesis import strategies as st

    from generators.random import Link, graphs_chained, graphs_linked, spread

    hit, suspects = list(aim.hit), aim.suspect_ops
    cold = [op for op in aim.miss if op not in suspects]
    table = [hops for hops, (kind, weight) in _DOWNSTREAM.items() for _ in range(weight)
             if kind in AIMED and max_ops >= hops + 1 and (hops == 1 or cold)]
    if not table:
        return None

    def draw(hops: int, route: list[str]):
        if hops == 1:
            return graphs_linked(hit, route, Link.FEEDS, ops=ops, max_ops=max_ops, ranks=True)
        return graphs_chained(hit, cold, route, hops, ops=ops, max_ops=max_ops, ranks=True)

    def at(pair: tuple[int, str]):
        hops, name = pair
        return _dtype_form(aim, name).flatmap(lambda route: draw(hops, route))

    # the group weighs what the neighbour alone did (2), one more with chains: the other relations
    # keep most of their share
    weight = 2 + any(hops > 1 for hops in table)
    # the suspect by `spread`, not sampled_from: Hypothesis draws a list's first entries far more
    # often, and a suspect late in the (sorted) list was drawn a few times in a short search, or
    # never; the distance stays weighted by `table` (the neighbour first)
    names = sorted(aim.routes)
    return st.tuples(st.sampled_from(table), spread(len(names)).map(names.__getitem__)).flatmap(at), weight


def _behind_cold(core: list[str], cold: list[str], min_ops: int, max_ops: int, max_extra: int):
    """Graphs of the `core` ops mixed with up to `max_extra` `cold` ones, a cold op first: a node
    upstream of every rewrite, whose inputs the pass leaves alone, so fastpass may copy it (a
    node fed by a rewritten one must be re-dispatched). Without room for two ops, unfiltered."""
    from hypothesis import strategies as st

    from generators.random import graphs

    core_set = set(core)

    def cold_first(spec) -> bool:
        names = spec.op_names()
        return names[0] not in core_set and bool(set(names) & core_set)

    drawn = st.lists(st.sampled_from(cold), min_size=1, max_size=max_extra, unique=True).flatmap(
        lambda extra: graphs(min_ops, max_ops, ops=core + extra))
    return drawn.filter(cold_first) if max_ops >= 2 else drawn
