"""`python -m verify run` (also `python -m verify` alone, the default job) and `python -m verify
report --from DIR`: the run campaign's command line (the campaign: verify.run).

`run` parses the options (`_add_run_arguments`), refuses bad usage in one line before any work
(verify.usage.UsageError, exit 2: an unknown model, target or feature, a bad number, an output
that cannot be written, a --resume given options of its own), and calls the run folder's
lifecycle, verify.run.folder.Run: `Run.new` (or `Run.resume` of DIR) makes and locks the folder and
starts (reads) its journal -- a folder that holds a run or that another process works in is
refused there, also before any work -- and `execute` runs the cases and writes the reports.
`report --from DIR` runs nothing: `Run.report_from` rebuilds a run's reports from its journal,
also of an interrupted run. Exit status: `python -m verify --help` (verify.cli, which registers
both here: `add_parser` and `add_report_parser`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from verify.commands import arguments
from verify.jobs.launcher import add_memory_limit_option, memory_limit_of
from verify.lowering.mode import Mode
from verify.usage import UsageError

if TYPE_CHECKING:
    from verify.run.runner import RunOptions

DEFAULT_TARGETS = ("tosa-int", "ethos-u55")


def add_parser(sub) -> None:
    """`run`; `report` is `add_report_parser` (`python -m verify --help` lists bench between them)."""
    run = sub.add_parser("run", help="verify chosen models × targets")
    _add_run_arguments(run)
    run.set_defaults(handler=cmd_run)


def add_report_parser(sub) -> None:
    report = sub.add_parser("report", help="rebuild a run's reports from its journal (also of an interrupted run)")
    report.add_argument("--from", dest="source", type=Path, required=True, metavar="DIR", help="the run folder")
    report.add_argument("--json", type=Path, default=None, help="also write the JSON report here")
    report.add_argument("--junit", type=Path, default=None, help="also write a JUnit XML report here")
    report.set_defaults(handler=cmd_report)


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--models", default="all",
                   help="comma-separated built-in models, 'all' (default) or 'none'")
    p.add_argument("--model", action="append", default=[], metavar="REF",
                   help="a user model: path/to/file.py:factory or package.module:factory returning "
                        "(nn.Module, example_inputs); repeatable. The factory is called twice, to tell "
                        "whether it is deterministic")
    p.add_argument("--random", type=int, default=0, metavar="N",
                   help="also verify N random graphs drawn by generators.random")
    p.add_argument("--seed", type=int, default=0, help="seed of the random graph draw (with --random; default 0)")
    p.add_argument("--targets", default=",".join(DEFAULT_TARGETS),
                   help="comma-separated: tosa-int, tosa-fp, ethos-u55, ethos-u85 (default: %(default)s)")
    p.add_argument("--features", default="all",
                   help="fastpass features of the fastpass lowering: 'all' (default) or a comma-separated subset")
    p.add_argument("--second-mode", type=Mode, choices=tuple(Mode), default=Mode.FASTPASS,
                   help="the lowering compared with stock: 'fastpass' (default), or 'stock' for a "
                        "stock-vs-stock null run at the pinned seed")
    p.add_argument("--hash-seed", type=int, default=0, help="PYTHONHASHSEED of both compared lowerings, 0..4294967295 (default 0)")
    p.add_argument("--null-seed", type=int, default=1,
                   help="hash seed of the cross-seed null check (stock vs stock), 0..4294967295; -1 disables it "
                        "(default 1)")
    p.add_argument("--reference-sets", type=int, default=3,
                   help="random input sets run through the TOSA reference model per delegate (default 3)")
    from verify.lowering.quantize import CALIBRATIONS

    p.add_argument("--calibration", choices=tuple(CALIBRATIONS), default="histogram",
                   help="activation observer of INT quantization: 'histogram' = executorch's recipe (default), "
                        "'minmax' = the same with MinMaxObserver, as the fuzz tests use (same graph structure, "
                        "faster)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per worker process (default 1800)")
    p.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                   help="worker processes at once; a case runs two at once (its lowerings and its null check; "
                        "one with --null-seed -1), so N // 2 cases at a time (default: one case at a time; "
                        "on a cluster: its CPUs). May be given with --resume")
    add_memory_limit_option(p, "a worker process")
    p.add_argument("--out", type=Path, default=None,
                   help="run folder (default verify-out/<time>-<pid>-<random>; must not hold a run already)")
    p.add_argument("--resume", type=Path, default=None, metavar="DIR",
                   help="finish the run in DIR: its options and cases, skipping the finished ones "
                        "(only --json/--junit, -j and --cluster may be given with it)")
    p.add_argument("--keep-all", action="store_true", help="keep snapshots of identical cases too")
    p.add_argument("--json", type=Path, default=None, help="write the JSON report here")
    p.add_argument("--junit", type=Path, default=None, help="write a JUnit XML report here")


def _model_refs(args) -> list[str]:
    from verify.cases import builtin_models, usage_problem

    models = builtin_models() if args.models == "all" else ([] if args.models == "none" else arguments.csv(args.models))
    models += args.model
    for ref in models:
        problem = usage_problem(ref)
        if problem:
            raise UsageError(problem)
    if not models and not args.random:
        raise UsageError("no models selected (--models none and no --model)")
    return models


def _targets(text: str) -> list[str]:
    from verify.lowering.targets import TARGETS

    targets = arguments.csv(text)
    if not targets:
        raise UsageError("no targets selected")
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        raise UsageError(f"unknown target(s) {', '.join(unknown)}; known: {', '.join(TARGETS)}")
    return targets


def _run_defaults() -> dict:
    parser = argparse.ArgumentParser(add_help=False)
    _add_run_arguments(parser)
    return vars(parser.parse_args([]))


def _options(args, features: tuple[str, ...]) -> RunOptions:
    """The run's options from the command line (the run folder fills in out_dir)."""
    from verify.run.runner import RunOptions

    return RunOptions(features=features, hash_seed=args.hash_seed, null_seed=arguments.null_seed(args.null_seed),
                      reference_sets=args.reference_sets, timeout=args.timeout, keep_all=args.keep_all,
                      second_mode=args.second_mode, calibration=args.calibration,
                      memory_limit=memory_limit_of(args.memory_limit))


def _check_outputs(args) -> None:
    from verify.usage.output_paths import check_output_file

    if args.json:
        check_output_file(args.json, "--json")
    if args.junit:
        check_output_file(args.junit, "--junit")


def _check_numbers(args) -> None:
    """The numbers a run is given, each refused in one line before anything is imported or made
    (a bad one would otherwise surface in every worker, or after the run folder exists)."""
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"-j must be 1 or more, got {args.jobs}")
    arguments.hash_seed(args.hash_seed)
    arguments.null_seed(args.null_seed)
    arguments.timeout(args.timeout)
    memory_limit_of(args.memory_limit)


def _check_resume(args) -> None:
    """--resume runs with the options its journal kept: any other given is refused, not ignored."""
    defaults = _run_defaults()
    given = sorted(f"--{k.replace('_', '-')}" for k, v in vars(args).items()
                   if k in defaults and k not in ("resume", "json", "junit", "jobs") and v != defaults[k])
    if given:
        raise UsageError(f"--resume takes the options of the run it resumes; drop {', '.join(given)}")
    _check_outputs(args)


def _check_new_run(args) -> tuple[list[str], list[str], RunOptions]:
    """What a new run verifies, each option refused in one line before any work: (models,
    targets, RunOptions); the run folder refuses itself (one that holds a run, or is in use)."""
    from verify.usage.output_paths import check_output_folder

    features = arguments.features(args.features)
    if args.second_mode is Mode.FASTPASS:
        arguments.proof_ledger()
    for name, value in (("--reference-sets", args.reference_sets), ("--random", args.random)):
        if value < 0:
            raise UsageError(f"{name} must be 0 or more, got {value}")
    models = _model_refs(args)
    targets = _targets(args.targets)
    _check_outputs(args)
    if args.out is not None:
        check_output_folder(args.out, "--out")
    return models, targets, _options(args, features)


def cmd_run(args) -> int:
    _check_numbers(args)  # (with --resume they are the defaults: it refuses any other)
    if args.resume is not None:
        _check_resume(args)
    else:
        models, targets, options = _check_new_run(args)
    from verify.run.folder import Run  # (after the checks: it imports torch)

    with (Run.resume(args.resume) if args.resume is not None
          else Run.new(args.out, models, targets, options, random_graphs=args.random, seed=args.seed,
                       argv=sys.argv[1:])) as run:
        return run.execute(args.jobs, args.json, args.junit)


def cmd_report(args) -> int:
    _check_outputs(args)
    from verify.run.folder import Run  # (after the check: it imports torch)

    return Run.report_from(args.source, args.json, args.junit)
