"""Run the benchmark: interleaved pairs (stock, fastpass) of fresh processes, same hash seed.

Several cases (models × targets) share one run, interleaved: round k lowers pair k of every
case before any case gets pair k+1, so a change in machine load spreads over all cases and both
modes instead of landing on one of them. Every pair is also checked for identical output
(delegate bytes, delegate TOSA, final graph, same quantized program): a fast number with a
different output is a failure, not a result.
"""

from __future__ import annotations

import os
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from fastpass import FEATURES as ALL_FEATURES
from verify.bench.models import BenchModel, resolve
from verify.report.bench.results import AblationRow, BenchResult, CaseResult, Pair, WorkerRun, identity_problems
from verify.jobs.launcher import DEFAULT_MEMORY_LIMIT, RunStopped, stop_signal
from verify.lowering.mode import Mode
from verify.report.names import safe_name


@dataclass
class BenchOptions:
    models: tuple[str, ...] = ("sleepnet",)
    targets: tuple[str, ...] = ("ethos-u55",)
    pairs: int = 3
    features: tuple[str, ...] = ()  # empty: all
    hash_seed: int = 0
    ablation: bool = False
    timeout: float = 1800.0
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT  # bytes of a lowering process group's RSS; None: none
    # Where the lowerings' logs and results go; None: a fresh temporary folder, made when the bench
    # starts (`run_bench`), not whenever options are built (that left an empty folder each time).
    work_dir: Path | None = None


def new_work_dir() -> Path:
    """A bench's own temporary folder: kept after the bench (its logs are what a failure names)."""
    return Path(tempfile.mkdtemp(prefix="fastpass-bench-"))


class BenchError(RuntimeError):
    pass


@dataclass(frozen=True)
class BenchCase:
    model: BenchModel
    target: str

    @property
    def tag(self) -> str:
        return safe_name(f"{self.model.name}-{self.target}")


# The one place a lowering is started; tests replace it to feed synthetic runs.
Lowering = Callable[[BenchOptions, BenchCase, Mode, tuple[str, ...], str], WorkerRun]


def lower_in_fresh_process(options: BenchOptions, case: BenchCase, mode: Mode, features: tuple[str, ...],
                           tag: str) -> WorkerRun:
    """One lowering in a fresh process: a bench-lowering job (verify.jobs, its handler
    verify.bench.worker.run_job), started by verify.jobs.launcher like every harness worker (own
    process group: nothing it starts outlives a timeout, a stop or the bench itself)."""
    from verify.jobs import Job, JobKind, execute
    from verify.jobs.launcher import WorkerMemoryExceeded, WorkerTimeout

    settings = {"model": case.model.worker_reference, "target": case.target, "mode": mode.value,
                "features": list(features)}
    job = Job(JobKind.BENCH_LOWERING, settings, options.work_dir / f"{tag}.log", hash_seed=options.hash_seed,
              timeout=options.timeout, memory_limit=options.memory_limit)
    try:
        ended = execute(job)
    except WorkerTimeout:
        raise BenchError(f"{tag}: timed out after {options.timeout:.0f} s") from None
    except WorkerMemoryExceeded as exc:
        raise BenchError(f"{tag}: {exc}; log {job.log_path}") from None
    if ended.returncode != 0 or not ended.written:
        tail = "\n".join(job.log_path.read_text(errors="replace").splitlines()[-20:])
        raise BenchError(f"{tag}: lowering process failed (exit {ended.returncode}); log tail:\n{tail}")
    return WorkerRun.from_json(ended.read())


def ablation_configs() -> list[tuple[str, tuple[str, ...]]]:
    alone = [(f"{f} alone", (f,)) for f in ALL_FEATURES]
    cumulative = [(" + ".join(ALL_FEATURES[: i + 1]), ALL_FEATURES[: i + 1]) for i in range(1, len(ALL_FEATURES))]
    return alone + cumulative


def run_bench(options: BenchOptions, progress: Callable[[str], None] = lambda s: None,
              lowering: Lowering = lower_in_fresh_process) -> BenchResult:
    """Every pair of every case, then the ablation. Stopped (SIGINT/SIGTERM under
    verify.jobs.launcher.stop_on_signals: the lowering in flight is killed and raises RunStopped),
    it returns the pairs finished so far, `stopped_by` the signal: the caller reports them."""
    if options.work_dir is None:
        options.work_dir = new_work_dir()
    options.work_dir.mkdir(parents=True, exist_ok=True)
    load_at_start = os.getloadavg()[0]
    cases = [BenchCase(resolve(model, options.work_dir / "models"), target)
             for model in options.models for target in options.targets]
    pairs: list[list[Pair]] = [[] for _ in cases]
    errors: list[str | None] = [None for _ in cases]
    ablation: list[AblationRow] = []
    try:
        for i in range(options.pairs):
            for number, case in enumerate(cases, 1):
                if errors[number - 1] is not None:
                    continue
                where = f"pair {i + 1}/{options.pairs}, case {number}/{len(cases)} {case.model.name} on {case.target}"
                try:
                    pairs[number - 1].append(_run_pair(options, case, i, where, progress, lowering))
                except BenchError as exc:
                    # The other cases go on (a long run keeps what it measured); this one stops here.
                    errors[number - 1] = str(exc)
                    progress(f"{where}: FAILED, no further pairs of this case: {exc}")
        for number, case in enumerate(cases, 1):
            if options.ablation and errors[number - 1] is None:
                try:
                    ablation += _run_ablation(options, case, progress, lowering,
                                              tuple(p.stock for p in pairs[number - 1]))
                except BenchError as exc:
                    errors[number - 1] = f"ablation: {exc}"
                    progress(f"ablation {case.model.name} on {case.target}: FAILED: {exc}")
        stopped_by = None
    except RunStopped:
        stopped_by = signal.Signals(stop_signal()).name
        progress(f"stopped by {stopped_by}: {sum(map(len, pairs))} pair(s) finished are reported")
    return BenchResult(
        hash_seed=options.hash_seed, features=tuple(options.features) or tuple(ALL_FEATURES), pairs=options.pairs,
        cases=tuple(CaseResult(c.model.name, c.target, tuple(p), c.model.graph_spec, e)
                    for c, p, e in zip(cases, pairs, errors)),
        ablation=tuple(ablation), load_at_start=load_at_start, load_at_end=os.getloadavg()[0], cpus=os.cpu_count(),
        stopped_by=stopped_by)


def _run_pair(options: BenchOptions, case: BenchCase, index: int, where: str, progress,
              lowering: Lowering) -> Pair:
    progress(f"{where}: stock ...")
    stock = lowering(options, case, Mode.STOCK, (), f"pair{index}-{case.tag}-{Mode.STOCK}")
    progress(f"{where}: stock {stock.lower_seconds:.1f} s; fastpass ...")
    fast = lowering(options, case, Mode.FASTPASS, options.features, f"pair{index}-{case.tag}-{Mode.FASTPASS}")
    pair = Pair(index, stock, fast, identity_problems(stock, fast))
    progress(f"{where}: fastpass {fast.lower_seconds:.1f} s, lower() {stock.lower_seconds / fast.lower_seconds:.2f}x, "
             + ("identical" if pair.identical else "NOT IDENTICAL: " + ", ".join(pair.problems)))
    return pair


def _run_ablation(options: BenchOptions, case: BenchCase, progress, lowering: Lowering,
                  pair_stocks: tuple[WorkerRun, ...]) -> list[AblationRow]:
    """One round: stock, then each configuration, each in a fresh process. Each configuration's
    output must match that stock lowering's; its ratios are against the median of every stock
    lowering of the case in the run (`pair_stocks` and that one: see `AblationRow`)."""
    where = f"ablation {case.model.name} on {case.target}"
    progress(f"{where}: stock ...")
    stock = lowering(options, case, Mode.STOCK, (), f"ablation-{case.tag}-{Mode.STOCK}")
    timing_stocks = (*pair_stocks, stock)
    rows = []
    for name, features in ablation_configs():
        progress(f"{where}: {name} ...")
        run = lowering(options, case, Mode.FASTPASS, features, f"ablation-{case.tag}-" + "-".join(features))
        rows.append(AblationRow(case.model.name, case.target, name, features, stock, run,
                                identity_problems(stock, run), timing_stocks))
    return rows
