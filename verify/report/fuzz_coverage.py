"""The fuzz campaign's pass-coverage summary, as text: per target a table of what stock and fastpass
did with each pass, the throughput and where a graph's time went, per target how many reachable
annotated passes were exercised, then the coverage verdict and why each of the rest was not.

Why here: the report package writes every command's text, and this summary is what `verify fuzz`
prints at the end (and the fuzz session's pytest terminal summary). The counting and judging stay
in the campaign: verify.fuzz.coverage reads the coverage lines, tallies them and gives each
reachable pass its `Standing` (with generators.random.reach), verify.fuzz.budget splits a graph's
time. They build the typed values below, which this module only formats; it imports nothing above
it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from enum import Enum


@dataclass
class PassCoverage:
    """What one target's graphs did with one pass (verify.fuzz.coverage's docstring defines each count)."""

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


class Standing(Enum):
    """Where one reachable annotated pass stands after a campaign."""

    EXERCISED = "exercised"
    OUTSIDE_CAMPAIGN = "outside this campaign"  # acts only on targets the campaign did not run
    TOO_FEW_EXAMPLES = "too few examples"  # its route was drawn in fewer than min_draws graphs
    GENERATOR_GAP = "GENERATOR GAP"  # drawn in min_draws graphs or more, never exercised
    # no target's vocabulary draws an op that presents it (every such op quarantined): a known
    # limit of the vocabulary, said as such; tests/test_fuzz.py keeps the default campaign free of it
    NOT_IN_VOCABULARY = "not reachable with this vocabulary"


@dataclass(frozen=True)
class Outside:
    """Why a pass stands outside a campaign: it is reached only on targets the campaign did not
    run (`only_on`: those targets, `why` they alone), or (`only_on` empty) no pipeline of the
    targets it ran invoked it, and only a campaign on `every` target tells a pipeline that lacks
    the pass from a missing reason."""

    only_on: tuple[str, ...] = ()
    why: str = ""
    every: tuple[str, ...] = ()

    def describe(self, targets: tuple[str, ...]) -> str:
        if self.only_on:
            return f"reached only on {', '.join(self.only_on)} ({self.why}); add it to verify fuzz --targets"
        return (f"no pipeline of {', '.join(targets)} invoked it; run every target ({', '.join(self.every)}) to tell "
                f"a pipeline that lacks it from a missing reason")


@dataclass(frozen=True)
class PassStanding:
    name: str
    standing: Standing
    targets: tuple[str, ...]  # the campaign's targets the pass acts on
    route: tuple[str, ...] | None  # vocabulary ops that reach it; None: every graph does
    drawn: int  # graphs on `targets` that held its route and whose stock pipeline invoked it
    invoked: int  # graphs on `targets` whose stock pipeline invoked it
    presented: int  # graphs on `targets` in which its targeted ops reached it
    exercised: int  # graphs on `targets` that exercised it (verify.fuzz.coverage's docstring)
    outside: Outside | None = None  # for OUTSIDE_CAMPAIGN: why

    def describe(self, min_draws: int) -> str:
        where = ", ".join(self.targets) or "no target of this campaign"
        route = "any graph" if self.route is None else "route " + ", ".join(self.route)
        counts = (f"{route}: drawn in {self.drawn} graphs, invoked in {self.invoked}, presented in {self.presented}, "
                  f"exercised in {self.exercised}")
        if self.standing is Standing.OUTSIDE_CAMPAIGN:
            return f"{self.name}: outside this campaign: {self.outside.describe(self.targets) if self.outside else ''}"
        if self.standing is Standing.NOT_IN_VOCABULARY:
            return (f"{self.name}: not reachable with this vocabulary: no target's vocabulary draws an op that presents "
                    f"it (the ops that would are quarantined: generators/random/_ops.py QUARANTINED); list it in "
                    f"generators/random/reach.py UNREACHABLE with the reason")
        if self.standing is Standing.TOO_FEW_EXAMPLES:
            return (f"{self.name} [{where}]: too few examples: {counts} (< {min_draws}: run more examples, "
                    f"verify fuzz --examples)")
        return (f"{self.name} [{where}]: GENERATOR GAP: {counts} (>= {min_draws}): the route does not reach the "
                f"pass, or generators/random/reach.py lacks its reason")


@dataclass(frozen=True)
class CoverageVerdict:
    """Reachable annotated passes and whether the campaign exercised each (verify.fuzz.coverage.coverage_verdict)."""

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
        unvocabular = self.count(Standing.NOT_IN_VOCABULARY)
        out = [f"coverage verdict: {len(self.reachable)} reachable annotated passes ({self.annotated} annotated, "
               f"{len(self.unreachable)} listed unreachable), {exercised} exercised with fastpass on, "
               f"{len(rest)} not ({self.count(Standing.GENERATOR_GAP)} generator gaps, "
               f"{self.count(Standing.TOO_FEW_EXAMPLES)} too few examples, "
               f"{self.count(Standing.OUTSIDE_CAMPAIGN)} outside this campaign"
               + (f", {unvocabular} not reachable with this vocabulary" if unvocabular else "")
               + f"); {self.graphs} graphs on {', '.join(self.targets)}"]
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


@dataclass(frozen=True)
class TimeBudget:
    """Mean seconds per graph over `graphs` coverage lines.  Lowering times exclude their
    per-pass snapshots, which are counted apart; `rest` is what no part accounts for: final
    snapshots, the program copies, the checks (and the order recheck of a graph that failed them).
    Computed from the coverage lines by verify.fuzz.budget.time_budget; written here."""

    graphs: int
    total: float  # from the graph's start to its finish
    prepare: float
    stock: float
    stock_snapshots: float
    fastpass: float
    fastpass_snapshots: float
    serialize: float
    reference: float

    @property
    def rest(self) -> float:
        return self.total - (self.prepare + self.stock + self.stock_snapshots + self.fastpass
                             + self.fastpass_snapshots + self.serialize + self.reference)

    @property
    def ratio(self) -> float:
        """The harness's time per graph over the stock lowering alone."""
        return self.total / self.stock

    @property
    def ratio_with_free_fastpass(self) -> float:
        """`ratio` had fastpass's lowering (less its snapshots) taken no time: the floor of any fastpass speed-up."""
        return (self.total - self.fastpass) / self.stock

    @property
    def ratio_with_free_fastpass_and_snapshots(self) -> float:
        """`ratio_with_free_fastpass` with no per-pass snapshots either (in either mode)."""
        return (self.total - self.fastpass - self.stock_snapshots - self.fastpass_snapshots) / self.stock


@dataclass(frozen=True)
class LoweringSeconds:
    """Mean seconds per graph of the three times coverage lines written before the budget's parts
    were recorded have: preparation and each mode's lowering (per-pass snapshots included)."""

    prepare: float
    stock: float
    fastpass: float


@dataclass(frozen=True)
class Throughput:
    """One throughput paragraph: `graphs` coverage lines with a start and a finish on `target` ("all
    targets": every line), `wall` seconds from the first start to the last finish on `workers`
    workers, `busy` seconds inside verification summed over the graphs; for the lines that also
    record their time by part, `ops` per graph on average and where the time went: `budget` when
    some line records every part, else `lowering` (lines written before the parts were)."""

    target: str
    graphs: int
    wall: float
    busy: float
    workers: int
    ops: float | None = None
    budget: TimeBudget | None = None
    lowering: LoweringSeconds | None = None


@dataclass(frozen=True)
class TargetReach:
    """On one target, in `graphs` graphs: how many of the `reachable` annotated passes its pipeline
    invoked the campaign `exercised` (verify.fuzz.coverage decides which are reachable)."""

    target: str
    graphs: int
    exercised: int
    reachable: int


@dataclass(frozen=True)
class CoverageSummary:
    """A campaign's pass coverage (verify.fuzz.coverage.coverage_summary), what `text` writes."""

    per_target: dict[str, TargetCoverage]  # by target name, sorted
    targeted: dict[str, frozenset[str]]  # annotated pass -> its targeted ops (none: every graph presents it)
    throughput: tuple[Throughput, ...]  # per target with timed lines, then "all targets" for several targets
    reach: tuple[TargetReach, ...]  # per target
    verdict: CoverageVerdict


def text(summary: CoverageSummary | None) -> str:
    """The summary as printed (None: the campaign recorded no graph)."""
    if summary is None:
        return "pass coverage: no graphs recorded"
    lines: list[str] = []
    for cov in summary.per_target.values():
        lines += _target_table(cov, summary.targeted)
    lines += [_throughput(t) for t in summary.throughput]
    lines.append("per target:")
    lines += [f"  {r.target}: exercised {r.exercised} of the {r.reachable} reachable annotated passes its "
              f"pipeline invoked, in {r.graphs} graphs" for r in summary.reach]
    lines += summary.verdict.lines()
    return "\n".join(lines)


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


def _throughput(t: Throughput) -> str:
    """Graphs/min, with the graphs' size and where a graph's time went.

    Wall time runs from the first start to the last finish of the target's graphs, so it is a
    per-target figure only when the target had the workers to itself (tox -e fuzz with verify
    fuzz --targets tosa-int); otherwise read the "all targets" paragraph."""
    out = (f"throughput {t.target}: {t.graphs} graphs fully verified (both modes, every check, reference model) "
           f"in {t.wall / 60:.1f} min wall on {t.workers} worker(s) = {t.graphs / max(t.wall, 1e-9) * 60:.1f} "
           f"graphs/min; {t.busy / t.graphs:.1f} s per graph inside verification")
    if t.budget is not None:
        lines = [f"graphs of {t.ops:.1f} ops on average; the stock lowering alone caps this at "
                 f"{60 / max(t.budget.stock, 1e-9) * t.workers:.0f} graphs/min on {t.workers} worker(s)",
                 *_budget_lines(t.budget)]
        return "\n  ".join([out, *lines])
    if t.lowering is not None:
        mean = t.lowering
        out += (f"\n  graphs of {t.ops:.1f} ops on average; per graph: prepare {mean.prepare:.2f} s, "
                f"stock lowering {mean.stock:.2f} s, fastpass lowering {mean.fastpass:.2f} s (both with "
                f"per-pass snapshots); final snapshots, reference model and checks the rest; "
                f"stock lowering alone caps this at "
                f"{60 / max(mean.stock, 1e-9) * t.workers:.0f} graphs/min on {t.workers} worker(s)")
    return out


def _budget_lines(b: TimeBudget) -> list[str]:
    """Two lines: the ratios to the stock lowering alone, then where the rest of a graph's time went."""
    return [f"time per graph {b.total:.2f} s = {b.ratio:.2f}x the stock lowering alone ({b.stock:.2f} s, "
            f"less its per-pass snapshots; {b.graphs} graphs); with fastpass's lowering free it would "
            f"still be {b.ratio_with_free_fastpass:.2f}x, and with every per-pass snapshot free as well "
            f"{b.ratio_with_free_fastpass_and_snapshots:.2f}x",
            f"the rest per graph: prepare {b.prepare:.2f} s, fastpass lowering {b.fastpass:.2f} s, "
            f"per-pass snapshots {b.stock_snapshots:.2f} s stock + {b.fastpass_snapshots:.2f} s fastpass, "
            f"serialization {b.serialize:.2f} s, reference model {b.reference:.2f} s, "
            f"other checks and copies {b.rest:.2f} s"]
