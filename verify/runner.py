"""Run cases: lower(full) ∥ lower(fast) in a worker under a pinned hash seed, then compare.

Per case:
1. a worker at the pinned seed lowers the quantized program stock, then with fastpass;
2. a null-check worker lowers it stock under another seed (in parallel), to report stock
   executorch's own nondeterminism across hash seeds, localised to a pass;
3. if full and fast differ, a third worker lowers stock again at the pinned seed: if that
   differs from the first stock lowering too, the case is `nondeterministic` (the harness
   cannot tell), otherwise `divergent`.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from verify.cases import Case
from verify.compare.checks import CheckResult, compare, first_divergent_pass
from verify.lowering.lower import LoweringResult

VERDICTS = ("identical", "divergent", "error", "nondeterministic")


@dataclass
class RunOptions:
    features: tuple[str, ...] = ()
    hash_seed: int = 0
    null_seed: int | None = 1  # None: no cross-seed null check
    reference_sets: int = 3
    timeout: float = 1800.0
    out_dir: Path = Path("verify-out")
    keep_all: bool = False
    second_mode: str = "fast"  # "full" makes the pinned comparison a stock-vs-stock null run
    calibration: str = "histogram"  # see verify.lowering.quantize.CALIBRATIONS


@dataclass
class CaseReport:
    model: str
    target: str
    verdict: str
    first_divergent_pass: str | None = None
    checks: dict[str, CheckResult] = field(default_factory=dict)
    error: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    null_check: dict | None = None
    fastpass_stats: dict | None = None
    artifacts: str | None = None
    wall_seconds: float = 0.0

    def to_json(self) -> dict:
        return {
            "model": self.model, "target": self.target, "verdict": self.verdict,
            "first_divergent_pass": self.first_divergent_pass,
            "checks": {name: r.passed for name, r in self.checks.items()},
            "check_details": {name: r.to_json() for name, r in self.checks.items() if not r.passed},
            "error": self.error, "seconds": self.seconds, "wall_seconds": self.wall_seconds,
            "null_check": self.null_check, "fastpass_stats": self.fastpass_stats,
            "artifacts": self.artifacts,
        }


class WorkerFailure(RuntimeError):
    pass


def _run_worker(case: Case, name: str, lowerings: list, seed: int, options: RunOptions, case_dir: Path) -> dict:
    job = {"name": name, "model": case.model, "target": case.target, "lowerings": lowerings,
           "out_dir": str(case_dir), "reference_sets": options.reference_sets,
           "calibration": options.calibration}
    job_path = case_dir / f"{name}.job.json"
    job_path.write_text(json.dumps(job, indent=1))
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    with open(case_dir / f"{name}.log", "w") as log:
        try:
            proc = subprocess.run([sys.executable, "-m", "verify.worker", str(job_path)], stdout=log,
                                  stderr=subprocess.STDOUT, env=env, timeout=options.timeout)
        except subprocess.TimeoutExpired:
            raise WorkerFailure(f"timed out after {options.timeout:.0f} s (worker {name}, log {log.name})") from None
    status_path = case_dir / f"{name}.status.json"
    status = json.loads(status_path.read_text()) if status_path.exists() else {}
    if status.get("prepare_error"):
        raise WorkerFailure(status["prepare_error"])
    if proc.returncode != 0:
        raise WorkerFailure(f"worker {name} exited with code {proc.returncode} "
                            f"({'killed by signal ' + str(-proc.returncode) if proc.returncode < 0 else 'error'}); "
                            f"log: {case_dir / (name + '.log')}\n{_tail(case_dir / (name + '.log'))}")
    results = {}
    for label, _, _ in lowerings:
        with open(case_dir / f"{name}.{label}.pkl", "rb") as f:
            results[label] = pickle.load(f)
    return results


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _null_check(full: LoweringResult, other: LoweringResult, seeds: tuple[int, int]) -> dict:
    checks = compare(full, other)
    failed = [n for n, r in checks.items() if not r.passed]
    return {"seeds": list(seeds), "identical": not failed, "differs_in": failed,
            "first_divergent_pass": first_divergent_pass(full, other, checks),
            "details": {n: checks[n].details[:3] for n in failed}}


def run_case(case: Case, options: RunOptions) -> CaseReport:
    start = time.perf_counter()
    case_dir = options.out_dir / case.slug
    if case_dir.exists():
        shutil.rmtree(case_dir)
    case_dir.mkdir(parents=True)
    report = CaseReport(case.model, case.target, "error", artifacts=str(case_dir))
    features = list(options.features)
    with ThreadPoolExecutor(max_workers=2) as pool:
        main = pool.submit(_run_worker, case, "pinned", [["full", "full", []], ["fast", options.second_mode, features]],
                           options.hash_seed, options, case_dir)
        null = (pool.submit(_run_worker, case, "null", [["full", "full", []]], options.null_seed, options, case_dir)
                if options.null_seed is not None else None)
        try:
            results = main.result()
        except WorkerFailure as exc:
            report.error = str(exc)
            report.wall_seconds = time.perf_counter() - start
            if null is not None:
                null.cancel()
            return report
        full, fast = results["full"], results["fast"]
        report.seconds = {"full": full.seconds, "fast": fast.seconds}
        report.fastpass_stats = fast.fastpass_stats
        report.checks = compare(full, fast)
        if null is not None:
            try:
                report.null_check = _null_check(full, null.result()["full"], (options.hash_seed, options.null_seed))
            except WorkerFailure as exc:
                report.null_check = {"error": str(exc)}
    failed = [r for r in report.checks.values() if not r.passed]
    if not failed:
        report.verdict = "identical"
    elif not full.ok and not fast.ok and report.checks["outcome"].passed:
        report.verdict = "error"
        report.error = full.error.splitlines()[0]
    else:
        report.first_divergent_pass = first_divergent_pass(full, fast, report.checks)
        report.verdict = "divergent"
        try:
            again = _run_worker(case, "recheck", [["full", "full", []]], options.hash_seed, options, case_dir)["full"]
            if any(not r.passed for r in compare(full, again).values()):
                report.verdict = "nondeterministic"
        except WorkerFailure as exc:
            report.error = f"recheck of stock determinism failed: {exc}"
    if report.verdict == "identical" and not options.keep_all:
        for pkl in case_dir.glob("*.pkl"):
            pkl.unlink()
    report.wall_seconds = time.perf_counter() - start
    return report


def precheck(case: Case) -> CaseReport | None:
    """A case that is wrong on its face gets an error verdict without spending a worker."""
    from verify.cases import builtin_models
    from verify.lowering.targets import TARGETS

    if case.target not in TARGETS:
        return CaseReport(case.model, case.target, "error",
                          error=f"unknown target {case.target!r}; known targets: {', '.join(TARGETS)}")
    if ":" not in case.model and case.model not in builtin_models():
        return CaseReport(case.model, case.target, "error",
                          error=f"unknown model {case.model!r}; built-in models: {', '.join(builtin_models())}; "
                                "or pass file.py:factory / module:factory")
    return None


def run_cases(cases: list[Case], options: RunOptions,
              progress: Callable[[str, Case, CaseReport | None], None] = lambda *a: None) -> list[CaseReport]:
    """Run every case; a broken case is recorded and the run goes on."""
    reports = []
    for case in cases:
        report = precheck(case)
        if report is None:
            progress("start", case, None)
            try:
                report = run_case(case, options)
            except Exception as exc:  # noqa: BLE001 - one broken case must not stop the run
                report = CaseReport(case.model, case.target, "error",
                                    error=f"harness error: {type(exc).__name__}: {exc}")
        reports.append(report)
        progress("done", case, report)
    return reports
