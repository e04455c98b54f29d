"""`python -m verify fuzz [OPTIONS]`: a fuzz campaign -- random graphs on every target, lowered stock
and with fastpass, every difference shrunk by Hypothesis and saved as a reproducer, the campaign's
pass coverage printed at the end (`tox -e fuzz` runs it).

Behind it is the pytest-xdist run of tests/test_fuzz.py (Hypothesis's shrinking and example
database, xdist's workers): the options become one `verify.fuzz.campaign.FuzzCampaign`, checked
here (a bad value is one line, exit 2, before any work), saved to `campaign.json` in the coverage
folder and handed to pytest as `--fuzz-campaign FILE`. pytest runs under verify.jobs.launcher like every
worker (its own process group, killed with us); its output is followed on the terminal and kept
in `pytest.log` beside the campaign file. The exit status is pytest's: 0 no divergence and no
generator gap, 1 a divergence (its minimal reproducer named) or a gap, 2 bad usage.

With `--cluster ADDRESS|auto` (or `RAY_ADDRESS`; verify.cluster) each cell of the campaign is a
job of its own on the Ray cluster instead (verify.fuzz.cells), merged here as it returns into the
same coverage and reproducers folders, and the same coverage summary is printed; the exit status
means the same (130/143 when stopped: the cells that finished are kept and summarized).
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from pathlib import Path

from verify.commands import arguments
from verify.usage import UsageError

TESTS = Path(__file__).resolve().parents[2] / "tests" / "test_fuzz.py"


def add_parser(sub) -> None:
    from verify.cluster import add_cluster_option
    from verify.fuzz.campaign import CAMPAIGN_TARGETS, long_campaign

    default = long_campaign()
    p = sub.add_parser("fuzz", help="a fuzz campaign over random graphs (pytest-xdist, Hypothesis), pass coverage",
                       description="A fuzz campaign: random graphs on every target, lowered stock and with "
                                   "fastpass; differences shrunk and saved as reproducers; pass coverage at the end.")
    p.add_argument("--targets", default=",".join(CAMPAIGN_TARGETS), help="comma-separated (default: %(default)s)")
    p.add_argument("--examples", type=int, default=default.examples, help="graphs per shard (default %(default)s)")
    p.add_argument("--shards", type=int, default=default.shards,
                   help="Hypothesis tests per INT target, each aiming at its share of the routes (default "
                        f"%(default)s; tosa-fp gets {default.float_shard_factor}x)")
    p.add_argument("--max-ops", type=int, default=default.max_ops, help="ops per graph at most (default %(default)s)")
    p.add_argument("--seed", default=None, help="repeat a campaign: a distinct Hypothesis seed per target and shard")
    p.add_argument("--min-draws", type=int, default=default.min_draws,
                   help="graphs holding a pass's route after which an unexercised pass is a generator gap "
                        "(default %(default)s)")
    p.add_argument("--continue", dest="continue_from", type=Path, default=None, metavar="DIR",
                   help="an earlier campaign's coverage folder (a copy: --coverage is emptied first): focus on "
                        "the passes it did not exercise")
    p.add_argument("--coverage", type=Path, default=default.coverage_dir, metavar="DIR",
                   help="coverage folder, emptied first (default %(default)s)")
    p.add_argument("--reproducers", type=Path, default=default.reproducers, metavar="DIR",
                   help="where minimal reproducers are saved (default %(default)s)")
    p.add_argument("--database", type=Path, default=default.database, metavar="DIR",
                   help="Hypothesis example database, one folder per cell, kept between campaigns (a failure found "
                        "once is replayed first by the next run of its cell, here or on a cluster; unused with "
                        "--seed: Hypothesis neither replays nor saves for a seeded test; default %(default)s)")
    p.add_argument("--features", default="all", help="fastpass features under test (default: all)")
    p.add_argument("-n", "--workers", default="auto",
                   help="pytest-xdist workers (default: auto, one per core); on a cluster: cells at a time "
                        "(auto: the cluster's CPUs)")
    add_cluster_option(p)
    p.add_argument("--dry-run", action="store_true", help="check the options, write the campaign file and stop")
    p.set_defaults(handler=cmd_fuzz)


def campaign_from(args):
    """The campaign the options ask for (UsageError for a bad one)."""
    from verify.fuzz.campaign import long_campaign

    if not (args.workers == "auto" or args.workers.isdigit()):
        raise UsageError(f"--workers is a number or 'auto', got {args.workers!r}")
    return long_campaign(targets=tuple(arguments.csv(args.targets)), examples=args.examples, shards=args.shards,
                         max_ops=args.max_ops, seed=args.seed, min_draws=args.min_draws,
                         continue_from=args.continue_from and args.continue_from.resolve(),
                         coverage_dir=args.coverage.resolve(), reproducers=args.reproducers.resolve(),
                         database=args.database.resolve(), features=arguments.features(args.features))


def cmd_fuzz(args) -> int:
    """The campaign; on a cluster when one is asked for (verify.cli has connected to it by now)."""
    from verify.cluster.connect import resolve
    from verify.jobs.launcher import launch_command
    from verify.usage.output_paths import check_output_folder

    campaign = campaign_from(args)
    check_output_folder(campaign.coverage_dir, "--coverage")
    check_output_folder(campaign.reproducers, "--reproducers")
    check_output_folder(campaign.database, "--database")
    if campaign.continue_from is not None and campaign.continue_from.resolve() == campaign.coverage_dir.resolve():
        raise UsageError("--continue names the --coverage folder, which is emptied first: give a copy of it")
    if not TESTS.is_file():
        raise UsageError(f"the fuzz tests are not here: {TESTS} (run from a checkout of the repository)")
    shutil.rmtree(campaign.coverage_dir, ignore_errors=True)
    campaign.coverage_dir.mkdir(parents=True)
    campaign_file = campaign.coverage_dir / "campaign.json"
    campaign.save(campaign_file)
    shards = ", ".join(f"{target} x{campaign.shards_of(target)}" for target in campaign.targets)
    print(f"fuzz: {len(campaign.cells())} Hypothesis tests ({shards}), {campaign.examples} graphs each of "
          f"<= {campaign.max_ops} ops; campaign {campaign_file}", flush=True)
    if args.dry_run:
        return 0
    if resolve(args.cluster) is not None:
        return _on_cluster(campaign, args.workers)
    command = [sys.executable, "-m", "pytest", str(TESTS), "-m", "fuzz", "-n", args.workers, "--timeout", "0",
               "--hypothesis-show-statistics", "--fuzz-campaign", str(campaign_file.resolve())]
    log_path = campaign.coverage_dir / "pytest.log"
    with _followed(log_path):
        # no memory limit: the group holds one worker per core, each a few GiB (as under tox before)
        return launch_command(command, log_path=log_path, timeout=None, memory_limit=None, cwd=TESTS.parents[1])


def _on_cluster(campaign, workers: str) -> int:
    """Every cell a job on the cluster (at most `workers` at a time; auto: the cluster's CPUs),
    merged as it returns; the summary of what came back, and the exit status the local run gives."""
    import signal

    from verify.cluster.batch import cluster_cpus
    from verify.fuzz.cells import run_on_cluster
    from verify.fuzz.coverage import coverage_summary
    from verify.report.fuzz_coverage import text
    from verify.jobs.launcher import stop_on_signals, stop_signal, stopped_exit_status

    width = cluster_cpus() if workers == "auto" else int(workers)
    cells = len(campaign.cells())
    print(f"fuzz: on the cluster, {min(width, cells)} cell(s) at a time; each cell's files in "
          f"{campaign.coverage_dir / 'cells'}", flush=True)
    started = time.perf_counter()
    with stop_on_signals():
        results, unfinished = run_on_cluster(campaign, TESTS, max(1, width))
        stopped = stop_signal()
    print("=" * 30 + " fastpass pass coverage " + "=" * 30)
    coverage = coverage_summary(campaign.coverage_dir, campaign.min_draws)  # read and judged once
    print(text(coverage))
    failed = [r for r in results if r.failed and r.error is None]
    errors = [r for r in results if r.error is not None]
    print(f"fuzz: {len(results)} of {cells} cells finished on the cluster in {time.perf_counter() - started:.0f} s: "
          f"{sum(r.graphs for r in results)} graphs, {len(failed)} divergence(s), {len(errors)} cell error(s)"
          + (f"; not finished: {', '.join(unfinished)}" if unfinished else ""), flush=True)
    for result in failed:
        print(f"fuzz: {result.cell.name} FAILED, minimal reproducer: "
              f"{', '.join(map(str, result.reproducers)) or 'none saved'}; log {result.cell.log_path}")
    for result in errors:
        print(f"fuzz: {result.cell.name} ERROR: {result.error}; log {result.cell.log_path}")
    if stopped is not None:
        print(f"fuzz: stopped by {signal.Signals(stopped).name}; the cells that finished are summarized above",
              file=sys.stderr)
        return stopped_exit_status(stopped)
    gap = coverage is not None and coverage.verdict.failed  # as campaign_failed judges it
    return 1 if failed or errors or unfinished or gap else 0


class _followed:
    """Copy what a worker appends to its log to our stdout while it runs (the log stays whole)."""

    def __init__(self, path: Path) -> None:
        self.path, self.done = path, threading.Event()
        self.thread = threading.Thread(target=self._follow, daemon=True)

    def __enter__(self) -> None:
        self.thread.start()

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join(timeout=5)

    def _follow(self) -> None:
        offset = 0
        while True:
            finished = self.done.is_set()
            try:
                with open(self.path, "rb") as f:
                    f.seek(offset)
                    chunk = f.read()
            except FileNotFoundError:
                chunk = b""
            if chunk:
                offset += len(chunk)
                sys.stdout.write(chunk.decode(errors="replace"))
                sys.stdout.flush()
            if finished:
                return
            time.sleep(0.5)
