"""Verify random graphs: one graph, both modes, every check — and keep what fails.

Used by the fuzz tests (Hypothesis drives and shrinks the graphs); `python -m verify run
--random N` takes only `draw_graphs` from here (its cases then run as any run's do, in
workers). Both modes run in this process under its hash seed: that is what makes a graph cost
seconds, not tens of seconds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from verify.compare.checks import CheckResult
from verify.compare.comparison import Comparison, compare_lowerings, relower_in_process
from verify.compare.divergence import Divergence, OrderRecheck
from verify.fuzz.coverage import ops_acted_on, record_coverage, target_vocabulary
from verify.lowering.heap import freeze_long_lived_heap, release_long_lived_heap
from verify.lowering.lower import LoweringResult, lower
from verify.lowering.mode import Mode
from verify.lowering.quantize import RANDOM_GRAPH_CALIBRATION, PrepareError, export_program
from verify.lowering.targets import get_target
from verify.report.reproducer import Manifest, Producer, Replayed, Reproducer, save
from verify.vocabulary import Verdict


@dataclass
class CheckedGraph:
    """One random graph compared on one target (verify.compare.Comparison), with the timings its
    coverage line records."""

    spec: object
    target: str
    comparison: Comparison
    started: float = 0.0  # wall clock (time.time) around the whole verification
    finished: float = 0.0
    prepare_seconds: float = 0.0  # build + export + quantize, shared by both modes

    @property
    def stock(self) -> LoweringResult:
        return self.comparison.stock

    @property
    def fastpass(self) -> LoweringResult:
        return self.comparison.fastpass

    @property
    def checks(self) -> dict[str, CheckResult]:
        return self.comparison.checks

    @property
    def order_recheck(self) -> OrderRecheck | None:
        """Made when the checks failed: stock under two opposite node-set orders."""
        return self.comparison.order_recheck

    @property
    def verdict(self) -> Verdict:
        return self.comparison.verdict

    @property
    def failed(self) -> list[str]:
        return self.comparison.failed

    @property
    def divergent(self) -> bool:
        """Checks failed, and stock under no node order gives fastpass's result (a fuzz failure)."""
        return self.comparison.divergent

    @property
    def first_divergence(self) -> Divergence | None:
        return self.comparison.first_divergence

    @property
    def first_divergent_pass(self) -> str | None:
        """The first divergence's label: what messages and reproducers carry."""
        where = self.first_divergence
        return where.label if where else None

    def explain(self) -> str:
        lines = [f"{self.target}: fastpass differs from stock in {', '.join(self.failed)}; "
                 f"first divergent pass: {self.first_divergent_pass}"]
        for name in self.failed:
            lines += [f"  {name}: {d}" for d in self.checks[name].details[:4]]
        if self.order_recheck is not None:
            lines.append("  " + self.comparison.explanation)
        return "\n".join(lines)


# The fuzz campaign hunts faults in every annotation fastpass can be told to use, proven or not
# (fastpass.enabled's trust="all"): a random graph that breaks an unproven annotation is found
# before anyone proves it, and the proven ones are among those exercised.
FUZZ_TRUST = "all"


def verify_graph(spec, target: str = "tosa-int", features: tuple[str, ...] = (),
                 reference_sets: int = 1, calibration: str = RANDOM_GRAPH_CALIBRATION) -> CheckedGraph:
    """Lower `spec` stock and with fastpass (trust `FUZZ_TRUST`) and compare. Export/quantize
    failures raise GeneratorBug: a drawn graph that does not build is the generator's bug, never
    silently filtered."""
    from generators.random import GeneratorBug

    started = time.time()
    chosen = get_target(target)
    module, inputs = spec.build()
    try:
        program = export_program(module, inputs, chosen, calibration)
    except PrepareError as exc:
        raise GeneratorBug(f"drawn graph does not build for {target}: {exc}", spec) from exc
    prepared = time.time()
    stock = lower(program, chosen, Mode.STOCK, reference_sets=reference_sets)
    fast = lower(program, chosen, Mode.FASTPASS, features, reference_sets=reference_sets, trust=FUZZ_TRUST)
    # lower() copies the program inside: every node is made, and hashed, under the order
    comparison = compare_lowerings(stock, fast, relower_in_process(
        lambda: lower(program, chosen, Mode.STOCK, reference_sets=reference_sets)))
    return CheckedGraph(spec, target, comparison, started, time.time(), prepared - started)


def save_reproducer(spec, folder: Path, reason: str, target: str = "tosa-int",
                    calibration: str = RANDOM_GRAPH_CALIBRATION, features: tuple[str, ...] = (),
                    first_divergent_pass: str | None = None) -> Path:
    """A runnable .py (verify.report.reproducer's format): the model, its inputs, and the
    commands that replay the case (`verify replay`: as the fuzz test ran it, both modes in one
    process; `verify run`: the full harness, fresh processes)."""
    path = folder / f"graph-{spec.fingerprint()}.py"
    run_command = (f"python -m verify run --models none --model {path}:make_model --targets {target} "
                   f"--calibration {calibration} --null-seed -1")
    manifest = Manifest(Producer.FUZZ, target, tuple(features), first_divergent_pass, reason,
                        graph=spec.to_dict(), settings={"calibration": calibration})
    save(path, manifest, spec.to_python(), notes=[f"With the full harness: {run_command}", "", reason])
    return path


def replay(saved: Reproducer) -> Replayed:
    """Verify the saved graph again as the fuzz test did (both modes in this process)."""
    from generators.random import GeneratorBug

    manifest = saved.manifest
    try:
        verdict = verify_graph(saved.graph_spec(), manifest.target, manifest.features,
                               calibration=manifest.settings.get("calibration", RANDOM_GRAPH_CALIBRATION))
    except GeneratorBug as exc:
        return Replayed(Verdict.ERROR, details=(str(exc).splitlines()[0],))
    if verdict.verdict is Verdict.DIVERGENT:
        return Replayed(Verdict.DIVERGENT, verdict.first_divergent_pass, tuple(verdict.explain().splitlines()))
    if verdict.verdict is Verdict.NONDETERMINISTIC:  # stock gives fastpass's result itself (node order, Vela)
        return Replayed(Verdict.NONDETERMINISTIC, verdict.first_divergent_pass, (verdict.comparison.explanation,))
    return Replayed(Verdict.IDENTICAL)


# ---- the fuzz property -----------------------------------------------------------------------

def fuzz_graphs(target: str, max_ops: int = 12, exercised: frozenset[str] = frozenset(), shard: int = 0,
                shards: int = 1):
    """The graphs a fuzz test draws on `target`: a third unrestricted, the rest toward annotated
    passes reachable on `target` (their routes, generators.random.reach), so that a pass only one
    vocabulary op reaches is exercised in a campaign of hundreds of graphs, not thousands.
    Shard `shard` of `shards` aims its focused graphs at its own share of the routes
    (`focus_routes`); its plain graphs stay unrestricted.  Passes in `exercised` (an earlier
    campaign's, `exercised_in`) get no focused graphs: a campaign continued spends its graphs on
    the passes still missing."""
    from generators.random import graphs_toward

    return graphs_toward(focus_routes(target, exercised, shard, shards), max_ops=max_ops,
                         float_target=not get_target(target).quantized)


def focus_routes(target: str, exercised: frozenset[str] = frozenset(), shard: int = 0,
                 shards: int = 1) -> list[tuple[str, ...]]:
    """The routes shard `shard` of `shards` on `target` draws its focused graphs toward: the
    routes of the passes reachable there and not in `exercised`, dealt to the shards by
    `generators.random.route_share` (disjoint shares; all shards together: every route)."""
    from generators.random import route_share
    from generators.random.reach import routes_on

    float_target = not get_target(target).quantized  # may draw ops only quantization crashes on
    routes = routes_on(target, ops_acted_on(), target_vocabulary(target))  # the verdict judges with the same
    return route_share([r for name, r in routes.items() if name not in exercised], shard, shards, float_target)


def exercised_in(folder: Path) -> frozenset[str]:
    """The annotated passes the campaign recorded in `folder` exercised (its coverage verdict)."""
    from verify.fuzz.coverage import coverage_verdict, read_coverage
    from verify.report.fuzz_coverage import Standing

    rows, _ = read_coverage(folder)
    if not rows:
        return frozenset()
    return frozenset(p.name for p in coverage_verdict(rows).reachable if p.standing is Standing.EXERCISED)


def fuzz(target: str, repro_dir: Path, max_ops: int = 12, features: tuple[str, ...] = (),
         settings=None, seed: str | None = None, exercised: frozenset[str] = frozenset(), shard: int = 0,
         shards: int = 1, coverage_dir: Path | None = None) -> None:
    """Hypothesis over random graphs: every graph must lower identically in both modes.

    On failure Hypothesis shrinks the graph; the last failing graph it tries is the minimal
    one, and that one is saved as a runnable reproducer named in the assertion message.
    `seed` pins the draw (Hypothesis's @seed), e.g. to give parallel shards distinct graphs.
    `exercised`: passes whose routes get no focused graphs; `shard` of `shards`: which share of
    the routes the focused graphs aim at (`fuzz_graphs`); `coverage_dir`: where each graph's
    coverage line is appended (verify.fuzz.coverage; None: not recorded).
    """
    from hypothesis import given
    from hypothesis import seed as hypothesis_seed

    from generators.random import GeneratorBug

    last: dict = {}

    def prop(spec):
        try:
            verdict = verify_graph(spec, target, features)
        except GeneratorBug as exc:
            last.update(spec=spec, why=f"generator bug: {exc}")
            raise
        record_coverage(verdict, coverage_dir)
        if verdict.divergent:
            last.update(spec=spec, why=verdict.explain(), where=verdict.first_divergent_pass)
            raise AssertionError(verdict.explain())
        del verdict
        freeze_long_lived_heap()  # once, after the first graph: every import is done by now

    test = given(fuzz_graphs(target, max_ops, exercised, shard, shards))(prop)
    if settings is not None:
        test = settings(test)
    if seed is not None:
        test = hypothesis_seed(seed)(test)
    try:
        test()
    except BaseException as exc:
        if "spec" not in last:
            raise
        path = save_reproducer(last["spec"], repro_dir, last["why"], target, features=features,
                               first_divergent_pass=last.get("where"))
        raise AssertionError(f"{last['why']}\nminimal reproducer: {path}") from exc
    finally:
        release_long_lived_heap()


def draw_graphs(count: int, seed: int, max_ops: int = 12) -> list:
    """`count` distinct random graphs, the same ones for the same seed (for `run --random`).

    Hypothesis starts every search with the simplest graph it can draw (one op, the first of
    the vocabulary), whatever the seed; taking the first `count` draws gave `--random 1` the
    same graph for every seed.  So a pool of distinct draws is collected and `count` of them
    are chosen with `random.Random(seed)`, in the order they were drawn."""
    import random

    from hypothesis import HealthCheck, Phase, given
    from hypothesis import seed as hypothesis_seed
    from hypothesis import settings as hypothesis_settings

    from generators.random import graphs

    drawn: dict[str, object] = {}

    @hypothesis_seed(seed)
    @hypothesis_settings(max_examples=max(count * 3, 10), database=None, deadline=None, phases=[Phase.generate],
                         suppress_health_check=list(HealthCheck), derandomize=False)
    @given(graphs(max_ops=max_ops))
    def collect(spec):
        drawn.setdefault(spec.fingerprint(), spec)

    collect()
    pool = list(drawn.values())
    chosen = sorted(random.Random(seed).sample(range(len(pool)), min(count, len(pool))))
    return [pool[i] for i in chosen]
