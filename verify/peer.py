"""`python -m verify.peer` (`tox -e peer`): executorch's own Arm tests, three ways, test by test.

Runs the Arm test suite shipped in the installed executorch wheel (`backends/arm/test/`;
`passes` by default, `ops`, `models` or any sub-path through the arguments) stock, with
`--fastpass` and with `--fastpass=crosscheck` (verify/pytest_plugin.py), each in its own pytest
process with the same hash seed, and compares: every test must have the same outcome (passed,
failed, error, skipped, xfailed, xpassed) in every mode, and every crosschecked lowering must
be identical. Exit 0 if so, 1 on any mismatch, divergence or unchecked lowering, 2 for bad usage.
A lowering that stock itself does not reproduce under another node-set iteration order
(verify.lowering.node_order) is listed as stock-nondeterministic: it does not fail the run, and
it is not counted identical.

These are tests written by the pass authors, not by us: their graphs hit corner cases our
generators do not. Tests that need hardware or simulators we do not have skip themselves by
their own markers; the summary counts them by reason.

Every mode runs under one pinned hash seed (`--hash-seed`, default 0, whatever PYTHONHASHSEED
the caller's environment holds): under different seeds set iteration orders differ between the
modes, and an outcome or a lowering could differ for that alone. Each pytest process is a
worker of verify.launcher (its own process group, its xdist workers in it, killed when peer
is stopped, killed outright, or holds more memory than `--memory-limit`). Each run has a folder
of its own (`<out>/<time>-<pid>-<random>`, as `verify run`'s). On SIGINT/SIGTERM the modes
that finished are summarized and peer exits 130/143.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import signal
import sys
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.launcher import (DEFAULT_MEMORY_LIMIT, GIB, RunStopped, WorkerMemoryExceeded, launch_command,
                             stop_on_signals, stop_signal)
from verify.lowering.mode import Mode
from verify.report.verdict import Verdict


# the suite's runs: the two lowering modes (verify.lowering.mode), and crosscheck
MODES: dict[str, list[str]] = {Mode.STOCK.value: [], Mode.FASTPASS.value: ["--fastpass=on"],
                               "crosscheck": ["--fastpass=crosscheck"]}
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")


class UsageError(Exception):
    """Bad arguments: one line, exit 2."""


@dataclass
class ModeRun:
    mode: str
    report: dict[str, Any]
    seconds: float
    returncode: int
    error: str | None = None  # why the mode has no report (its pytest process failed or was killed)

    @property
    def outcomes(self) -> dict[str, str]:
        return self.report["outcomes"]

    @classmethod
    def failed(cls, mode: str, error: str, seconds: float, returncode: int) -> ModeRun:
        report = {"mode": mode, "outcomes": {}, "outcome_counts": {}, "skip_reasons": {}, "records": [],
                  "crosscheck": None, "lost_workers": []}
        return cls(mode, report, seconds, returncode, error)


@dataclass(frozen=True)
class PeerSettings:
    """What every pytest process of a peer run shares."""

    root: Path  # the Arm test folder (pytest's rootdir)
    out: Path  # this run's folder
    workers: int  # xdist workers per pytest process (0: none)
    timeout: int  # per test (pytest-timeout)
    extra: tuple[str, ...]  # more pytest arguments (-k)
    hash_seed: int
    memory_limit: int | None  # bytes per xdist worker (or per process without xdist); None: none

    @property
    def group_memory_limit(self) -> int | None:
        """The limit of one pytest process group: its controller and its xdist workers."""
        return None if self.memory_limit is None else self.memory_limit * max(1, self.workers)


def hash_seed(text: str) -> int:
    """`--hash-seed`: one fixed seed for every mode; 'random' would give each mode its own."""
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if not 0 <= seed <= 4294967295:
        raise argparse.ArgumentTypeError(f"{text!r}: an integer 0..4294967295, the seed every mode runs under "
                                         "('random' would give each mode a seed of its own)")
    return seed


def arm_test_root() -> Path:
    """The installed wheel's Arm test folder (executorch is a namespace package: no __file__)."""
    spec = importlib.util.find_spec("executorch.backends.arm.test")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError("executorch's Arm tests are not installed (no executorch.backends.arm.test)")
    return Path(list(spec.submodule_search_locations)[0])


def resolve_suites(names: list[str], root: Path) -> list[Path]:
    paths = []
    for name in names or ["passes"]:
        path = root / name
        if not path.exists():
            choices = ", ".join(sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("_")))
            raise UsageError(f"no {name!r} under {root} (suites: {choices}; or a file path below one)")
        paths.append(path)
    return paths


def pytest_command(mode: str, name: str, suites: list[Path], settings: PeerSettings) -> list[str]:
    """The pytest process of `mode` over `suites`; its report is `out/<name>.json`."""
    out = settings.out
    # An empty ini in our own folder: the suite runs under its own conftest, not under the ini
    # files pytest would find above site-packages (this project's pyproject.toml among them).
    ini = out / "pytest.ini"
    ini.write_text("[pytest]\n")
    workers = ["-n", str(settings.workers)] if settings.workers > 0 else ["-p", "no:xdist"]
    return [sys.executable, "-m", "pytest", "-c", str(ini), "--rootdir", str(settings.root), "-p", "no:cacheprovider",
            "-q", "--timeout", str(settings.timeout), *MODES[mode], "--fastpass-json", str(out / f"{name}.json"),
            "--fastpass-reproducers", str(out / "reproducers"), "--junitxml", str(out / f"{name}.xml"),
            *workers, *settings.extra, *map(str, suites)]


@dataclass(frozen=True)
class JobEnd:
    """How one pytest process ended: its exit status, or why it has none."""

    name: str
    returncode: int | None  # None: killed (memory limit) or never finished (stopped)
    started: float
    ended: float
    failure: str | None = None  # the memory limit it broke


def run_job(mode: str, name: str, suites: list[Path], settings: PeerSettings) -> JobEnd:
    """One pytest process, as a verify.launcher worker (raises RunStopped when peer is stopped)."""
    (settings.out / f"{name}.json").unlink(missing_ok=True)
    command = pytest_command(mode, name, suites, settings)
    log_path = settings.out / f"{name}.log"
    print(f"[{name}] {' '.join(command)}\n[{name}] progress: {log_path}", flush=True)
    started = time.perf_counter()
    try:
        code = launch_command(command, log_path=log_path, env={"PYTHONHASHSEED": str(settings.hash_seed)},
                              timeout=None, cwd=settings.out, memory_limit=settings.group_memory_limit)
    except WorkerMemoryExceeded as exc:
        return JobEnd(name, None, started, time.perf_counter(), f"{exc}; log {log_path}")
    return JobEnd(name, code, started, time.perf_counter())


def merge_reports(mode: str, reports: list[dict[str, Any]]) -> dict[str, Any]:
    """One mode's report from its shards' reports (a single report passes through unchanged)."""
    from verify.pytest_plugin import crosscheck_totals

    if len(reports) == 1:
        return reports[0]
    outcomes: dict[str, str] = {}
    skip_reasons: Counter[str] = Counter()
    records: list[dict[str, Any]] = []
    for report in reports:
        outcomes.update(report["outcomes"])
        skip_reasons.update(report["skip_reasons"])
        records.extend(report["records"])
    return {"mode": reports[0]["mode"], "outcomes": dict(sorted(outcomes.items())),
            "outcome_counts": dict(Counter(outcomes.values())), "skip_reasons": dict(skip_reasons.most_common()),
            "records": records, "crosscheck": crosscheck_totals(records) if mode == "crosscheck" else None,
            "lost_workers": [w for r in reports for w in r.get("lost_workers", [])]}


def read_mode(mode: str, out: Path, seconds: float | None = None, returncode: int | None = None) -> ModeRun:
    """The mode's report(s) in `out`: `<mode>.json`, or one `<mode>.shard<k>.json` per shard."""
    paths = sorted(out.glob(f"{mode}.json")) or sorted(out.glob(f"{mode}.shard*.json"))
    if not paths:
        raise RuntimeError(f"[{mode}] no report in {out}; see {out / f'{mode}*.log'}")
    reports = [json.loads(p.read_text()) for p in paths]
    report = merge_reports(mode, reports)
    if seconds is None:  # read back, not run: the longest shard's own pytest session
        seconds = max(r.get("seconds", 0.0) for r in reports)
    counts = Counter(report["outcomes"].values())
    print(f"[{mode}] {seconds:.0f} s" + (f", exit {returncode}" if returncode is not None else "") + ": "
          + ", ".join(f"{k} {counts.get(k, 0)}" for k in OUTCOMES), flush=True)
    return ModeRun(mode, report, seconds, returncode if returncode is not None else 0)


def shard_suites(suites: list[Path], shards: int) -> list[list[Path]]:
    """`shards` interleaved subsets of the suites' test files (the suites as given if 1)."""
    if shards == 1:
        return [suites]
    files = sorted({f for s in suites for f in ([s] if s.is_file() else s.rglob("test_*.py"))})
    return [files[k::shards] for k in range(shards) if files[k::shards]]


def run_modes(modes: list[str], parallel: bool, shards: int, suites: list[Path],
              settings: PeerSettings) -> tuple[list[ModeRun], list[str]]:
    """Each mode as `shards` pytest processes (at once); the modes one after the other or
    (parallel) all at once. Returns the finished modes' runs and the modes not finished (peer
    was stopped: the caller checks verify.launcher.stop_signal())."""
    jobs = {mode: [(mode if shards == 1 else f"{mode}.shard{k}", part)
                   for k, part in enumerate(shard_suites(suites, shards))] for mode in modes}
    width = max(len(j) for j in jobs.values()) * (len(modes) if parallel else 1)
    started: dict[str, list[Future]] = {}
    with ThreadPoolExecutor(max_workers=width, thread_name_prefix="peer") as pool:
        def start(mode: str) -> None:
            started[mode] = [pool.submit(run_job, mode, name, part, settings) for name, part in jobs[mode]]

        def finish(mode: str) -> ModeRun | None:
            wait(started[mode])  # a signal's handler runs meanwhile; it kills the processes waited for
            if any(isinstance(f.exception(), RunStopped) for f in started[mode]):
                return None
            ends: list[JobEnd] = [f.result() for f in started[mode]]  # anything else is a bug: raised
            seconds = max(e.ended for e in ends) - min(e.started for e in ends)
            failures = [f"[{e.name}] {e.failure}" for e in ends if e.failure]
            if failures:
                print("\n".join(failures), flush=True)
                return ModeRun.failed(mode, "; ".join(failures), seconds, -9)
            returncode = max(e.returncode for e in ends)
            try:
                return read_mode(mode, settings.out, seconds, returncode)
            except RuntimeError as exc:  # pytest ended without its report (a usage error, a crash)
                print(f"[{mode}] exit {returncode}: {exc}", flush=True)
                return ModeRun.failed(mode, str(exc), seconds, returncode)

        runs: list[ModeRun | None] = []
        if parallel:
            for mode in modes:
                start(mode)
        for mode in modes:
            if not parallel:
                start(mode)  # once stopped, its processes are refused: RunStopped, not finished
            runs.append(finish(mode))
    finished = [r for r in runs if r is not None]
    return finished, [m for m in modes if m not in {r.mode for r in finished}]


def mismatches(runs: list[ModeRun]) -> list[tuple[str, dict[str, str]]]:
    """Tests whose outcome is not the same in every mode (missing in a mode: 'not run')."""
    tests = sorted(set().union(*(r.outcomes for r in runs)))
    found = []
    for test in tests:
        per_mode = {r.mode: r.outcomes.get(test, "not run") for r in runs}
        if len(set(per_mode.values())) > 1:
            found.append((test, per_mode))
    return found


def summarize(runs: list[ModeRun], stopped_by: str | None = None, unfinished: list[str] = ()) -> int:
    """Print the comparison of `runs`; 1 on any mismatch, divergence, unchecked lowering, failed
    mode or lost xdist worker, else 0. Stopped by a signal, it compares the modes that finished
    and says which did not (the caller exits 130/143)."""
    if not runs:
        print(f"\npeer: stopped by {stopped_by} before any mode finished" if stopped_by
              else "\npeer: no mode ran")
        return 1
    print("\noutcomes per mode:")
    print(f"  {'':12}" + "".join(f"{o:>9}" for o in OUTCOMES) + f"{'total':>9}{'seconds':>9}")
    for run in runs:
        counts = Counter(run.outcomes.values())
        print(f"  {run.mode:12}" + "".join(f"{counts.get(o, 0):>9}" for o in OUTCOMES)
              + f"{len(run.outcomes):>9}{run.seconds:>9.0f}")
    failed = False
    for run in runs:
        if run.error is not None:
            failed = True
            print(f"  FAILED {run.mode}: {run.error}")
        for lost in run.report.get("lost_workers", []):
            failed = True
            print(f"  LOST WORKER {run.mode}: xdist worker {lost['worker']} went down ({lost['error']}); "
                  f"the tests it was running have no outcome")
    diff = mismatches(runs)
    print(f"\ntests with the same outcome in every mode: {len(set().union(*(r.outcomes for r in runs))) - len(diff)}; "
          f"mismatches: {len(diff)}")
    for test, per_mode in diff:
        failed = True
        print(f"  MISMATCH {test}: " + ", ".join(f"{m} {o}" for m, o in per_mode.items()))
    stock = next((r for r in runs if r.mode == Mode.STOCK), runs[0])
    if stock.report["skip_reasons"]:
        print(f"\nskipped by the suite's own markers ({stock.mode}), by reason:")
        for reason, count in stock.report["skip_reasons"].items():
            print(f"  {count:5}  {reason}")
    check = next((r for r in runs if r.mode == "crosscheck" and r.error is None), None)
    if check is not None:
        totals = check.report["crosscheck"]
        work = totals["fastpass_work"]
        print(f"\ncrosscheck: {totals['crosschecked']} lowerings crosschecked "
              f"({', '.join(f'{k} {v}' for k, v in sorted(totals['by_entry_point'].items()))}): "
              f"{totals['identical']} identical, {totals['divergent']} divergent, {totals['unchecked']} unchecked")
        print(f"  lowering time summed: stock {totals['stock_seconds']:.1f} s, fastpass {totals['fastpass_seconds']:.1f} s")
        print(f"  what fastpass did: {work['passes_skipped']} of {work['passes_run'] + work['passes_skipped']} pass "
              f"invocations skipped, {work['nodes_copied']} of {work['nodes_copied'] + work['nodes_dispatched']} "
              f"nodes copied; {totals['calls_with_fastpass_work']} calls with skip or copy at work")
        for d in totals["divergences"]:
            where = (d["first_divergence"] or {}).get("label", "?")
            repro = d["reproducer"] or {}
            print(f"  DIVERGENT {d['test']}: {d['entry_point']} at {where} "
                  f"(checks {', '.join(d['failed_checks'])}); replay: {repro.get('command') or repro.get('limitation')}")
        for record in check.report["records"]:
            if Verdict(record["verdict"]) is Verdict.UNCHECKED:
                print(f"  UNCHECKED {record['context']}: {record['unchecked_reason']}")
        nondeterministic = totals.get("nondeterministic_calls", [])
        for n in nondeterministic:
            from verify.compare.divergence import OrderRecheck  # here: it imports torch

            recheck = OrderRecheck.from_json(n["order_recheck"])
            print(f"  STOCK NONDETERMINISTIC {n['test']}: {n['entry_point']} (checks {', '.join(n['failed_checks'])}): "
                  f"{recheck.describe() if recheck else '?'}; input: {(n['reproducer'] or {}).get('path')}")
        failed = failed or bool(totals["divergent"] or totals["unchecked"])
    if check is not None and not failed and nondeterministic:
        verdict_line = (f", every crosschecked lowering identical except {len(nondeterministic)} that stock "
                        f"itself does not lower deterministically (not comparable; an executorch finding, above)")
    else:
        verdict_line = ", every crosschecked lowering identical" if check else ""
    if stopped_by is not None:
        print(f"\npeer: STOPPED by {stopped_by}: compared the modes that finished ({', '.join(r.mode for r in runs)}); "
              f"not finished: {', '.join(unfinished) or 'none'}" + ("; FAILED (see above)" if failed else ""))
        return 1
    print("\npeer: " + ("FAILED (see above)" if failed else "every test has the same outcome in every mode"
                        + verdict_line))
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    from verify.cli import _new_run_dir  # the one way a run gets a folder of its own
    from verify.output_paths import check_output_folder
    from verify.report.atomic import write_text
    from verify.usage import UsageError as OutputUsageError

    parser = argparse.ArgumentParser(prog="python -m verify.peer", description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="*",
                        help="sub-paths of executorch/backends/arm/test, or paths of test files (default: passes)")
    parser.add_argument("-n", "--workers", type=int, default=2, help="pytest-xdist workers per mode (0: none)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {', '.join(MODES)}")
    parser.add_argument("--out", type=Path, default=Path("verify-out/peer"),
                        help="where this run's folder (reports, logs, reproducers) is made")
    parser.add_argument("--timeout", type=int, default=1800, help="per-test timeout in seconds (pytest-timeout)")
    parser.add_argument("--hash-seed", type=hash_seed, default=0,
                        help="PYTHONHASHSEED of every mode (default 0, whatever the environment holds)")
    parser.add_argument("--memory-limit", type=float, default=DEFAULT_MEMORY_LIMIT / GIB, metavar="GIB",
                        help="resident memory per xdist worker (the pytest process group may hold workers "
                             "times this); over it the mode is killed and fails naming the limit "
                             "(default %(default)g; 0: no limit)")
    parser.add_argument("--parallel", action="store_true",
                        help="run the modes at the same time (each with --workers), not one after the other")
    parser.add_argument("--shards", type=int, default=1,
                        help="split each mode's test files into N interleaved pytest processes")
    parser.add_argument("--from-reports", type=Path, default=None, metavar="DIR",
                        help="do not run: compare the mode reports already in DIR (e.g. a run's folder)")
    parser.add_argument("-k", dest="keyword", default=None, help="pytest -k expression")
    args = parser.parse_args(argv)
    try:
        modes = [m for m in args.modes.split(",") if m]
        unknown = set(modes) - set(MODES)
        if unknown or not modes:
            raise UsageError(f"unknown modes {sorted(unknown)}; modes are {', '.join(MODES)}")
        if args.workers < 0 or args.shards < 1:
            raise UsageError("--workers must be >= 0 and --shards >= 1")
        if args.memory_limit < 0:
            raise UsageError(f"--memory-limit must be 0 (no limit) or more GiB, got {args.memory_limit:g}")
        root = arm_test_root()
        suites = resolve_suites(args.suites, root)
        if args.from_reports is None:
            check_output_folder(args.out, "--out")
    except (UsageError, OutputUsageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.from_reports is not None:
        if not args.from_reports.is_dir():
            print(f"error: no such folder: {args.from_reports}", file=sys.stderr)
            return 2
        try:
            return summarize([read_mode(mode, args.from_reports) for mode in modes])
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    out = _new_run_dir(args.out.resolve())
    settings = PeerSettings(root=root, out=out, workers=args.workers, timeout=args.timeout,
                            extra=("-k", args.keyword) if args.keyword else (), hash_seed=args.hash_seed,
                            memory_limit=int(args.memory_limit * GIB) or None)
    shown = ", ".join(str(s.relative_to(root)) if s.is_relative_to(root) else str(s) for s in suites)
    print(f"peer: {shown} from {root}, modes {', '.join(modes)}, {args.workers} workers, hash seed "
          f"{args.hash_seed}; reports in {out}", flush=True)
    # The handlers stay in place until peer.json is written: a second Ctrl-C must not cut that short.
    with stop_on_signals():
        runs, unfinished = run_modes(modes, args.parallel, args.shards, suites, settings)
        stopped = stop_signal()
        stopped_by = None if stopped is None else signal.Signals(stopped).name
        code = summarize(runs, stopped_by, unfinished)
        write_text(out / "peer.json", json.dumps({
            "suites": [str(s) for s in suites], "modes": modes, "hash_seed": args.hash_seed,
            "complete": stopped is None, "stopped_by": stopped_by, "unfinished_modes": unfinished,
            "outcome_counts": {r.mode: r.report["outcome_counts"] for r in runs},
            "seconds": {r.mode: r.seconds for r in runs},
            "errors": {r.mode: r.error for r in runs if r.error is not None},
            "lost_workers": {r.mode: r.report.get("lost_workers", []) for r in runs if r.report.get("lost_workers")},
            "mismatches": [{"test": t, "outcomes": o} for t, o in mismatches(runs)] if runs else [],
            "skip_reasons": runs[0].report["skip_reasons"] if runs else {},
            "crosscheck": next((r.report["crosscheck"] for r in runs if r.mode == "crosscheck"), None),
            "exit": 128 + stopped if stopped is not None else code}, indent=1))
    if stopped is not None:
        print(f"peer: stopped by {stopped_by}; pytest processes killed; summary of the finished modes above, "
              f"reports in {out}", file=sys.stderr)
        return 128 + stopped
    return code


if __name__ == "__main__":
    sys.exit(main())
