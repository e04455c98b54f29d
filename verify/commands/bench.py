"""`python -m verify bench`: the command line of the benchmark.

    python -m verify bench [--models a,b,c] [--model REF ...] [--targets t1,t2] [--target T ...]
                           [--pairs N] [--features all|f1,f2] [--ablation] [--hash-seed N]
                           [--timeout S] [--json FILE] [--plot FILE.png] [--work-dir DIR]

Exit status: 0 every case lowered and its output was identical in every pair (and ablation run),
1 not identical or a lowering failed (the other cases still run), 2 bad usage (refused with one
line before any work), 130/143 stopped by SIGINT/SIGTERM: the lowering in flight is killed, and
the table and `--json` are written from the pairs that finished, marked incomplete
(`"complete": false, "stopped_by": "SIGINT"`).
"""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path

from verify.jobs.launcher import add_memory_limit_option, memory_limit_of

log = logging.getLogger(__name__)

DEFAULT_MODEL = "sleepnet"
DEFAULT_TARGET = "ethos-u55"


def add_parser(sub) -> None:
    bench = sub.add_parser("bench", help="interleaved stock/fastpass benchmark, fresh process per lowering")
    bench.add_argument("--models", default=None, metavar="A,B,C",
                       help="comma-separated models benched in one interleaved run: built-in names "
                            "(generators.models), file.py:factory, module:factory, graphspec:FILE, or "
                            f"randomN:SEED (a random graph of N ops); default {DEFAULT_MODEL}")
    bench.add_argument("--model", action="append", default=[], metavar="REF",
                       help="one more model (repeatable; added after --models)")
    bench.add_argument("--targets", default=None, metavar="T1,T2",
                       help=f"comma-separated targets, every model on each; default {DEFAULT_TARGET}")
    bench.add_argument("--target", action="append", default=[], help="one more target (repeatable)")
    bench.add_argument("--pairs", type=int, default=3, help="interleaved (stock, fastpass) pairs per case (default 3)")
    bench.add_argument("--features", default="all", help="'all' or a comma-separated subset")
    bench.add_argument("--ablation", action="store_true",
                       help="also one round of each feature alone and cumulatively, per case "
                            "(timed against the median of the case's stock lowerings)")
    bench.add_argument("--hash-seed", type=int, default=0,
                       help="PYTHONHASHSEED of every lowering process, 0..4294967295 (default 0)")
    bench.add_argument("--timeout", type=float, default=1800.0, help="seconds per lowering process")
    add_memory_limit_option(bench, "a lowering process")
    bench.add_argument("--json", type=Path, default=None, help="write the results here (verify.report.bench.results)")
    bench.add_argument("--plot", type=Path, default=None,
                       help="PNG of per-pass time and ablation (one per case: FILE-<model>-<target>.png for several)")
    bench.add_argument("--work-dir", type=Path, default=None, help="where per-process logs go")
    bench.set_defaults(handler=cmd_bench)


def _listed(csv: str | None, extra: list[str], default: str, option: str) -> tuple[str, ...]:
    from verify.usage import UsageError

    named = [] if csv is None else [item.strip() for item in csv.split(",")]
    if any(not item for item in named):
        raise UsageError(f"--{option}s {csv!r}: an empty name in the list")
    chosen = list(dict.fromkeys([*named, *extra]))  # in order, each once
    return tuple(chosen) if chosen else (default,)


def cmd_bench(args) -> int:
    from verify.commands import arguments

    arguments.hash_seed(args.hash_seed)  # before the imports below (torch): a refusal is one quick line
    from verify.bench.models import usage_problem
    from verify.report.bench.plot import write_plots
    from verify.bench.run import BenchError, BenchOptions, new_work_dir, run_bench
    from verify.report.bench.table import format_table
    from verify.jobs.launcher import RunStopped, stop_on_signals, stop_signal, stopped_exit_status
    from verify.lowering.targets import TARGETS
    from verify.usage.output_paths import check_output_file, check_output_folder
    from verify.report.document import write_document
    from verify.usage import UsageError

    models = _listed(args.models, args.model, DEFAULT_MODEL, "model")
    targets = _listed(args.targets, args.target, DEFAULT_TARGET, "target")
    for target in targets:
        if target not in TARGETS:
            raise UsageError(f"unknown target {target!r}; known: {', '.join(TARGETS)}")
    if args.pairs < 1:
        raise UsageError(f"--pairs must be at least 1, got {args.pairs}")
    arguments.timeout(args.timeout)
    for model in models:
        problem = usage_problem(model)
        if problem:
            raise UsageError(problem)
    features = arguments.features(args.features)
    arguments.proof_ledger()
    memory_limit = memory_limit_of(args.memory_limit)
    for path, option in ((args.json, "--json"), (args.plot, "--plot")):
        if path:
            check_output_file(path, option)
    if args.work_dir:
        check_output_folder(args.work_dir, "--work-dir")
    options = BenchOptions(models=models, targets=targets, pairs=args.pairs, features=features,
                           hash_seed=args.hash_seed, ablation=args.ablation, timeout=args.timeout,
                           memory_limit=memory_limit)
    options.work_dir = args.work_dir or new_work_dir()  # named in the log line below
    log.info("verify bench: %s on %s, %d pair(s) per case, %d lowerings, logs in %s", ", ".join(models),
             ", ".join(targets), args.pairs, len(models) * len(targets) * args.pairs * 2, options.work_dir)
    # The handlers stay in place while the reports are written: a second Ctrl-C must not cut that short.
    with stop_on_signals():
        try:
            # progress is a diagnostic (-q hides it); the verdicts are printed below whatever the level
            result = run_bench(options, progress=lambda line: log.info("  %s", line))
        except RunStopped:  # stopped before the first lowering (while resolving the models)
            print(f"verify bench: stopped by {signal.Signals(stop_signal()).name} before any lowering",
                  file=sys.stderr)
            return stopped_exit_status(stop_signal())
        except BenchError as exc:
            print(f"verify bench: {exc}", file=sys.stderr)
            return 1
        print(format_table(result))
        if args.json:
            write_document(args.json, result.to_json())
        if args.plot and result.complete:
            for path in write_plots(args.plot, result.cases, result.ablation):
                print(f"verify bench: wrote {path}", file=sys.stderr)
    if any(case.error for case in result.cases):
        print("verify bench: a lowering FAILED (see the table and the logs in the work dir)", file=sys.stderr)
    if not all(pair.identical for case in result.cases for pair in case.pairs) or not all(
            row.identical for row in result.ablation):
        print("verify bench: NOT IDENTICAL: fastpass output differs from stock (see the table)", file=sys.stderr)
    if not result.complete:
        print(f"verify bench: stopped by {result.stopped_by}; lowering processes killed; the table"
              + (f" and {args.json}" if args.json else "") + " hold the finished pairs", file=sys.stderr)
        return stopped_exit_status(signal.Signals[result.stopped_by])
    return 0 if result.identical else 1
