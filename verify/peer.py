"""`python -m verify.peer` (`tox -e peer`): executorch's own Arm tests, three ways, test by test.

Runs the Arm test suite shipped in the installed executorch wheel (`backends/arm/test/`;
`passes` by default, `ops`, `models` or any sub-path or test file through the arguments) stock, with
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

`ops/` holds 12,004 tests (hours per mode) and `models/` lowers whole networks, so a run may
take a seeded random share of a suite folder (`--share`, class Share): whole files, drawn once
and run in every mode alike, under a seed fresh per run (successive runs cover other files)
that is printed and kept in peer.json (`--share-seed` repeats a run's files). Before any mode,
every test file is collected once (probe_collection): a file that does not collect here (most
`models/` files import packages not installed) is run in no mode and listed with its reason,
since a single collection error stops each mode's whole pytest session.

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

import argparse
import functools
import importlib.util
import json
import os
import random
import re
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.jobs.launcher import (DEFAULT_MEMORY_LIMIT, GIB, JobFiles, RunStopped, WorkerMemoryExceeded,
                                  launch_command, launch_module, stop_on_signals, stop_signal)
from verify.jobs.pool import run_in_pool
from verify.lowering.mode import Mode
from verify.report.peer import OUTCOMES, mismatches, summary
from verify.usage import UsageError


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
class Share:
    """`--share [SUITE:]AMOUNT`: run a seeded random share of a suite folder's test files.

    Whole files, not tests: a file's fixtures and module-scoped setup then behave as in a full
    run, and the mode processes get paths, never node ids. AMOUNT is a fraction of the files
    (0 < f <= 1, with a decimal point), a count of files, or a budget of tests (`300tests`:
    each file in the drawn order taken if its tests still fit — executorch's ops files hold 1
    to 585 tests each, so a count of files says little about the time). Without SUITE it applies to every
    suite folder given."""

    suite: str | None
    fraction: float | None = None
    count: int | None = None
    tests: int | None = None

    def draw(self, files: dict[Path, int], seed: int, suite: str) -> list[Path]:
        """The share of `files` (test file -> tests it holds), sorted: a shuffle by a generator
        seeded by `seed` and the suite's name (so a suite's share depends on the seed, not on
        the other suites given), then its first files: as many as asked, or each that still fits
        the test budget (the smallest file alone if none fits)."""
        order = sorted(files)
        random.Random(f"{seed}/{suite}").shuffle(order)
        if self.tests is not None:
            picked, total = [], 0
            for path in order:
                if total + files[path] <= self.tests:
                    picked.append(path)
                    total += files[path]
            return sorted(picked or [min(order, key=lambda f: (files[f], f))] if order else [])
        wanted = self.count if self.count is not None else round(self.fraction * len(order))
        return sorted(order[:min(len(order), max(1, wanted))])

    def __str__(self) -> str:
        amount = (f"{self.tests}tests" if self.tests is not None else str(self.count) if self.count is not None
                  else f"{self.fraction:g}")
        return amount if self.suite is None else f"{self.suite}:{amount}"


def share_arg(text: str) -> Share:
    suite, _, amount = text.rpartition(":")
    problem = (f"{text!r}: [SUITE:]AMOUNT, AMOUNT a fraction of the suite's test files (0 < f <= 1, e.g. 0.1), "
               "a count of them (e.g. 20) or a budget of tests (e.g. 300tests)")
    suite = str(Path(suite)) if suite else None
    try:
        if amount.endswith("tests"):
            share = Share(suite, tests=int(amount.removesuffix("tests")))
        elif "." in amount:
            share = Share(suite, fraction=float(amount))
        else:
            share = Share(suite, count=int(amount))
    except ValueError:
        raise argparse.ArgumentTypeError(problem) from None
    if ((share.fraction is not None and not 0 < share.fraction <= 1) or (share.count is not None and share.count < 1)
            or (share.tests is not None and share.tests < 1)):
        raise argparse.ArgumentTypeError(problem)
    return share


def share_seed(text: str) -> int:
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if seed < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a non-negative integer (the seed a run printed, to repeat it)")
    return seed


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


# pytest's default `python_files` (the modes run under an empty ini, so these are pytest's rule)
TEST_FILE_PATTERNS = ("test_*.py", "*_test.py")


def test_files(path: Path) -> list[Path]:
    """The test files pytest collects from `path` (the file itself, or those below the folder), sorted."""
    if path.is_file():
        return [path]
    return sorted({f for pattern in TEST_FILE_PATTERNS for f in path.rglob(pattern)
                   if "__pycache__" not in f.parts})


def suite_name(path: Path, root: Path) -> str:
    """How a suite is named on the command line: relative to the Arm test folder, else its path."""
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def match_shares(suites: list[Path], root: Path, shares: list[Share]) -> dict[str, Share]:
    """The share of each shared suite, by name: the last --share naming it, else the last
    without a suite if it is a folder. Usage errors for a share of no suite given or of a file."""
    names = {suite_name(s, root): s for s in suites}
    for share in shares:
        if share.suite is not None and share.suite not in names:
            raise UsageError(f"--share {share}: {share.suite!r} is not one of the suites given ({', '.join(names)})")
        if share.suite is not None and not names[share.suite].is_dir():
            raise UsageError(f"--share {share}: {share.suite!r} is a file; a share is taken of a suite folder's files")
    matched = {}
    for name, path in names.items():
        share = next((s for s in reversed(shares) if s.suite == name), None)
        if share is None and path.is_dir():
            share = next((s for s in reversed(shares) if s.suite is None), None)
        if share is not None:
            matched[name] = share
    return matched


def exception_chain(exc: BaseException | None) -> list[BaseException]:
    """`exc` and the exceptions it was raised from or while handling (pytest's CollectError
    for an ImportError is raised `from` it)."""
    chain: list[BaseException] = []
    while exc is not None and exc not in chain:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain


class CollectProbe:
    """pytest plugin of the collection probe: the tests each file holds, and each file whose
    collection raised, with the module found missing (a ModuleNotFoundError in the chain)."""

    def __init__(self) -> None:
        self.tests: Counter[str] = Counter()
        self.failures: dict[str, dict[str, str | None]] = {}

    def pytest_itemcollected(self, item: Any) -> None:
        self.tests[str(item.path)] += 1

    def pytest_exception_interact(self, node: Any, call: Any, report: Any) -> None:
        if report.when != "collect":
            return
        chain = exception_chain(call.excinfo.value)
        missing = next((e.name for e in chain if isinstance(e, ModuleNotFoundError)), None)
        cause = chain[-1]
        first_line = next(iter(str(cause).strip().splitlines()), "")
        self.failures[str(node.path)] = {"missing": missing, "error": f"{type(cause).__name__}: {first_line}"}


def probe_main(argv: list[str]) -> int:
    """The probe process: `pytest --collect-only` with `argv[1:]` and a CollectProbe, whose
    findings go to the JSON file `argv[0]` (written whatever pytest's exit status)."""
    import pytest

    probe = CollectProbe()
    code = pytest.main(argv[1:], plugins=[probe])
    Path(argv[0]).write_text(json.dumps({"pytest_exit": int(code), "tests": dict(probe.tests),
                                         "failures": probe.failures}, indent=1))
    return 0


@dataclass(frozen=True)
class Collected:
    """What the probe found: the tests each runnable file holds (0 for a file that collects
    none), and why each other file is not run."""

    tests: dict[Path, int]
    not_runnable: dict[Path, str]


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
    command = [sys.executable, "-c", "import sys; from verify.peer import probe_main; sys.exit(probe_main(sys.argv[1:]))",
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


def runnable_paths(suites: list[Path], root: Path, shares: dict[str, Share], seed: int,
                   collected: Collected) -> tuple[list[Path], dict[str, dict[str, Any]]]:
    """What the modes run, the same for every mode: a shared suite as its drawn share of its
    runnable files, any other suite as given (or as its runnable files, if some are not).
    Returns the paths and, per shared suite, its record for peer.json."""
    paths: list[Path] = []
    records: dict[str, dict[str, Any]] = {}
    for suite in suites:
        name = suite_name(suite, root)
        files = test_files(suite)
        runnable = {f: collected.tests[f] for f in files if f in collected.tests}
        if name in shares:
            picked = shares[name].draw(runnable, seed, name)
            paths.extend(picked)
            records[name] = {"share": str(shares[name]), "of_files": len(runnable),
                             "of_tests": sum(runnable.values()), "tests": sum(runnable[f] for f in picked),
                             "files": [str(f.relative_to(suite)) for f in picked]}
        elif len(runnable) == len(files):
            paths.append(suite)
        else:
            paths.extend(sorted(runnable))
    return paths, records


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


def main(argv: list[str] | None = None) -> int:
    """`python -m verify.peer`: as `python -m verify peer`, on the cluster asked for if any."""
    from verify.cluster import on_cluster

    parser = argparse.ArgumentParser(prog="python -m verify.peer", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        with on_cluster(args):
            return cmd_peer(args)
    except UsageError as exc:
        print(f"verify.peer: {exc}", file=sys.stderr)
        return 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """peer's options (`python -m verify.peer` and `python -m verify peer` take the same)."""
    parser.add_argument("suites", nargs="*",
                        help="sub-paths of executorch/backends/arm/test, or paths of test files (default: passes)")
    parser.add_argument("-n", "--workers", type=int, default=2, help="pytest-xdist workers per mode (0: none)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {', '.join(MODES)}")
    parser.add_argument("--out", type=Path, default=Path("verify-out/peer"),
                        help="where this run's folder (reports, logs, reproducers) is made")
    parser.add_argument("--timeout", type=int, default=1800, help="per-test timeout in seconds (pytest-timeout)")
    parser.add_argument("--hash-seed", type=hash_seed, default=0,
                        help="PYTHONHASHSEED of every mode (default 0, whatever the environment holds)")
    parser.add_argument("--share", type=share_arg, action="append", default=[], metavar="[SUITE:]AMOUNT",
                        help="run a seeded random share of a suite folder's test files (whole files, the same in "
                             "every mode): AMOUNT a fraction (0.1) or a count (20); SUITE one of the suites given "
                             "(e.g. ops:0.1), without it every suite folder; repeatable")
    parser.add_argument("--share-seed", type=share_seed, default=None, metavar="SEED",
                        help="the seed the shares are drawn with (default: a fresh one per run, printed and in "
                             "peer.json; give it to repeat a run's files)")
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
    from verify.cluster import add_cluster_option

    add_cluster_option(parser)  # each pytest process a job of one CPU there: --shards spreads a mode


def cmd_peer(args: argparse.Namespace) -> int:
    from verify.output_paths import new_run_dir  # the one way a run gets a folder of its own
    from verify.output_paths import check_output_folder
    from verify.report.document import write_document

    seed = args.share_seed if args.share_seed is not None else random.SystemRandom().randrange(2 ** 32)
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
        shares = match_shares(suites, root, args.share)
        if args.from_reports is None:
            check_output_folder(args.out, "--out")
    except UsageError as exc:
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
    out = new_run_dir(args.out.resolve())
    # Test ids are paths relative to the rootdir: a file outside it would be named `::test` alone,
    # and two files' tests would share ids.
    rootdir = Path(os.path.commonpath([root, *suites]))
    settings = PeerSettings(root=root, rootdir=rootdir, out=out, workers=args.workers, timeout=args.timeout,
                            extra=("-k", args.keyword) if args.keyword else (), hash_seed=args.hash_seed,
                            memory_limit=int(args.memory_limit * GIB) or None)
    settings.write_ini()
    print(f"peer: {', '.join(suite_name(s, root) for s in suites)} from {root}, modes {', '.join(modes)}, "
          f"{args.workers} workers, hash seed {args.hash_seed}; reports in {out}", flush=True)
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
                runs, unfinished = run_modes(modes, args.parallel, args.shards, paths, settings)
            else:
                error = "no test file of the suites given collects here"
        stopped = stop_signal()
        stopped_by = None if stopped is None else signal.Signals(stopped).name
        not_runnable = {suite_name(f, root): reason for f, reason in collected.not_runnable.items()}
        code = summarize(runs, stopped_by, unfinished, not_runnable)
        if error is not None:
            print(f"peer: FAILED: {error}")
        write_document(out / "peer.json", {
            "suites": [str(s) for s in suites], "modes": modes, "hash_seed": args.hash_seed,
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
            "exit": 128 + stopped if stopped is not None else code})
    if stopped is not None:
        print(f"peer: stopped by {stopped_by}; pytest processes killed; summary of the finished modes above, "
              f"reports in {out}", file=sys.stderr)
        return 128 + stopped
    return code


if __name__ == "__main__":
    sys.exit(main())
