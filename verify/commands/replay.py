"""`python -m verify replay FILE`: replay any reproducer (fuzz, gate, crosscheck) with one command.

It reads the reproducer's manifest (verify.report.reproducer), checks it without running
anything from it and refuses a file that names code to run unless `--trust` is given
(verify.report.trust), runs it under the hash seed it was found under (in a child process when this one runs
under another), hands it to the replay of the producer that saved it, and says identical or
divergent, with the first divergent pass. Exit 0 identical, 1 divergent (or the replay failed:
the problem is still there), 2 for bad usage, a file that is not a reproducer or a malformed one.
A gate reproducer can be replayed with another pass (`--pass REF`, e.g. the pass after a fix, in
a file of its own) or on another stage (`--stage`) than the ones it names; a crosscheck reproducer
with other fastpass features (`--features`) or reference-model runs (`--reference-sets`).
(`python -m verify.crosscheck replay`, an alias with those two options, is gone: one replay command.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from verify.commands import arguments
from verify.usage.output_paths import check_output_folder, run_dir_name
from verify.report.reproducer import Producer, Replayed, Reproducer, ReproducerError
from verify.report.trust import authorize, read
from verify.usage import UsageError

DEFAULT_OUT = Path("verify-out/replay")


def add_parser(sub) -> None:
    from verify.gate.stages import STAGES

    parser = sub.add_parser("replay", help="replay a saved reproducer (fuzz, gate or crosscheck): identical or divergent",
                            description="Replay a saved reproducer (fuzz, gate or crosscheck) under the hash seed it "
                                        "was saved under, and say what it finds.",
                            epilog="prints (last line) and exit status: identical (0); divergent: first divergent "
                                   "pass P (1); nondeterministic: ... (1, stock differs from itself); unchecked (1, "
                                   "not compared: the reason above); error (1, the replay failed: details above); "
                                   "2 for bad usage, a file that is not a reproducer or a malformed one, or one that "
                                   "names code to run without --trust (nothing run)")
    parser.add_argument("file", type=Path, metavar="REPRODUCER",
                        help="a reproducer file a fuzz campaign, the gate or crosscheck saved")
    parser.add_argument("--trust", action="store_true",
                        help="run the code a gate or crosscheck reproducer names (a pass it imports, a pickle); "
                             "without it such a file is refused, after saying what it would run")
    parser.add_argument("--pass", dest="pass_ref", default=None, metavar="REF",
                        help="a gate reproducer: replay it with this pass (module:Class or path/to/file.py:Class) "
                             "instead of the one it names")
    parser.add_argument("--stage", choices=STAGES, default=None,
                        help="a gate reproducer: replay it on this stage instead of the one it was found on")
    parser.add_argument("--features", default=None, metavar="F,..",
                        help="a crosscheck reproducer: replay it with these fastpass features ('all' or a "
                             "comma-separated list) instead of those it was saved under")
    parser.add_argument("--reference-sets", type=int, default=None, metavar="N",
                        help="a crosscheck reproducer: TOSA reference-model runs per delegate (default 1; 0 = none)")
    parser.add_argument("--any-hash-seed", action="store_true",
                        help="replay under this process's hash seed, not the one the reproducer was saved under")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="where the replay writes (a crosscheck call that diverges again is saved there as a "
                             f"reproducer); default {DEFAULT_OUT}/<time>-<pid>-<random>, never beside REPRODUCER")
    parser.set_defaults(handler=cmd_replay)


def cmd_replay(args) -> int:
    saved = read(args.file)
    try:
        execution = authorize(saved, args.trust)
    except ReproducerError as exc:
        raise UsageError(str(exc)) from None
    manifest = saved.manifest
    if (args.pass_ref or args.stage) and manifest.producer is not Producer.GATE:
        raise UsageError(f"--pass and --stage replay a gate reproducer; {args.file} is a {manifest.producer} one")
    crosscheck_options = args.features is not None or args.reference_sets is not None
    if crosscheck_options and manifest.producer is not Producer.CROSSCHECK:
        raise UsageError(f"--features and --reference-sets replay a crosscheck reproducer; {args.file} is a "
                         f"{manifest.producer} one")
    features = None if args.features is None else arguments.features(args.features)
    arguments.at_least(args.reference_sets, 0, "--reference-sets")
    if args.pass_ref:
        from verify.gate.passes import reference_problem  # read, not imported: before the lowering stack

        problem = reference_problem(args.pass_ref)
        if problem:
            raise UsageError(problem)
    if args.out is not None:
        check_output_folder(args.out, "--out")
    seed = manifest.hash_seed
    if seed is not None and os.environ.get("PYTHONHASHSEED") != seed and not args.any_hash_seed:
        # The divergence was found under this seed: replay it there (string hashing orders sets).
        command = [sys.executable, "-m", "verify", "replay", str(args.file), "--any-hash-seed",
                   *(["--trust"] if args.trust else []), *(["--out", str(args.out)] if args.out else []),
                   *(["--pass", args.pass_ref] if args.pass_ref else []),
                   *(["--stage", args.stage] if args.stage else []),
                   *(["--features", args.features] if args.features is not None else []),
                   *(["--reference-sets", str(args.reference_sets)] if args.reference_sets is not None else [])]
        return subprocess.run(command, env={**os.environ, "PYTHONHASHSEED": seed}).returncode
    for line in execution.what:
        print(f"replay: {line}", file=sys.stderr)
    what = f" of {manifest.pass_ref}" if manifest.pass_ref else ""
    if args.pass_ref:
        what = f" with {args.pass_ref} (saved{what})"
    target = args.stage or manifest.target
    shown_features = manifest.features if features is None else features
    print(f"replaying {manifest.producer} reproducer{what} ({target or 'no target'}, features "
          f"{','.join(shown_features) or 'all'}, hash seed {seed or 'random'}; saved first divergent pass: "
          f"{manifest.first_divergent_pass or 'not located'})", flush=True)
    out = args.out
    if out is None and manifest.producer is Producer.CROSSCHECK:  # the one replay that writes: a folder of its own
        out = run_dir_name(DEFAULT_OUT)  # made when something is written there
    if out is not None:
        print(f"replay: writes under {out}", file=sys.stderr)
    try:
        replayed = replay_reproducer(saved, out, pass_ref=args.pass_ref, stage=args.stage, features=features,
                                     reference_sets=args.reference_sets)
    except ReproducerError as exc:
        raise UsageError(str(exc)) from None
    for line in replayed.details[:12]:
        print("  " + line)
    print(replayed.describe())
    return replayed.exit_status


def replay_reproducer(saved: Reproducer, out: Path | None = None, pass_ref: str | None = None,
                      stage: str | None = None, features: tuple[str, ...] | None = None,
                      reference_sets: int | None = None) -> Replayed:
    """Hand `saved` to the replay of the campaign that saved it (verify.fuzz.search,
    verify.gate.reproducer, verify.crosscheck.replay), in this process (after `authorize`): above the
    campaigns, which it calls, in the command that alone needs it. What the
    replay saves (a crosscheck call that diverges again) goes to `out`. A gate reproducer is
    replayed with the pass `pass_ref` and on `stage` when given, else with those it names; a
    crosscheck one with `features` and `reference_sets` when given (None: as saved, and 1)."""
    producer = saved.manifest.producer
    if producer is Producer.FUZZ:
        from verify.fuzz.search import replay as replay_graph

        return replay_graph(saved)
    if producer is Producer.GATE:
        from verify.gate.passes import PassRefError
        from verify.gate.reproducer import replay_saved

        try:
            return replay_saved(saved, pass_ref, stage)
        except PassRefError as exc:  # the file's pass reference does not resolve (or is no pass)
            if pass_ref:  # the command line's reference, not the file's
                raise ReproducerError(f"--pass {pass_ref}: {exc}") from None
            raise ReproducerError(f"malformed gate reproducer {saved.path}: {exc}") from None
    from verify.crosscheck.replay import replay as replay_call

    return replay_call(saved, features, 1 if reference_sets is None else reference_sets, out=out)
