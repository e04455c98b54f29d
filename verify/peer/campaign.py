"""A peer run: the modes' pytest processes over the suites' runnable files, their reports read
back (and merged, shard by shard), compared and written to peer.json.

Every mode runs under one pinned hash seed (`--hash-seed`, default 0, whatever PYTHONHASHSEED
the caller's environment holds): under different seeds set iteration orders differ between the
modes, and an outcome or a lowering could differ for that alone. Each pytest process is a
worker of verify.jobs.launcher (its own process group, its xdist workers in it, killed when peer
is stopped, killed outright, or holds more memory than `--memory-limit`). Each run has a folder
of its own (`<out>/<time>-<pid>-<random>`, as `verify run`'s). On SIGINT/SIGTERM the modes
that finished are summarized and peer exits 130/143.

With `--cluster ADDRESS|auto` (or `RAY_ADDRESS`; verify.cluster) each mode's pytest process
(each of its `--shards N`: they spread a mode over N jobs) is a job of one CPU on a Ray cluster
(a module job of verify.jobs, verify.jobs.launcher.launch_module): its arguments, reports and
comparison exactly as here. A job's folder is the run's folder (every file a mode's pytest
process writes is in it: its report, JUnit XML, log, reproducers; its ini is sent along) and
what it wrote comes back there. The test files
are not sent: they are part of the executorch installation (or the checkout) each node has, at
the same path as here. The collection probe, one short process, runs here.
"""

from __future__ import annotations

import functools
import json
import re
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.jobs.launcher import (JobFiles, RunStopped, WorkerMemoryExceeded, launch_command, launch_module,
                                  stop_on_signals, stop_signal, stopped_exit_status)
from verify.jobs.pool import run_in_pool
from verify.lowering.mode import Mode
from verify.peer.suites import Collected, Share, runnable_paths, suite_name, test_files
from verify.report.document import write_document
from verify.report.peer import OUTCOMES, mismatches, summary


# the suite's runs: the two lowering modes (verify.lowering.mode), and crosscheck
MODES: dict[str, list[str]] = {Mode.STOCK.value: [], Mode.FASTPASS.value: ["--fastpass=on"],
                               "crosscheck": ["--fastpass=crosscheck"]}


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

    root: Path  # the Arm test folder
    rootdir: Path  # pytest's: the Arm test folder, or above it the folder holding every suite given
    out: Path  # this run's folder
    workers: int  # xdist workers per pytest process (0: none)
    timeout: int  # per test (pytest-timeout)
    extra: tuple[str, ...]  # more pytest arguments (-k)
    hash_seed: int
    memory_limit: int | None  # bytes per xdist worker (or per process without xdist); None: none

    @property
    def ini(self) -> Path:
        """An empty ini in the run's folder (`write_ini`): the suite runs under its own conftest,
        not under the ini files pytest would find above site-packages (this project's
        pyproject.toml among them)."""
        return self.out / "pytest.ini"

    @property
    def files(self) -> JobFiles:
        """What a mode's pytest process shares with peer, wherever it runs (verify.jobs.launcher): it
        writes in the run's folder only, and reads the ini there."""
        return JobFiles(self.out, (self.ini,))

    def write_ini(self) -> None:
        """Once, before any pytest process: written while a job is being sent, it could be sent half-written."""
        self.ini.write_text("[pytest]\n")

    @property
    def group_memory_limit(self) -> int | None:
        """The limit of one pytest process group: its controller and its xdist workers."""
        return None if self.memory_limit is None else self.memory_limit * max(1, self.workers)


def probe_collection(files: list[Path], settings: PeerSettings) -> Collected:
    """Collect every test file once, up front, in one stock pytest process like the modes'.

    A file that does not collect would interrupt every mode's whole session (pytest stops
    before running anything on a collection error) or, run alone, count as an error that is
    not the lowering's: executorch's model tests import torchvision, timm, torchaudio,
    transformers, which need not be installed. Such a file is not run in any mode and is listed
    with its reason: "not runnable here: <module> missing" when a module is missing, else
    "does not collect here: <error>". The tests per file weigh a share's test budget. Raises
    RuntimeError if the probe gives no answer or something other than a test file (a conftest)
    fails to collect."""
    out = settings.out
    result = out / "collect.json"
    result.unlink(missing_ok=True)
    command = [sys.executable, "-c",
               "import sys; from verify.peer.suites import probe_main; sys.exit(probe_main(sys.argv[1:]))",
               str(result), "-c", str(settings.ini), "--rootdir", str(settings.rootdir), "-p", "no:cacheprovider", "-p", "no:xdist",
               "-q", "--collect-only", *map(str, files)]
    log_path = out / "collect.log"
    print(f"[collect] {len(files)} test files, collected once up front; log {log_path}", flush=True)
    try:
        code = launch_command(command, log_path=log_path, hash_seed=settings.hash_seed,
                              timeout=settings.timeout, cwd=out, memory_limit=settings.memory_limit)
    except WorkerMemoryExceeded as exc:
        raise RuntimeError(f"[collect] {exc}; log {log_path}") from None
    if not result.exists():
        raise RuntimeError(f"[collect] exit {code} without its report; see {log_path}")
    found = json.loads(result.read_text())
    by_path = {str(f): f for f in files}
    stray = {p: f for p, f in found["failures"].items() if p not in by_path}
    if stray:
        raise RuntimeError("; ".join(f"[collect] {p} does not collect: {f['error']}" for p, f in stray.items())
                           + f"; see {log_path}")
    not_runnable = {by_path[p]: (f"not runnable here: {f['missing']} missing" if f["missing"]
                                 else f"does not collect here: {f['error']}") for p, f in found["failures"].items()}
    return Collected({f: found["tests"].get(str(f), 0) for f in files if f not in not_runnable},
                     dict(sorted(not_runnable.items())))


def pytest_arguments(mode: str, name: str, suites: list[Path], settings: PeerSettings) -> list[str]:
    """pytest's arguments for `mode` over `suites`; its report is `out/<name>.json`."""
    out = settings.out
    workers = ["-n", str(settings.workers)] if settings.workers > 0 else ["-p", "no:xdist"]
    return ["-c", str(settings.ini), "--rootdir", str(settings.rootdir), "-p", "no:cacheprovider",
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
    """One pytest process, as a verify.jobs.launcher worker (raises RunStopped when peer is stopped)."""
    (settings.out / f"{name}.json").unlink(missing_ok=True)
    arguments = pytest_arguments(mode, name, suites, settings)
    log_path = settings.out / f"{name}.log"
    print(f"[{name}] {sys.executable} -m pytest {' '.join(arguments)}\n[{name}] progress: {log_path}", flush=True)
    started = time.perf_counter()
    try:
        code = launch_module("pytest", arguments, log_path=log_path, files=settings.files, hash_seed=settings.hash_seed,
                             timeout=None, cwd=settings.out, memory_limit=settings.group_memory_limit)
    except WorkerMemoryExceeded as exc:
        return JobEnd(name, None, started, time.perf_counter(), f"{exc}; log {log_path}")
    return JobEnd(name, code, started, time.perf_counter())


def merge_reports(mode: str, reports: list[dict[str, Any]]) -> dict[str, Any]:
    """One mode's report from its shards' reports (a single report passes through unchanged)."""
    from verify.report.crosscheck import totals as crosscheck_totals

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
    shard = re.compile(rf"{re.escape(mode)}\.shard\d+\.json")  # not a shard's job file (NAME.job.json)
    paths = (sorted(out.glob(f"{mode}.json"))
             or sorted(p for p in out.glob(f"{mode}.shard*.json") if shard.fullmatch(p.name)))
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
    files = sorted({f for s in suites for f in test_files(s)})
    return [files[k::shards] for k in range(shards) if files[k::shards]]


def run_modes(modes: list[str], parallel: bool, shards: int, suites: list[Path],
              settings: PeerSettings) -> tuple[list[ModeRun], list[str]]:
    """Each mode as `shards` pytest processes (at once); the modes one after the other or
    (parallel) all at once. Returns the finished modes' runs and the modes not finished (peer
    was stopped: the caller checks verify.jobs.launcher.stop_signal())."""
    jobs = {mode: [(mode if shards == 1 else f"{mode}.shard{k}", part)
                   for k, part in enumerate(shard_suites(suites, shards))] for mode in modes}
    ends: dict[str, dict[int, JobEnd]] = {mode: {} for mode in modes}

    def run_together(group: list[str]) -> None:
        """The modes' processes at once, in the harness's one pool (verify.jobs.pool); a stop ends
        it with the unfinished ones missing from `ends` (the signal's handler kills them)."""
        tasks = [(mode, k, name, part) for mode in group for k, (name, part) in enumerate(jobs[mode])]

        def finished(index: int, end: JobEnd) -> None:
            mode, k, _, _ = tasks[index]
            ends[mode][k] = end

        try:
            run_in_pool([functools.partial(run_job, mode, name, part, settings) for mode, _, name, part in tasks],
                        len(tasks), on_finished=finished, name="peer")  # anything but a stop is a bug: raised
        except RunStopped:
            pass

    def finish(mode: str) -> ModeRun | None:
        if len(ends[mode]) < len(jobs[mode]):
            return None
        done = list(ends[mode].values())
        seconds = max(e.ended for e in done) - min(e.started for e in done)
        failures = [f"[{e.name}] {e.failure}" for e in done if e.failure]
        if failures:
            print("\n".join(failures), flush=True)
            return ModeRun.failed(mode, "; ".join(failures), seconds, -9)
        returncode = max(e.returncode for e in done)
        try:
            return read_mode(mode, settings.out, seconds, returncode)
        except RuntimeError as exc:  # pytest ended without its report (a usage error, a crash)
            print(f"[{mode}] exit {returncode}: {exc}", flush=True)
            return ModeRun.failed(mode, str(exc), seconds, returncode)

    for group in ([modes] if parallel else [[mode] for mode in modes]):
        run_together(group)  # once stopped, the next group starts nothing: not finished
    finished = [run for run in map(finish, modes) if run is not None]
    return finished, [m for m in modes if m not in {r.mode for r in finished}]


def summarize(runs: list[ModeRun], stopped_by: str | None = None, unfinished: list[str] = (),
              not_runnable: dict[str, str] | None = None) -> int:
    """Print the comparison of `runs` (verify.report.peer.summary) and return its exit status."""
    result = summary(runs, stopped_by, unfinished, not_runnable)
    print(result.text)
    return result.exit


def run_campaign(settings: PeerSettings, suites: list[Path], modes: list[str], shares: dict[str, Share],
                 seed: int, parallel: bool, shards: int) -> int:
    """The run `python -m verify peer` asked for, in its folder `settings.out`: collect every test
    file once, draw the shares (under `seed`), run the modes, print the comparison (summarize) and
    write peer.json. Returns the exit status: summarize's, or 128 + the signal that stopped it."""
    root, out = settings.root, settings.out
    settings.write_ini()
    print(f"peer: {', '.join(suite_name(s, root) for s in suites)} from {root}, modes {', '.join(modes)}, "
          f"{settings.workers} workers, hash seed {settings.hash_seed}; reports in {out}", flush=True)
    runs: list[ModeRun] = []
    unfinished = list(modes)
    collected = Collected({}, {})
    paths: list[Path] = []
    drawn: dict[str, dict[str, Any]] = {}
    error = None
    # The handlers stay in place until peer.json is written: a second Ctrl-C must not cut that short.
    with stop_on_signals():
        try:
            collected = probe_collection(sorted({f for s in suites for f in test_files(s)}), settings)
        except RunStopped:
            pass
        except RuntimeError as exc:
            error = str(exc)
            print(error, flush=True)
        if collected.not_runnable:
            print(f"[collect] {len(collected.not_runnable)} test files do not collect here: run in no mode "
                  "(listed with why in the summary)", flush=True)
        if error is None and stop_signal() is None:
            paths, drawn = runnable_paths(suites, root, shares, seed, collected)
            for name, share in drawn.items():
                print(f"share {share['share']}: {name}, {len(share['files'])} of {share['of_files']} runnable test "
                      f"files ({share['tests']} of {share['of_tests']} tests), share seed {seed} "
                      f"(--share-seed {seed} repeats them): {', '.join(share['files'])}", flush=True)
            if paths:
                runs, unfinished = run_modes(modes, parallel, shards, paths, settings)
            else:
                error = "no test file of the suites given collects here"
        stopped = stop_signal()
        stopped_by = None if stopped is None else signal.Signals(stopped).name
        not_runnable = {suite_name(f, root): reason for f, reason in collected.not_runnable.items()}
        code = summarize(runs, stopped_by, unfinished, not_runnable)
        if error is not None:
            print(f"peer: FAILED: {error}")
        write_document(out / "peer.json", {
            "suites": [str(s) for s in suites], "modes": modes, "hash_seed": settings.hash_seed,
            "share_seed": seed, "shares": drawn, "not_runnable": not_runnable,
            "run_paths": [str(p) for p in paths],
            "complete": stopped is None and error is None, "stopped_by": stopped_by, "unfinished_modes": unfinished,
            "collect_error": error,
            "outcome_counts": {r.mode: r.report["outcome_counts"] for r in runs},
            "seconds": {r.mode: r.seconds for r in runs},
            "errors": {r.mode: r.error for r in runs if r.error is not None},
            "lost_workers": {r.mode: r.report.get("lost_workers", []) for r in runs if r.report.get("lost_workers")},
            "mismatches": [{"test": t, "outcomes": o} for t, o in mismatches(runs)] if runs else [],
            "skip_reasons": runs[0].report["skip_reasons"] if runs else {},
            "crosscheck": next((r.report["crosscheck"] for r in runs if r.mode == "crosscheck"), None),
            "exit": stopped_exit_status(stopped) if stopped is not None else code})
    if stopped is not None:
        print(f"peer: stopped by {stopped_by}; pytest processes killed; summary of the finished modes above, "
              f"reports in {out}", file=sys.stderr)
        return stopped_exit_status(stopped)
    return code
