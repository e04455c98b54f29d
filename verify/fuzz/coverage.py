"""Pass coverage of a fuzz campaign: per target and per pass, what stock did and what fastpass did.

Each verified graph appends one JSON line (`record_coverage`); `summarize_coverage` reads the
lines of every worker and prints, per target, one row per pass:

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
the campaign's targets, too few examples (its route, the vocabulary ops that reach it, was drawn
in fewer than `min_draws` graphs), or a generator gap (drawn often enough, never exercised: the
route does not reach the pass, or a reason is missing from the unreachable list).  Only a gap
fails the campaign (see `CoverageVerdict.failed`).
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from verify.fuzz.budget import TimeBudget, seconds_of
from verify.lowering.mode import Mode


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


@dataclass
class PassCoverage:
    """What one target's graphs did with one pass (see the module docstring for each count)."""

    stock: int = 0
    presented: int = 0
    fast_ran: int = 0
    skipped: int = 0
    copied: int = 0
    acted: int = 0
    exercised: int = 0


@dataclass
class TargetCoverage:
    target: str
    graphs: int = 0
    passes: dict[str, PassCoverage] = field(default_factory=lambda: defaultdict(PassCoverage))


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
    name any) were in the graph the stock lowering gave them."""
    presented = set(row.get("presented", []))
    return {name for name, counts in _fast_counts(row).items()
            if counts["ran"] and name in targeted and (name in presented or not targeted[name])}


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


def _target_table(cov: TargetCoverage, targeted: dict[str, frozenset[str]]) -> list[str]:
    names = sorted(cov.passes)
    width = max([len(n) for n in names] + [4])
    lines = [f"pass coverage, {cov.target}: {cov.graphs} graphs (graphs in which; skipped = calls, copied = nodes; "
             "* = annotated)",
             f"{'pass':<{width}}    stock  presented  fast ran  skipped   copied    acted  exercised"]
    for n in names:
        p = cov.passes[n]
        presented = "all" if n in targeted and not targeted[n] else ("-" if n not in targeted else str(p.presented))
        mark = "*" if n in targeted else " "
        lines.append(f"{n:<{width}} {mark} {p.stock:>7}  {presented:>9}  {p.fast_ran:>8}  {p.skipped:>7}  "
                     f"{p.copied:>7}  {p.acted:>7}  {p.exercised if n in targeted else '-':>9}")
    return lines


# Graphs holding a pass's route (on a target it acts on) after which a pass never exercised is a
# generator gap rather than too few examples (`verify fuzz --min-draws`).
DEFAULT_MIN_DRAWS = 10


class Standing(Enum):
    """Where one reachable annotated pass stands after a campaign."""

    EXERCISED = "exercised"
    OUTSIDE_CAMPAIGN = "outside this campaign"  # acts only on targets the campaign did not run
    TOO_FEW_EXAMPLES = "too few examples"  # its route was drawn in fewer than min_draws graphs
    GENERATOR_GAP = "GENERATOR GAP"  # drawn in min_draws graphs or more, never exercised


@dataclass(frozen=True)
class PassStanding:
    name: str
    standing: Standing
    targets: tuple[str, ...]  # the campaign's targets the pass acts on
    route: tuple[str, ...] | None  # vocabulary ops that reach it; None: every graph does
    drawn: int  # graphs on `targets` that held its route and whose stock pipeline invoked it
    invoked: int  # graphs on `targets` whose stock pipeline invoked it
    presented: int  # graphs on `targets` in which its targeted ops reached it
    exercised: int  # graphs on `targets` that exercised it (module docstring)
    outside: str = ""  # for OUTSIDE_CAMPAIGN: where it is reached instead

    def describe(self, min_draws: int) -> str:
        where = ", ".join(self.targets) or "no target of this campaign"
        route = "any graph" if self.route is None else "route " + ", ".join(self.route)
        counts = (f"{route}: drawn in {self.drawn} graphs, invoked in {self.invoked}, presented in {self.presented}, "
                  f"exercised in {self.exercised}")
        if self.standing is Standing.OUTSIDE_CAMPAIGN:
            return f"{self.name}: outside this campaign: {self.outside}"
        if self.standing is Standing.TOO_FEW_EXAMPLES:
            return (f"{self.name} [{where}]: too few examples: {counts} (< {min_draws}: run more examples, "
                    f"verify fuzz --examples)")
        return (f"{self.name} [{where}]: GENERATOR GAP: {counts} (>= {min_draws}): the route does not reach the "
                f"pass, or generators/random/reach.py lacks its reason")

@dataclass(frozen=True)
class CoverageVerdict:
    """Reachable annotated passes and whether the campaign exercised each (see the module docstring)."""

    graphs: int
    targets: tuple[str, ...]
    annotated: int
    unreachable: dict[str, str]  # listed unreachable: pass -> reason
    reachable: tuple[PassStanding, ...]
    min_draws: int

    def count(self, standing: Standing) -> int:
        return sum(p.standing is standing for p in self.reachable)

    @property
    def failed(self) -> bool:
        """A gap fails the campaign: the pass's route was drawn often enough that "too few
        examples" no longer explains it.  Too few examples only warns: a short campaign (a
        smoke run, one target) is not wrong, only inconclusive, and says so."""
        return self.count(Standing.GENERATOR_GAP) > 0

    @property
    def complete(self) -> bool:
        return self.count(Standing.EXERCISED) == len(self.reachable)

    def lines(self) -> list[str]:
        exercised = self.count(Standing.EXERCISED)
        rest = [p for p in self.reachable if p.standing is not Standing.EXERCISED]
        out = [f"coverage verdict: {len(self.reachable)} reachable annotated passes ({self.annotated} annotated, "
               f"{len(self.unreachable)} listed unreachable), {exercised} exercised with fastpass on, "
               f"{len(rest)} not ({self.count(Standing.GENERATOR_GAP)} generator gaps, "
               f"{self.count(Standing.TOO_FEW_EXAMPLES)} too few examples, "
               f"{self.count(Standing.OUTSIDE_CAMPAIGN)} outside this campaign); "
               f"{self.graphs} graphs on {', '.join(self.targets)}"]
        out += [f"  {p.describe(self.min_draws)}" for p in rest]
        out.append(f"annotated passes listed unreachable (generators/random/reach.py): {len(self.unreachable)}")
        out += [f"  {name}: {why}" for name, why in sorted(self.unreachable.items())]
        if self.failed:
            out.append(f"FUZZ COVERAGE FAILED: {self.count(Standing.GENERATOR_GAP)} reachable annotated pass(es) never "
                       f"exercised although their route was drawn in >= {self.min_draws} graphs (listed above)")
        elif not self.complete:
            out.append(f"FUZZ COVERAGE INCOMPLETE (warning): {len(rest)} reachable annotated pass(es) not exercised, "
                       f"none drawn often enough to call it a gap: a larger campaign or more targets decide")
        else:
            out.append(f"fuzz coverage complete: all {exercised} reachable annotated passes exercised with fastpass on")
        return out


def _reached_only_on(name: str) -> str:
    from generators.random import reach

    only = reach.TARGET_ONLY.get(name)
    where = f"{', '.join(only[0])} ({only[1]})" if only else f"tosa-fp ({reach.QUANTIZER_FIRST_WHY})"
    return f"reached only on {where}; add it to verify fuzz --targets"


def coverage_verdict(rows: list[dict], targeted: dict[str, frozenset[str]] | None = None,
                     draws: int = DEFAULT_MIN_DRAWS, acted_on: dict[str, frozenset[str]] | None = None) -> CoverageVerdict:
    """`targeted`: annotated pass -> targeted ops (what "presented" means); `acted_on`: the ops
    its route is drawn from (``ops_acted_on``; default: `targeted`'s when `targeted` is given)."""
    from generators.random import ops_in_vocabulary, reach
    from verify.lowering.targets import TARGETS

    # a pass no pipeline invoked in enough graphs is a gap only when the campaign ran every one
    every_target = frozenset(TARGETS)
    if targeted is None:
        targeted, acted_on = annotated_targeted_ops(), ops_acted_on()
    acted_on = targeted if acted_on is None else acted_on
    vocabulary = ops_in_vocabulary(float_target=True)  # every op some target's graphs draw
    campaign = tuple(sorted({row["target"] for row in rows}))
    unreachable = {name: reach.UNREACHABLE[name] for name in targeted if name in reach.UNREACHABLE}
    standings = []
    for name in sorted(set(targeted) - set(unreachable)):
        route = reach.route(name, acted_on.get(name, ()), vocabulary)
        acting = [row for row in rows if reach.reachable_on(name, row["target"])]
        exercised = sum(name in exercised_passes(row, targeted) for row in acting)
        if name in reach.RUN_OUTSIDE_MANAGERS:  # no observed input graph: presented = route drawn
            exercised = sum(bool(_fast_counts(row).get(name, {}).get("ran"))
                            and bool(route is None or set(route) & set(row.get("op_names", ()))) for row in acting)
        mine = [row for row in acting if reach.presentable_on(name, row["target"], acted_on.get(name, ()))]
        targets = tuple(sorted({row["target"] for row in mine}))
        invoked = [row for row in mine if name in row[Mode.STOCK]
                   or (name in reach.RUN_OUTSIDE_MANAGERS and name in _fast_counts(row))]
        drawn = [row for row in invoked if route is None or set(route) & set(row.get("op_names", ()))]
        presented = sum(name in row.get("presented", ()) for row in mine)
        outside = ""
        if exercised:
            standing = Standing.EXERCISED
        elif not targets:
            standing, outside = Standing.OUTSIDE_CAMPAIGN, _reached_only_on(name)
        elif not invoked and not every_target <= set(campaign):
            standing = Standing.OUTSIDE_CAMPAIGN
            outside = (f"no pipeline of {', '.join(targets)} invoked it; run every target "
                       f"({', '.join(sorted(every_target))}) to tell a pipeline that lacks it from a missing reason")
        elif len(drawn) >= draws or (not invoked and len(mine) >= draws):
            standing = Standing.GENERATOR_GAP  # (no pipeline invoked it: a missing IN_NO_PIPELINE reason)
        else:
            standing = Standing.TOO_FEW_EXAMPLES
        standings.append(PassStanding(name, standing, targets, route, len(drawn), len(invoked), presented, exercised,
                                      outside))
    return CoverageVerdict(len(rows), campaign, len(targeted), unreachable, tuple(standings), draws)


def _per_target_line(cov: TargetCoverage, targeted: dict[str, frozenset[str]]) -> str:
    """Exercised / reachable on one target: the annotated passes its pipeline invoked that a graph
    on it is expected to present (``reach.presentable_on``), plus any it exercised anyway."""
    from generators.random import reach

    invoked = [n for n in targeted if cov.passes.get(n, PassCoverage()).stock]
    exercised = {n for n in invoked if cov.passes[n].exercised and reach.reachable_on(n, cov.target)}
    acted_on = ops_acted_on()
    reachable = exercised | {n for n in invoked if reach.presentable_on(n, cov.target, acted_on.get(n, ()))}
    return (f"{cov.target}: exercised {len(exercised)} of the {len(reachable)} reachable annotated passes its "
            f"pipeline invoked, in {cov.graphs} graphs")


def summarize_coverage(folder: Path, min_draws: int = DEFAULT_MIN_DRAWS) -> str:
    rows, workers = read_coverage(folder)
    if not rows:
        return "pass coverage: no graphs recorded"
    targeted = annotated_targeted_ops()
    per_target = tally(rows, targeted)
    lines: list[str] = []
    for cov in per_target.values():
        lines += _target_table(cov, targeted)
    lines += [_throughput(target, [r for r in rows if r["target"] == target], workers) for target in per_target]
    if len(per_target) > 1:  # per-target walls overlap when targets share the workers
        lines.append(_throughput("all targets", rows, workers))
    lines.append("per target:")
    lines += [f"  {_per_target_line(cov, targeted)}" for cov in per_target.values()]
    lines += coverage_verdict(rows, targeted, min_draws, acted_on=ops_acted_on()).lines()
    return "\n".join(line for line in lines if line)


def _throughput(target: str, rows: list[dict], workers: int) -> str:
    """Graphs/min for one target, with the graphs' size and where a graph's time went.

    Wall time runs from the first start to the last finish of this target's graphs, so it
    is a per-target figure only when the target had the workers to itself (tox -e fuzz
    with verify fuzz --targets tosa-int); otherwise read the "all targets" line."""
    timed = [r for r in rows if r.get("started") and r.get("finished")]
    if not timed:
        return ""
    wall = max(r["finished"] for r in timed) - min(r["started"] for r in timed)
    busy = sum(r["finished"] - r["started"] for r in timed)
    text = (f"throughput {target}: {len(timed)} graphs fully verified (both modes, every check, reference model) "
            f"in {wall / 60:.1f} min wall on {workers} worker(s) = {len(timed) / max(wall, 1e-9) * 60:.1f} graphs/min; "
            f"{busy / len(timed):.1f} s per graph inside verification")
    split = [r for r in timed if "seconds" in r]
    if not split:
        return text
    ops = sum(r["ops"] for r in split) / len(split)
    budget = TimeBudget.of(split)
    if budget is not None:
        lines = [f"graphs of {ops:.1f} ops on average; the stock lowering alone caps this at "
                 f"{60 / max(budget.stock, 1e-9) * workers:.0f} graphs/min on {workers} worker(s)", *budget.describe()]
        return "\n  ".join([text, *lines])
    # Lines written before the budget's parts were recorded: the three times they have.
    mean = {k: sum(r["seconds"][k] for r in split) / len(split) for k in ("prepare", Mode.STOCK, Mode.FASTPASS)}
    text += (f"\n  graphs of {ops:.1f} ops on average; per graph: prepare {mean['prepare']:.2f} s, "
             f"stock lowering {mean[Mode.STOCK]:.2f} s, fastpass lowering {mean[Mode.FASTPASS]:.2f} s (both with "
             f"per-pass snapshots); final snapshots, reference model and checks the rest; "
             f"stock lowering alone caps this at "
             f"{60 / max(mean['stock'], 1e-9) * workers:.0f} graphs/min on {workers} worker(s)")
    return text


def campaign_failed(folder: Path, min_draws: int = DEFAULT_MIN_DRAWS) -> bool:
    """Did the campaign whose coverage lines are in `folder` leave a generator gap?"""
    rows, _ = read_coverage(folder) if folder.is_dir() else ([], 0)
    return bool(rows) and coverage_verdict(rows, draws=min_draws).failed
