"""`python -m verify selftest`: the gate's mutation score on wrong annotations derived from the
registry (verify.gate.selftest says how the mutants are derived, gated and counted).

    python -m verify selftest [--mutants N] [--seed S] [-j K] [--unaimed] [--resume JSON] [--json FILE]
                              [--out DIR] [gate's search options: --examples, --stage, --max-seconds, ...]

Each mutant is gated as CI gates a changed annotation, with `gate`'s search options and their
defaults (verify.commands.gate's `add_search_options`, checked as `gate` checks them). Exit
status: 0 if the gate kills at least the threshold share of the killed-or-survived mutants and
the run is complete, 1 otherwise, 2 for bad usage (one line, before any work: the lowering stack
is not imported), 128 + the signal when stopped by SIGINT/SIGTERM (the JSON keeps what the
mutants' processes measured). `--shard I/K` (hidden) is a mutant's own process, started by the
self-test itself (verify.gate.selftest.in_processes).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from verify.commands.arguments import at_least
from verify.commands.gate import add_search_options, check_search_usage, search_defaults
from verify.gate.campaign import DEFAULT_STAGES
from verify.usage import UsageError


def add_parser(sub) -> None:
    parser = sub.add_parser("selftest", help="the gate's mutation score: gate wrong annotations derived from the "
                                             "registry, as CI would; exit 1 if it kills fewer than its threshold")
    parser.add_argument("--mutants", type=int, default=6, metavar="N", help="mutants gated (default %(default)s)")
    parser.add_argument("--unaimed", action="store_true",
                        help="draw as the gate did before its aimed search (a before/after figure)")
    parser.add_argument("--resume", type=Path, default=None, metavar="JSON",
                        help="keep the mutants the --json of an earlier run of the same sample, settings and "
                             "revision gated; gate the rest")
    add_search_options(parser)
    parser.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                        help="mutants gated at once, each in a self-test process of its own; default: 2 or the "
                             "CPU count, if smaller")
    parser.add_argument("--shard", type=_shard, default=None, help=argparse.SUPPRESS)  # a mutant's own process
    parser.set_defaults(handler=cmd_selftest)


def _shard(text: str) -> tuple[int, int]:
    """`I/K` (0 <= I < K): a self-test process gates every K-th mutant from the (I+1)-th (K = the sample: one)."""
    try:
        first, step = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I/K, got {text!r}") from None
    if not 0 <= first < step:
        raise argparse.ArgumentTypeError(f"expected 0 <= I < K, got {text!r}")
    return first, step


def cmd_selftest(args) -> int:
    from verify.jobs.launcher import stop_on_signals, stop_signal, stopped_exit_status

    check_search_usage(args)  # UsageError: one line, exit 2, before any work
    at_least(args.mutants, 1, "--mutants")
    if args.resume is not None and not args.resume.is_file():
        raise UsageError(f"--resume {args.resume}: no such file")
    search_defaults(args, registry=True)
    from verify.gate.selftest import run as self_test  # the lowering stack, once the arguments are checked

    with stop_on_signals():  # a stop kills the mutant processes' groups; what they measured is kept
        code = self_test(args, DEFAULT_STAGES)
    return code if stop_signal() is None else stopped_exit_status(stop_signal())
