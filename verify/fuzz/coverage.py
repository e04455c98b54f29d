"""Pass coverage of a fuzz campaign: per target and per pass, what stock did and what fastpass did.

Each verified graph appends one JSON line (`record_coverage`); `coverage_summary` reads the
lines of every worker and counts, per target and per pass (verify.report.fuzz_coverage writes
them, one table row per pass; `summarize_coverage` is the two together, the text the campaign
prints):

- `stock`: graphs in which the stock lowering invoked the pass;
- `presented`: graphs in which the pass's targeted ops were in the graph it received (stock):
  the graph reached the pass in the form it rewrites (`all` for passes without targeted ops);
- `fast ran`: graphs in which the pass ran with fastpass on (not skipped);
- `skipped`: pass calls fastpass skipped; `copied`: nodes fastpass copied in it;
- `acted`: graphs in which fastpass skipped the pass or copied at least one of its nodes;
- `exercised`: graphs in which fastpass ran the pass *and* its targeted ops were in the graph
  the pass received (every run counts for a pass without targeted ops): the pass did its work
  with fastpass on, and the comparison of that graph covers it.

Then the verdict (`coverage_verdict`): how many annotated passes some graph of the campaign can
reach (generators.random.reach: not listed unreachable, on a target the pass acts on), how many
were exercised, and for each of the rest why not: listed unreachable (with the reason), outside
the campaign's targets (reached, or its route drawn, only on others), too few examples (its
route, the vocabulary ops that reach it, was drawn in fewer than `min_draws` graphs), not
reachable with this vocabulary (every op that would present it is quarantined), or a generator
gap (drawn often enough, never exercised: the route does not reach the pass, or a reason is
missing from the unreachable list).  Only a gap fails the campaign (see `CoverageVerdict.failed`).
A target counts for a pass only where its own vocabulary draws the route (`aimed_on`, the same
vocabulary `verify.fuzz.search.focus_routes` aims with): a quantized target leaves out the
FLOAT_ONLY ops, so a route of those ops alone is drawn on tosa-fp, and only there expected.

The values computed here (`TargetCoverage`, `CoverageVerdict`, `Throughput`...) are defined in
verify.report.fuzz_coverage, which formats them and cannot import this module.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections import defaultdict
from pathlib import Path

from verify.fuzz.budget import seconds_of, time_budget
from verify.lowering.mode import Mode
from verify.report.fuzz_coverage import (
    CoverageSummary, CoverageVerdict, LoweringSeconds, Outside, PassCoverage, PassStanding, Standing, TargetCoverage,
    TargetReach, Throughput, text,
)


def coverage_file(folder: Path | None) -> Path | None:
    """This process's coverage lines in a campaign's coverage `folder` (None: not recorded): one
    file per pytest-xdist worker, so that no two processes append to one file."""
    if folder is None:
        return None
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    return Path(folder) / f"coverage-{worker}.jsonl"


@functools.lru_cache(maxsize=1)
def annotated_targeted_ops() -> dict[str, frozenset[str]]:
    """Class name -> targeted op names (``aten.add.Tensor``) of every annotated pass."""
    from fastpass.annotations import lookup
    from verify.gate.passes import annotated_passes, op_name

    return {name: frozenset(op_name(o) for o in (lookup(cls).targeted_ops or ()))
            for name, cls in annotated_passes_by_name().items()}


@functools.lru_cache(maxsize=1)
def ops_acted_on() -> dict[str, frozenset[str]]:
    """Class name -> the ops without which the pass does nothing: its annotation's targeted ops,
    or, for an annotation naming none (retrace-only), upstream's own ``target_ops`` when the pass
    is an ``ArmOpTargetedPass`` that returns before ``call()`` without them (fastpass then counts
    the call skipped).  What a graph must present for the pass to run: its route is drawn from these."""
    from executorch.backends.arm._passes.arm_pass import ArmOpTargetedPass

    from verify.gate.passes import annotated_passes, op_name

    out = {}
    for name, ops in annotated_targeted_ops().items():
        cls = annotated_passes_by_name()[name]
        if not ops and issubclass(cls, ArmOpTargetedPass) and cls.should_run_pass is ArmOpTargetedPass.should_run_pass:
            ops = frozenset(op_name(o) for o in (getattr(cls, "target_ops", ()) or ()))
        out[name] = ops
    return out


def passes_by_name(classes) -> dict[str, type]:
    """Step name -> the class a pass manager step of that name is. Where two classes share a name
    (an Arm pass and the backends/transforms helper it subclasses, which the propagation passes
    call directly and no pass manager runs), the Arm pass is meant."""
    out: dict[str, type] = {}
    for cls in classes:
        if cls.__name__ not in out or cls.__module__.startswith("executorch.backends.arm."):
            out[cls.__name__] = cls
    return out


@functools.lru_cache(maxsize=1)
def annotated_passes_by_name() -> dict[str, type]:
    """`passes_by_name` of every annotated pass (computed once per process)."""
    from verify.gate.passes import annotated_passes

    return passes_by_name(annotated_passes().values())


def _counts_for_step(record: dict) -> bool:
    """Whether a per_pass record is a call of the class its name means here: not a call of a
    same-named helper (whose copies would otherwise be credited to the Arm pass)."""
    from fastpass.annotations import qualname

    cls = annotated_passes_by_name().get(record["name"])
    return cls is None or not record.get("qualname") or record["qualname"] == qualname(cls)


_EDGE_TARGET = re.compile(r"<EdgeOpOverload: ([^>]+)>")


def _op_names(snapshot) -> set[str]:
    """Op names (``aten.add.Tensor``, ``tosa.CONV2D.default``) of a snapshot's call_function nodes."""
    names = set()
    for node in snapshot.nodes:
        if node.op != "call_function":
            continue
        match = _EDGE_TARGET.search(node.target)
        names.add(match.group(1) if match else node.target.rsplit(":", 1)[-1])
    return names


def presented_passes(observation) -> list[str]:
    """Annotated passes whose targeted ops were in the graph the stock lowering gave them."""
    targeted = annotated_targeted_ops()
    previous: dict[tuple[str, str], str | None] = {}
    ops_of: dict[str, set[str]] = {}
    found = set()
    for step in sorted(observation.steps, key=lambda s: s.seq):
        key = (step.phase, step.manager)
        received = previous.get(key)
        previous[key] = step.digest
        wanted = targeted.get(step.pass_name)
        if step.index < 0 or not wanted or received is None or received not in observation.snapshots:
            continue
        if received not in ops_of:
            ops_of[received] = _op_names(observation.snapshots[received])
        if wanted & ops_of[received]:
            found.add(step.pass_name)
    return sorted(found)


def fastpass_counts(stats: dict | None) -> dict[str, dict[str, int]]:
    """Step name -> calls fastpass skipped, calls that ran, nodes copied, from fastpass.stats()."""
    fast: dict[str, dict[str, int]] = defaultdict(lambda: {"skipped": 0, "ran": 0, "copied": 0})
    for record in (stats or {}).get("per_pass", []):
        if not _counts_for_step(record):
            continue
        counts = fast[record["name"]]
        counts["skipped" if record.get("skipped") else "ran"] += 1
        counts["copied"] += int(record.get("copied", 0))
    return dict(fast)


def record_coverage(verdict, folder: Path | None) -> None:
    """One line per verified graph in the campaign's coverage `folder` (None: nothing recorded):
    for every pass, what stock and fastpass did with it, and where the graph's time went
    (verify.fuzz.budget)."""
    path = coverage_file(folder)
    if path is None:
        return
    stock = sorted({s.pass_name for s in verdict.stock.observation.steps if s.index >= 0})
    fast = fastpass_counts(verdict.fastpass.fastpass_stats)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps({"graph": verdict.spec.fingerprint(), "target": verdict.target,
                            "started": verdict.started, "finished": verdict.finished,
                            "ops": len(verdict.spec.ops), "op_names": sorted(set(verdict.spec.op_names())),
                            "seconds": seconds_of(verdict),
                            Mode.STOCK: stock, "presented": presented_passes(verdict.stock.observation),
                            Mode.FASTPASS: fast}) + "\n")


def coverage_files(folder: Path) -> list[Path]:
    """The coverage files in a campaign's coverage `folder`: one per worker (`coverage_file`)."""
    return sorted(Path(folder).glob("coverage-*.jsonl"))


def read_coverage(folder: Path) -> tuple[list[dict], int]:
    """(rows of every worker's file, number of worker files)."""
    rows, workers = [], 0
    for path in coverage_files(folder):
        workers += 1
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows, workers


def _fast_counts(row: dict) -> dict[str, dict[str, int]]:
    return row.get(Mode.FASTPASS, {})


def exercised_passes(row: dict, targeted: dict[str, frozenset[str]]) -> set[str]:
    """Annotated passes one graph exercised: fastpass ran them, and their targeted ops (if they
    name any) were in the graph the stock lowering gave them.  For a pass run outside the observed
    pass managers (reach.RUN_OUTSIDE_MANAGERS: no input graph recorded), the graph held its route."""
    from generators.random import reach

    presented = set(row.get("presented", []))
    ops = set(row.get("op_names", ()))

    def presented_to(name: str) -> bool:
        if name in reach.RUN_OUTSIDE_MANAGERS:
            route = _route(name, frozenset(targeted[name]))
            return route is None or bool(set(route) & ops)
        return name in presented or not targeted[name]

    return {name for name, counts in _fast_counts(row).items()
            if counts["ran"] and name in targeted and presented_to(name)}


@functools.lru_cache(maxsize=None)
def _route(name: str, acted: frozenset[str]) -> tuple[str, ...] | None:
    """generators.random.reach.route in the vocabulary of every target (computed once per pass)."""
    from generators.random import reach

    return reach.route(name, acted, _vocabulary(True))


def tally(rows: list[dict], targeted: dict[str, frozenset[str]] | None = None) -> dict[str, TargetCoverage]:
    targeted = annotated_targeted_ops() if targeted is None else targeted
    per_target: dict[str, TargetCoverage] = {}
    for row in rows:
        cov = per_target.setdefault(row["target"], TargetCoverage(row["target"]))
        cov.graphs += 1
        for name in row[Mode.STOCK]:
            cov.passes[name].stock += 1
        for name in row.get("presented", []):
            cov.passes[name].presented += 1
        for name, counts in _fast_counts(row).items():
            p = cov.passes[name]
            p.fast_ran += bool(counts["ran"])
            p.skipped += counts["skipped"]
            p.copied += counts.get("copied", 0)
            p.acted += bool(counts["skipped"] or counts.get("copied", 0))
        for name in exercised_passes(row, targeted):
            cov.passes[name].exercised += 1
    return dict(sorted(per_target.items()))


# Graphs holding a pass's route (on a target it acts on) after which a pass never exercised is a
# generator gap rather than too few examples (`verify fuzz --min-draws`).
DEFAULT_MIN_DRAWS = 10


@functools.lru_cache(maxsize=2)
def _vocabulary(float_target: bool) -> dict:
    from generators.random import ops_in_vocabulary

    return ops_in_vocabulary(float_target)


def target_vocabulary(target: str) -> dict:
    """The vocabulary a campaign's graphs on `target` draw from: a quantized target's leaves out
    every quarantined op (generators/random/_ops.py QUARANTINED), a float target's only those that
    are not FLOAT_ONLY (their crash is in quantization).  The campaign aims with it
    (verify.fuzz.search.focus_routes) and the verdict judges with it: a route no graph on a target
    can draw is no reason to expect the pass exercised there."""
    from verify.lowering.targets import get_target

    return _vocabulary(not get_target(target).quantized)


def route_on(name: str, target: str, acted: frozenset[str]) -> tuple[str, ...] | None:
    """The route of pass `name` (acting on ops `acted`) in `target`'s vocabulary
    (generators.random.reach.route): None when it needs none, empty when that vocabulary draws no
    op that presents it."""
    from generators.random import reach

    return reach.route(name, acted, target_vocabulary(target))


def aimed_on(name: str, target: str, acted: frozenset[str]) -> bool:
    """Does a campaign on `target` draw graphs that present pass `name`: the pass is presentable
    there (generators.random.reach.presentable_on) and the target's vocabulary draws its route?"""
    from generators.random import reach

    return reach.presentable_on(name, target, acted) and route_on(name, target, acted) != ()


def _outside(name: str, acted: frozenset[str], route: tuple[str, ...] | None,
             campaign: tuple[str, ...]) -> Outside | None:
    """Why a pass that no target of the campaign aims at stands outside it: it is reached only on
    other targets (reach.TARGET_ONLY, or quantizer-first: tosa-fp alone), or its route is drawn only
    in other targets' vocabulary.  None: no target's vocabulary draws its route at all."""
    from generators.random import reach
    from verify.lowering.targets import TARGETS

    presentable = [t for t in sorted(TARGETS) if reach.presentable_on(name, t, acted)]
    aimed = tuple(t for t in presentable if route_on(name, t, acted) != ())
    if not aimed:
        return None
    here = sorted(set(presentable) & set(campaign))
    if here:
        return Outside(aimed, f"the vocabulary of {', '.join(here)} leaves out its route ops ({', '.join(route or ())}): "
                              f"quarantined there, generators/random/_ops.py QUARANTINED and FLOAT_ONLY")
    only = reach.TARGET_ONLY.get(name)
    return Outside(aimed, only[1] if only else reach.QUANTIZER_FIRST_WHY)


def coverage_verdict(rows: list[dict], targeted: dict[str, frozenset[str]] | None = None,
                     draws: int = DEFAULT_MIN_DRAWS, acted_on: dict[str, frozenset[str]] | None = None) -> CoverageVerdict:
    """`targeted`: annotated pass -> targeted ops (what "presented" means); `acted_on`: the ops
    its route is drawn from (``ops_acted_on``; default: `targeted`'s when `targeted` is given).

    A pass counts on the targets whose graphs the campaign draws toward it (`aimed_on`: its route
    in that target's vocabulary); one no target's vocabulary can present is "not reachable with
    this vocabulary", said as such, not a gap."""
    from generators.random import reach
    from verify.lowering.targets import TARGETS

    # a pass no pipeline invoked in enough graphs is a gap only when the campaign ran every one
    every_target = frozenset(TARGETS)
    if targeted is None:
        targeted, acted_on = annotated_targeted_ops(), ops_acted_on()
    acted_on = targeted if acted_on is None else acted_on
    campaign = tuple(sorted({row["target"] for row in rows}))
    unreachable = {name: reach.UNREACHABLE[name] for name in targeted if name in reach.UNREACHABLE}
    standings = []
    for name in sorted(set(targeted) - set(unreachable)):
        acted = acted_on.get(name, frozenset())
        route = _route(name, frozenset(acted))
        acting = [row for row in rows if reach.reachable_on(name, row["target"])]
        exercised = sum(name in exercised_passes(row, targeted) for row in acting)
        aimed = {target for target in campaign if aimed_on(name, target, acted)}
        mine = [row for row in acting if row["target"] in aimed]
        targets = tuple(sorted({row["target"] for row in mine}))
        invoked = [row for row in mine if name in row[Mode.STOCK]
                   or (name in reach.RUN_OUTSIDE_MANAGERS and name in _fast_counts(row))]
        drawn = [row for row in invoked if route is None or set(route) & set(row.get("op_names", ()))]
        presented = sum(name in row.get("presented", ()) for row in mine)
        outside = None
        if exercised:
            standing = Standing.EXERCISED
        elif not targets:
            outside = _outside(name, acted, route, campaign)
            standing = Standing.OUTSIDE_CAMPAIGN if outside else Standing.NOT_IN_VOCABULARY
        elif not invoked and not every_target <= set(campaign):
            standing = Standing.OUTSIDE_CAMPAIGN
            outside = Outside(every=tuple(sorted(every_target)))
        elif len(drawn) >= draws or (not invoked and len(mine) >= draws):
            standing = Standing.GENERATOR_GAP  # (no pipeline invoked it: a missing IN_NO_PIPELINE reason)
        else:
            standing = Standing.TOO_FEW_EXAMPLES
        standings.append(PassStanding(name, standing, targets, route, len(drawn), len(invoked), presented, exercised,
                                      outside))
    return CoverageVerdict(len(rows), campaign, len(targeted), unreachable, tuple(standings), draws)


def _target_reach(cov: TargetCoverage, targeted: dict[str, frozenset[str]]) -> TargetReach:
    """Exercised / reachable on one target: the annotated passes its pipeline invoked (fastpass's
    count for those run outside the observed managers) that the campaign's graphs on it are drawn
    to present (`aimed_on`), plus any it exercised anyway."""
    from generators.random import reach

    def invoked_here(n: str) -> bool:
        counts = cov.passes.get(n, PassCoverage())
        return bool(counts.stock or (n in reach.RUN_OUTSIDE_MANAGERS and (counts.fast_ran or counts.skipped)))

    invoked = [n for n in targeted if invoked_here(n)]
    exercised = {n for n in invoked if cov.passes[n].exercised and reach.reachable_on(n, cov.target)}
    acted_on = ops_acted_on()
    reachable = exercised | {n for n in invoked if aimed_on(n, cov.target, acted_on.get(n, frozenset()))}
    return TargetReach(cov.target, cov.graphs, len(exercised), len(reachable))


def _throughput_of(target: str, rows: list[dict], workers: int) -> Throughput | None:
    """The throughput of `rows` (one target's lines, or every line for "all targets"), their size
    and where a graph's time went (verify.fuzz.budget); None: no line records its start and finish."""
    timed = [r for r in rows if r.get("started") and r.get("finished")]
    if not timed:
        return None
    wall = max(r["finished"] for r in timed) - min(r["started"] for r in timed)
    busy = sum(r["finished"] - r["started"] for r in timed)
    split = [r for r in timed if "seconds" in r]
    if not split:
        return Throughput(target, len(timed), wall, busy, workers)
    ops = sum(r["ops"] for r in split) / len(split)
    budget = time_budget(split)
    if budget is not None:
        return Throughput(target, len(timed), wall, busy, workers, ops, budget=budget)
    # Lines written before the budget's parts were recorded: the three times they have.
    mean = {k: sum(r["seconds"][k] for r in split) / len(split) for k in ("prepare", Mode.STOCK, Mode.FASTPASS)}
    return Throughput(target, len(timed), wall, busy, workers, ops,
                      lowering=LoweringSeconds(mean["prepare"], mean[Mode.STOCK], mean[Mode.FASTPASS]))


def coverage_summary(folder: Path, min_draws: int = DEFAULT_MIN_DRAWS) -> CoverageSummary | None:
    """The pass coverage of the campaign whose coverage lines are in `folder` (None: no line):
    per target the tally, throughput and exercised/reachable count, and the verdict."""
    rows, workers = read_coverage(folder)
    if not rows:
        return None
    targeted = annotated_targeted_ops()
    per_target = tally(rows, targeted)
    throughput = [_throughput_of(target, [r for r in rows if r["target"] == target], workers)
                  for target in per_target]
    if len(per_target) > 1:  # per-target walls overlap when targets share the workers
        throughput.append(_throughput_of("all targets", rows, workers))
    return CoverageSummary(per_target, targeted, tuple(t for t in throughput if t is not None),
                           tuple(_target_reach(cov, targeted) for cov in per_target.values()),
                           coverage_verdict(rows, targeted, min_draws, acted_on=ops_acted_on()))


def summarize_coverage(folder: Path, min_draws: int = DEFAULT_MIN_DRAWS) -> str:
    """`coverage_summary` as printed (written by verify.report.fuzz_coverage)."""
    return text(coverage_summary(folder, min_draws))


def campaign_failed(folder: Path, min_draws: int = DEFAULT_MIN_DRAWS) -> bool:
    """Did the campaign whose coverage lines are in `folder` leave a generator gap?"""
    rows, _ = read_coverage(folder) if folder.is_dir() else ([], 0)
    return bool(rows) and coverage_verdict(rows, draws=min_draws).failed
