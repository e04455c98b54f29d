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
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

    @property
    def outcomes(self) -> dict[str, str]:
        return self.report["outcomes"]


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


def start_mode(mode: str, name: str, suites: list[Path], root: Path, out: Path, workers: int, timeout: int,
               extra: list[str]) -> tuple[subprocess.Popen, float]:
    """Start one pytest process for `mode` over `suites`; its report is `out/<name>.json`."""
    (out / f"{name}.json").unlink(missing_ok=True)
    # An empty ini in our own folder: the suite runs under its own conftest, not under the ini
    # files pytest would find above site-packages (this project's pyproject.toml among them).
    ini = out / "pytest.ini"
    ini.write_text("[pytest]\n")
    command = [sys.executable, "-m", "pytest", "-c", str(ini), "--rootdir", str(root), "-p", "no:cacheprovider",
               "-q", "--timeout", str(timeout), *MODES[mode], "--fastpass-json", str(out / f"{name}.json"),
               "--fastpass-reproducers", str(out / "reproducers"), "--junitxml", str(out / f"{name}.xml"),
               *(["-n", str(workers)] if workers > 0 else ["-p", "no:xdist"]), *extra, *map(str, suites)]
    env = dict(os.environ, PYTHONHASHSEED=os.environ.get("PYTHONHASHSEED", "0"))
    print(f"[{name}] {' '.join(command)}\n[{name}] progress: {out / f'{name}.log'}", flush=True)
    with open(out / f"{name}.log", "w") as log:
        # Its own process group: stopping peer stops the mode's xdist workers too (see run_modes).
        process = subprocess.Popen(command, cwd=out, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    return process, time.perf_counter()


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
            "records": records, "crosscheck": crosscheck_totals(records) if mode == "crosscheck" else None}


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


def run_modes(modes: list[str], parallel: bool, shards: int, suites: list[Path], root: Path, out: Path,
              *rest: Any) -> list[ModeRun]:
    """Each mode as `shards` pytest processes; the modes one after the other or (parallel) all at once."""
    jobs = {mode: [(mode if shards == 1 else f"{mode}.shard{k}", part)
                   for k, part in enumerate(shard_suites(suites, shards))] for mode in modes}
    started: dict[str, list[tuple[subprocess.Popen, float]]] = {}
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    def start(mode: str) -> None:
        started[mode] = [start_mode(mode, name, part, root, out, *rest) for name, part in jobs[mode]]

    def finish(mode: str) -> ModeRun:
        codes = [process.wait() for process, _ in started[mode]]
        seconds = time.perf_counter() - min(t for _, t in started[mode])
        return read_mode(mode, out, seconds, max(codes))

    try:
        if not parallel:
            runs = []
            for mode in modes:
                start(mode)
                runs.append(finish(mode))
            return runs
        for mode in modes:
            start(mode)
        return [finish(mode) for mode in modes]
    finally:
        signal.signal(signal.SIGTERM, previous)
        for process, _ in (p for ps in started.values() for p in ps):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)


def mismatches(runs: list[ModeRun]) -> list[tuple[str, dict[str, str]]]:
    """Tests whose outcome is not the same in every mode (missing in a mode: 'not run')."""
    tests = sorted(set().union(*(r.outcomes for r in runs)))
    found = []
    for test in tests:
        per_mode = {r.mode: r.outcomes.get(test, "not run") for r in runs}
        if len(set(per_mode.values())) > 1:
            found.append((test, per_mode))
    return found


def summarize(runs: list[ModeRun]) -> int:
    print("\noutcomes per mode:")
    print(f"  {'':12}" + "".join(f"{o:>9}" for o in OUTCOMES) + f"{'total':>9}{'seconds':>9}")
    for run in runs:
        counts = Counter(run.outcomes.values())
        print(f"  {run.mode:12}" + "".join(f"{counts.get(o, 0):>9}" for o in OUTCOMES)
              + f"{len(run.outcomes):>9}{run.seconds:>9.0f}")
    failed = False
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
    check = next((r for r in runs if r.mode == "crosscheck"), None)
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
    print("\npeer: " + ("FAILED (see above)" if failed else "every test has the same outcome in every mode"
                        + verdict_line))
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verify.peer", description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="*", help="sub-paths of executorch/backends/arm/test (default: passes)")
    parser.add_argument("-n", "--workers", type=int, default=2, help="pytest-xdist workers per mode (0: none)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {', '.join(MODES)}")
    parser.add_argument("--out", type=Path, default=Path("verify-out/peer"), help="reports, logs, reproducers")
    parser.add_argument("--timeout", type=int, default=1800, help="per-test timeout in seconds (pytest-timeout)")
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
        root = arm_test_root()
        suites = resolve_suites(args.suites, root)
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
    out = args.out.resolve() / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    extra = ["-k", args.keyword] if args.keyword else []
    print(f"peer: {', '.join(str(s.relative_to(root)) for s in suites)} from {root}, modes {', '.join(modes)}, "
          f"{args.workers} workers; reports in {out}", flush=True)
    runs = run_modes(modes, args.parallel, args.shards, suites, root, out, args.workers, args.timeout, extra)
    code = summarize(runs)
    (out / "peer.json").write_text(json.dumps({
        "suites": [str(s) for s in suites], "modes": modes,
        "outcome_counts": {r.mode: r.report["outcome_counts"] for r in runs},
        "seconds": {r.mode: r.seconds for r in runs},
        "mismatches": [{"test": t, "outcomes": o} for t, o in mismatches(runs)],
        "skip_reasons": runs[0].report["skip_reasons"],
        "crosscheck": next((r.report["crosscheck"] for r in runs if r.mode == "crosscheck"), None),
        "exit": code}, indent=1))
    return code


if __name__ == "__main__":
    sys.exit(main())
