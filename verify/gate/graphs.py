"""Input graphs for the gate, biased per pass: graphs made only of vocabulary ops whose expected
aten ops meet the pass's targeted ops (the pass acts: exercises copy), graphs with none of them
(the pass should be a no-op: exercises skip), and unrestricted neighbours mixing both."""

from __future__ import annotations

from typing import Iterable

from verify.gate.passes import op_name


def vocabulary_split(targeted_ops: Iterable, universe: Iterable[str] | None = None) -> tuple[list[str], list[str]]:
    """(vocabulary ops expected to present a targeted op to the pass, the others), within `universe`.

    An op is matched in every form the pass can receive it (`generators.random.reach.presented_ops`:
    aten and core-ATen names, and what to_edge turns them into, e.g. `expand_copy`, dim-order ops),
    so that passes targeting edge forms get graphs biased toward them too."""
    from generators.random import ops_in_vocabulary
    from generators.random.reach import presented_ops

    names = {op_name(o) for o in targeted_ops}
    vocab = ops_in_vocabulary()
    allowed = set(universe) if universe else None
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


def strategy_for(targeted_ops: Iterable, max_ops: int = 4, ops: list[str] | None = None, want: str = "both",
                 suspects: Iterable[str] = (), forms: Iterable[str] = ()):
    """Graphs for a pass: only targeted ops; none of them; and neighbours (the targeted ops mixed
    with a few others). `ops` restricts the vocabulary.

    `suspects` are op names the pass's code mentions (`passes.ops_named_by`) beyond its
    targeted ops: graphs of the targeted ops with suspects are drawn for copy too, so that an
    annotation missing an op the pass rewrites meets that op (the pass would rewrite a node
    fastpass copies: a divergence the search then finds).

    `want` narrows the mix to what a feature needs as evidence: "copy" keeps the branches with
    targeted ops *and* other ops (the pass runs, and has cold nodes to copy), "skip" keeps the
    graphs without targeted ops (the pass has nothing to do); "both" is the full mix.

    `forms` (`form_route`) are the vocabulary ops that present the form the pass acts on: for
    copy, graphs of those ops with a cold op first are drawn as well (weighed double)."""
    from hypothesis import strategies as st

    from generators.random import graphs

    hit, miss = vocabulary_split(targeted_ops, ops)
    branches = []
    if hit and (want == "both" or (want == "copy" and not miss)):
        branches.append(graphs(1, max_ops, ops=hit))
    if miss and want in ("both", "skip"):
        branches.append(graphs(1, max_ops, ops=miss))
    if hit and miss and want in ("both", "copy"):
        mixed = _behind_cold(hit, miss, min(2, max_ops), max_ops, max_extra=3)
        branches += [mixed, mixed]  # the most informative for copy: weigh it double
    routes = suspect_routes(targeted_ops, suspects, miss)
    if routes and want in ("both", "copy"):
        with_suspects = st.sampled_from(sorted(routes)).flatmap(
            lambda name: graphs(1, max_ops, ops=hit + routes[name]))
        branches += [with_suspects, with_suspects]
    forms = list(forms)
    if forms and want in ("both", "copy"):
        cold = [op for op in miss if op not in forms]
        with_forms = graphs(1, max_ops, ops=forms)
        if cold and max_ops >= 2:
            with_forms = _behind_cold(forms, cold, 2, max_ops, max_extra=2)
        branches += [with_forms, with_forms]
    if not branches:
        branches.append(graphs(1, max_ops, ops=ops))
    return st.one_of(*branches)


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
