"""`python -m verify`: the command-line contract other tools and CI call.

    python -m verify                      default job: built-in models × {tosa-int, ethos-u55}
    python -m verify run [options]        chosen models, targets, features
    python -m verify bench [options]      interleaved stock/fastpass timing, identical output checked
    python -m verify gate [options]       prove targeted_ops annotations skip- and copy-sound
    python -m verify infer module:Class   propose a pass's minimal copy-sound targeted_ops

Exit status: 0 only if every case is `identical`; 1 if any is not; 2 for bad usage.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

DEFAULT_TARGETS = ("tosa-int", "ethos-u55")


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--models", default="all",
                   help="comma-separated built-in models, 'all' (default) or 'none'")
    p.add_argument("--model", action="append", default=[], metavar="REF",
                   help="a user model: path/to/file.py:factory or package.module:factory returning "
                        "(nn.Module, example_inputs); repeatable")
    p.add_argument("--random", type=int, default=0, metavar="N",
                   help="also verify N random graphs drawn by generators.random")
    p.add_argument("--seed", type=int, default=0, help="seed of the random graph draw (with --random)")
    p.add_argument("--targets", default=",".join(DEFAULT_TARGETS),
                   help="comma-separated: tosa-int, tosa-fp, ethos-u55, ethos-u85 (default: %(default)s)")
    p.add_argument("--features", default="all",
                   help="fastpass features for the fast mode: 'all' (default) or a comma-separated subset")
    p.add_argument("--second-mode", choices=("fast", "full"), default="fast",
                   help="'full' compares stock against stock at the pinned seed (a null run)")
    p.add_argument("--hash-seed", type=int, default=0, help="PYTHONHASHSEED of both compared lowerings")
    p.add_argument("--null-seed", type=int, default=1,
                   help="hash seed of the cross-seed null check (stock vs stock); -1 disables it")
    p.add_argument("--reference-sets", type=int, default=3,
                   help="random input sets run through the TOSA reference model per delegate")
    from verify.lowering.quantize import CALIBRATIONS

    p.add_argument("--calibration", choices=tuple(CALIBRATIONS), default="histogram",
                   help="activation observer of INT quantization: 'histogram' = executorch's recipe (default), "
                        "'minmax' = the same with MinMaxObserver, as the fuzz tests use (same graph structure, "
                        "faster)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per worker process")
    p.add_argument("--out", type=Path, default=None, help="artifact folder (default verify-out/<time>)")
    p.add_argument("--keep-all", action="store_true", help="keep snapshots of identical cases too")
    p.add_argument("--json", type=Path, default=None, help="write the JSON report here")
    p.add_argument("--junit", type=Path, default=None, help="write a JUnit XML report here")


def _features(text: str) -> tuple[str, ...]:
    if text == "all":
        return ()
    wanted = tuple(_csv(text))
    try:
        import fastpass
    except ImportError:
        return wanted
    unknown = [f for f in wanted if f not in fastpass.FEATURES]
    if unknown:
        raise SystemExit(f"verify: unknown fastpass feature(s) {', '.join(unknown)}; "
                         f"known: {', '.join(fastpass.FEATURES)}")
    return wanted


def _random_models(count: int, seed: int, folder: Path) -> list[str]:
    """Draw `count` graphs reproducibly from `seed`; each is saved as JSON and named `graphspec:<file>`."""
    from verify.fuzz import draw_graphs

    folder.mkdir(parents=True, exist_ok=True)
    refs = []
    for spec in draw_graphs(count, seed):
        path = folder / f"graph-{spec.fingerprint()}.json"
        path.write_text(spec.to_json(indent=1))
        refs.append(f"graphspec:{path}")
    return refs


def _cases(args, out: Path) -> list:
    from verify.cases import Case, builtin_models

    models = builtin_models() if args.models == "all" else ([] if args.models == "none" else _csv(args.models))
    models += args.model
    if args.random:
        models += _random_models(args.random, args.seed, out / "random-graphs")
    if not models:
        raise SystemExit("verify: no models selected (--models none and no --model)")
    targets = _csv(args.targets)
    if not targets:
        raise SystemExit("verify: no targets selected")
    return [Case(m, t) for m in models for t in targets]


def cmd_run(args) -> int:
    from verify.report.files import write_json, write_junit
    from verify.report.table import progress, table
    from verify.runner import RunOptions, run_cases

    features = _features(args.features)
    out = args.out or Path("verify-out") / time.strftime("%Y%m%d-%H%M%S")
    cases = _cases(args, out)
    options = RunOptions(features=features, hash_seed=args.hash_seed,
                         null_seed=None if args.null_seed < 0 else args.null_seed,
                         reference_sets=args.reference_sets, timeout=args.timeout, out_dir=out,
                         keep_all=args.keep_all, second_mode=args.second_mode,
                         calibration=args.calibration)
    print(f"verify: {len(cases)} case(s), features {','.join(features) or 'all'}, hash seed {args.hash_seed}, "
          f"null seed {options.null_seed}, artifacts in {out}", file=sys.stderr, flush=True)
    started = time.perf_counter()
    counter = iter(range(1, len(cases) + 1))

    def show(event, case, report):
        if event == "start":
            print(f"[{next(counter)}/{len(cases)}]", end=" ", file=sys.stderr)
        progress(event, case, report)

    reports = run_cases(cases, options, progress=show)
    print(table(reports))
    print(f"wall time {time.perf_counter() - started:.0f} s")
    run_info = {"features": list(features) or "all", "hash_seed": args.hash_seed, "null_seed": options.null_seed,
                "second_mode": args.second_mode, "calibration": args.calibration, "wall_seconds": time.perf_counter() - started}
    write_json(reports, out / "report.json", run_info)
    if args.json:
        write_json(reports, args.json, run_info)
    if args.junit:
        write_junit(reports, args.junit)
    return 0 if all(r.verdict == "identical" for r in reports) else 1


def cmd_bench(args) -> int:
    import json

    from verify.bench.plot import write_plot
    from verify.bench.run import BenchError, BenchOptions, format_table, run_bench
    from verify.lowering.targets import TARGETS

    if args.target not in TARGETS:
        raise SystemExit(f"verify bench: unknown target {args.target!r}; known: {', '.join(TARGETS)}")
    if args.pairs < 1:
        raise SystemExit("verify bench: --pairs must be at least 1")
    options = BenchOptions(model=args.model, target=args.target, pairs=args.pairs,
                           features=_features(args.features), hash_seed=args.hash_seed,
                           ablation=args.ablation, timeout=args.timeout)
    if args.work_dir:
        options.work_dir = args.work_dir
    print(f"verify bench: {args.model} on {args.target}, {args.pairs} pair(s), logs in {options.work_dir}",
          file=sys.stderr, flush=True)
    try:
        result = run_bench(options, progress=lambda s: print("  " + s, file=sys.stderr, flush=True))
    except BenchError as exc:
        print(f"verify bench: {exc}", file=sys.stderr)
        return 1
    print(format_table(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))
    if args.plot:
        write_plot(result, args.plot)
    return 0 if result["identical"] else 1


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m verify", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="verify chosen models × targets")
    _add_run_arguments(run)
    run.set_defaults(handler=cmd_run)
    bench = sub.add_parser("bench", help="interleaved stock/fastpass benchmark, fresh process per lowering")
    bench.add_argument("--model", default="sleepnet", help="built-in name or module:factory (default %(default)s)")
    bench.add_argument("--target", default="ethos-u55", help="default %(default)s")
    bench.add_argument("--pairs", type=int, default=3, help="interleaved (stock, fastpass) pairs (default 3)")
    bench.add_argument("--features", default="all", help="'all' or a comma-separated subset")
    bench.add_argument("--ablation", action="store_true",
                       help="also one round of each feature alone and cumulatively")
    bench.add_argument("--hash-seed", type=int, default=0)
    bench.add_argument("--timeout", type=float, default=1800.0, help="seconds per lowering process")
    bench.add_argument("--json", type=Path, default=None)
    bench.add_argument("--plot", type=Path, default=None, help="PNG of per-pass time and ablation")
    bench.add_argument("--work-dir", type=Path, default=None, help="where per-process logs go")
    bench.set_defaults(handler=cmd_bench)
    from verify.gate.cli import add_parsers as add_gate_parsers

    add_gate_parsers(sub)  # `gate` and `infer`
    if not argv:  # the default job
        argv = ["run"]
    args = parser.parse_args(argv)
    return args.handler(args)
