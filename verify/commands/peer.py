"""`python -m verify peer [OPTIONS] [SUITES]`: executorch's own Arm tests in each mode, compared
(the campaign: verify.peer; `python -m verify.peer`, verify/peer/__main__.py, is the same command
through `main`). Registered here so that every command is one `python -m verify` away and lists
itself in `python -m verify --help`.

The command parses the options (`add_arguments`, the same for both spellings), refuses bad usage
in one line before any work (exit 2: unknown modes, a suite not found, a share of no suite given,
a taken --out), then hands the run to verify.peer.campaign.run_campaign, whose comparison is
printed by verify.report.peer. Exit 0 if every test has the same outcome in every mode and every
crosschecked lowering is identical, 1 on any mismatch, divergence or unchecked lowering, 2 for
bad usage, 130/143 when stopped by SIGINT/SIGTERM. `--from-reports DIR` runs nothing: it
compares the mode reports already in DIR.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path

import verify.peer
from verify.commands import arguments
from verify.jobs.launcher import DEFAULT_MEMORY_LIMIT, GIB
from verify.peer.campaign import MODES, PeerSettings, read_mode, run_campaign, summarize
from verify.peer.suites import Share, arm_test_root, match_shares, resolve_suites
from verify.usage import UsageError


def add_parser(sub) -> None:
    p = sub.add_parser("peer", help="run executorch's Arm tests stock, with fastpass and crosschecked; compare",
                       description=verify.peer.__doc__.splitlines()[0])
    add_arguments(p)
    p.set_defaults(handler=cmd_peer)


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


def _seed(text: str) -> int:
    """`text` as an integer, or -1 (no seed) when it is not one."""
    try:
        return int(text)
    except ValueError:
        return -1


def share_seed(text: str) -> int:
    seed = _seed(text)
    if seed < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a non-negative integer (the seed a run printed, to repeat it)")
    return seed


def hash_seed(text: str) -> int:
    """`--hash-seed`: one fixed seed for every mode; 'random' would give each mode its own."""
    seed = _seed(text)
    if not 0 <= seed <= 4294967295:
        raise argparse.ArgumentTypeError(f"{text!r}: an integer 0..4294967295, the seed every mode runs under "
                                         "('random' would give each mode a seed of its own)")
    return seed


def main(argv: list[str] | None = None) -> int:
    """`python -m verify.peer`: as `python -m verify peer`, on the cluster asked for if any."""
    from verify.cluster import on_cluster

    parser = argparse.ArgumentParser(prog="python -m verify.peer", description=verify.peer.__doc__.splitlines()[0])
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
    parser.add_argument("-n", "--workers", type=int, default=2, help="pytest-xdist workers per mode (0: none; default 2)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {', '.join(MODES)}")
    parser.add_argument("--out", type=Path, default=Path("verify-out/peer"),
                        help="where this run's folder (reports, logs, reproducers) is made")
    parser.add_argument("--timeout", type=int, default=1800,
                        help="per-test timeout in seconds (pytest-timeout; default 1800)")
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
    from verify.usage.output_paths import new_run_dir  # the one way a run gets a folder of its own
    from verify.usage.output_paths import check_output_folder

    seed = args.share_seed if args.share_seed is not None else random.SystemRandom().randrange(2 ** 32)
    modes = [m for m in args.modes.split(",") if m]
    unknown = set(modes) - set(MODES)
    if unknown or not modes:
        raise UsageError(f"unknown modes {sorted(unknown)}; modes are {', '.join(MODES)}")
    if args.workers < 0:
        raise UsageError(f"--workers must be 0 (none) or more, got {args.workers}")
    if args.shards < 1:
        raise UsageError(f"--shards must be 1 or more, got {args.shards}")
    arguments.timeout(args.timeout)
    if args.memory_limit < 0:
        raise UsageError(f"--memory-limit must be 0 (no limit) or more GiB, got {args.memory_limit:g}")
    root = arm_test_root()
    suites = resolve_suites(args.suites, root)
    shares = match_shares(suites, root, args.share)
    if args.from_reports is not None:
        if not args.from_reports.is_dir():
            raise UsageError(f"--from-reports: no such folder: {args.from_reports}")
        try:
            return summarize([read_mode(mode, args.from_reports) for mode in modes])
        except RuntimeError as exc:
            raise UsageError(str(exc)) from None
    check_output_folder(args.out, "--out")
    out = new_run_dir(args.out.resolve())
    # Test ids are paths relative to the rootdir: a file outside it would be named `::test` alone,
    # and two files' tests would share ids.
    rootdir = Path(os.path.commonpath([root, *suites]))
    settings = PeerSettings(root=root, rootdir=rootdir, out=out, workers=args.workers, timeout=args.timeout,
                            extra=("-k", args.keyword) if args.keyword else (), hash_seed=args.hash_seed,
                            memory_limit=int(args.memory_limit * GIB) or None)
    return run_campaign(settings, suites, modes, shares, seed, args.parallel, args.shards)
