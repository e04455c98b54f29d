"""`python -m verify gate` and `python -m verify infer`: the gate's command lines.

    python -m verify gate [--pass REF ...] [--changed-since REV] [--examples N] [--min-evidence K]
                          [--stage edge-fp|quantized|ethos-u55|ethos-u85 ...] [-j N] [--pass-timeout S]
                          [--junit FILE] [--json FILE] [--out DIR]
    python -m verify infer REF [--examples N] [--stage STAGE] [--json FILE]

REF is `package.module:Class` or `path/to/file.py:Class`. Exit status of `gate`: 0 if no checked
pass is unsound or errored (sound, unexercised and untested passes are listed), 1 if any is
(a pass whose check did not start within --max-seconds is an error), 2 for bad usage (every
argument, bad pass references included, refused with one line before any work), 128 + the
signal when stopped by SIGINT/SIGTERM. An incomplete run is never green: every pass whose check
did not finish is an `error` in the reports ("not run: stopped by SIGTERM ...", a JUnit error;
the JSON's `ok` is false), next to the verdicts that finished.

The command parses and checks the options, then hands the run to the gate's campaign
(verify.gate.campaign: each `--pass` check, and in a registry run each stage's search and each
direct check, in a worker process, `-j N` at a time) and `infer` to verify.gate.infer; the reports
are written through verify.report.gate. The options of a search and their checks
(`add_search_options`, `check_search_usage`, `search_defaults`) are also `selftest`'s
(verify.commands.selftest), which gates wrong annotations as this command would; a gate
reproducer is replayed by `verify replay` (verify.commands.replay).
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

from verify.commands.arguments import at_least
from verify.usage.output_paths import check_output_folder
from verify.usage import UsageError
from verify.gate import ledger
from verify.gate.campaign import (DEFAULT_OUT, DEFAULT_PASS_EXAMPLES, DEFAULT_REGISTRY_EXAMPLES,
                                  DEFAULT_TOP_UP_SECONDS, gate_passes)
from verify.gate.verdict import DEFAULT_MIN_EVIDENCE
from verify.report.document import write_document
from verify.report.gate import table, unproven_line, write_json, write_junit
from fastpass.annotations import ProofStatus
from verify.lowering.heap import release_long_lived_heap


def add_parsers(sub) -> None:
    from verify.gate.stages import STAGES

    gate = sub.add_parser("gate", help="prove targeted_ops annotations skip- and copy-sound")
    gate.add_argument("--pass", dest="passes", action="append", default=[], metavar="REF",
                      help="a pass to check: module:Class or path/to/file.py:Class (repeatable); "
                           "default: every annotated pass")
    gate.add_argument("--changed-since", metavar="GIT_REV", default=None,
                      help="only passes whose annotation in fastpass/annotations changed since GIT_REV")
    gate.add_argument("--since-gated", action="store_true",
                      help="only passes whose annotation changed since the revision the proof ledger "
                           "(fastpass/annotations/proofs.json) was gated at (what CI runs); every annotated pass if "
                           "fastpass/*.py changed since, or if that revision is not in this clone")
    gate.add_argument("--record-gated", action="store_true",
                      help="when no checked pass is unsound or errored, write the run's verdicts into the proof "
                           "ledger (fastpass/annotations/proofs.json) and, for a registry run, HEAD as the "
                           "revision it was gated at (a --pass run proves those passes only)")
    add_search_options(gate)
    gate.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                      help="workers at once: --pass checks, or a registry run's stage searches and then "
                           "its direct checks, each in a worker process; default: 2 or the CPU count, "
                           "if smaller")
    gate.add_argument("--direct", action="store_true",
                      help="run the --pass passes directly on edge graphs even if the pipeline invokes them")
    gate.add_argument("--ops", default=None,
                      help="comma-separated vocabulary ops (generators.random) the graphs are built from")
    gate.add_argument("--junit", type=Path, default=None, help="write a JUnit XML report here")
    gate.set_defaults(handler=cmd_gate)

    infer = sub.add_parser("infer", help="propose a pass's minimal copy-sound targeted_ops")
    infer.add_argument("ref", metavar="REF", help="module:Class or path/to/file.py:Class")
    infer.add_argument("--examples", type=int, default=30, help="corpus graphs (default %(default)s)")
    infer.add_argument("--stage", choices=STAGES, default="edge-fp",
                       help="the lowering stage whose graphs the pass is run on, as the gate runs it "
                            "(default %(default)s)")
    infer.add_argument("--max-ops", type=int, default=4, help="most ops per corpus graph (default %(default)s)")
    infer.add_argument("--ops", default=None, help="comma-separated vocabulary ops to build the corpus from")
    infer.add_argument("--json", type=Path, default=None, metavar="FILE",
                       help="also write the proposed targeted_ops and how they fit the annotation as JSON here")
    infer.set_defaults(handler=cmd_infer)


def add_search_options(parser) -> None:
    """The options of the gate's search and its budget: `gate`'s, and `selftest`'s, which gates
    each mutant as `gate` would (checked by `check_search_usage`, defaulted by `search_defaults`;
    each command adds its own `-j`, which both check and default there)."""
    from verify.gate.stages import STAGES

    parser.add_argument("--examples", type=int, default=None,
                        help=f"graphs per stage for the registry run (default {DEFAULT_REGISTRY_EXAMPLES}), "
                             f"per mode for --pass (default {DEFAULT_PASS_EXAMPLES})")
    parser.add_argument("--stage", choices=STAGES, action="append", default=None,
                        help="edge-fp (TOSA-1.0+FP pipeline / FP edge graphs), quantized (TOSA-1.0+INT), "
                             "ethos-u55 or ethos-u85 (EthosUQuantizer, Vela); repeatable; default: all four "
                             "for the registry run, edge-fp for --pass (one stage only)")
    parser.add_argument("--min-evidence", type=int, default=DEFAULT_MIN_EVIDENCE, metavar="K",
                        help="`sound` needs K examples in which fastpass acted in the pass (copied nodes "
                             "for copy-sound, skipped it for skip-sound); less is `unexercised` "
                             "(default %(default)s)")
    parser.add_argument("--top-up", type=int, default=None, metavar="N",
                        help="registry run: after --examples, up to N more graphs per stage drawn for "
                             "the passes still short of evidence (default: --examples)")
    parser.add_argument("--direct-examples", type=int, default=None, metavar="N",
                        help="registry run: graphs per feature for the passes no stage's pipeline invokes, "
                             "run directly on edge/ATen graphs (default: --min-evidence + 3; 0 = untested)")
    parser.add_argument("--max-seconds", type=float, default=None, metavar="S",
                        help="time budget of the whole run. A registry run keeps a sixth for the direct "
                             "runs; the stage searches run -j at a time, so each gets the rest divided by "
                             "the rounds of -j searches (4 stages, -j 2: half of it each; -j 1: a quarter), "
                             "counted from its own start and never past the direct runs' sixth; graphs past "
                             "it are not drawn; a pass whose check (a stage search or its own) has not started "
                             "by then is an error, 'not started' (default: none)")
    parser.add_argument("--pass-timeout", type=float, default=None, metavar="S",
                        help="a worker still running after S seconds is killed: its pass gets an error "
                             "verdict (<worker-timeout>), or a registry stage an error entry "
                             "(<worker-timeout:STAGE>) and no evidence; default: 1800 for a pass check, "
                             "7200 for a stage search (a hang guard: bound a run with --max-seconds)")
    parser.add_argument("--top-up-seconds", type=float, default=DEFAULT_TOP_UP_SECONDS,
                        help="registry run: time budget of the top-up per stage (default %(default)s)")
    parser.add_argument("--max-ops", type=int, default=4, help="ops per random graph (default %(default)s)")
    parser.add_argument("--seed", type=int, default=None,
                        help="fixed Hypothesis seed (repeatable runs; the example database is then not used)")
    parser.add_argument("--shrink-seconds", type=float, default=300.0, help="time budget to shrink one failure")
    parser.add_argument("--out", type=Path, default=None, help="artifacts (default verify-out/gate)")
    parser.add_argument("--json", type=Path, default=None, help="write the JSON report here")


def _resolve_all(refs):
    from verify.gate import passes as gp

    out = []
    for ref in refs:
        try:
            out.append((ref, gp.resolve_pass(ref)))
        except gp.PassRefError as exc:
            raise UsageError(str(exc)) from None
    return out


def _refs_on_their_face(refs) -> None:
    """UsageError for the first pass reference wrong on its face (verify.gate.passes.reference_problem:
    read, not imported), before the lowering stack is imported to resolve them."""
    from verify.gate.passes import reference_problem

    for ref in refs:
        problem = reference_problem(ref)
        if problem:
            raise UsageError(problem)


def _ops(text: str | None) -> list[str] | None:
    """The vocabulary ops of `--ops`, checked (UsageError: exit 2 before any work) against the
    vocabulary's names as verify.gate.op_names keeps them: generators.random's own list needs torch."""
    if text is None:
        return None
    from verify.gate.op_names import VOCABULARY_OPS

    ops = [o.strip() for o in text.split(",") if o.strip()]
    if not ops:
        raise UsageError("--ops names no op")
    unknown = [o for o in ops if o not in VOCABULARY_OPS]
    if unknown:
        raise UsageError(f"unknown vocabulary op(s) {', '.join(unknown)} in --ops; "
                         f"known: {', '.join(VOCABULARY_OPS)}")
    return ops


def _positive(value: float | None, option: str) -> None:
    if value is not None and not value > 0:
        raise UsageError(f"{option} must be positive, got {value:g}")


def check_search_usage(args) -> None:
    """The search options (`add_search_options`) that can be wrong: numbers out of range, an
    unwritable --json (UsageError: one line, exit 2), checked before the lowering stack is
    imported; --stage is argparse's (a choice), --seed any integer (a Hypothesis seed)."""
    from verify.usage.output_paths import check_output_file

    at_least(args.examples, 1, "--examples")
    at_least(args.min_evidence, 1, "--min-evidence")
    _positive(args.max_seconds, "--max-seconds")
    at_least(args.jobs, 1, "-j")
    _positive(args.pass_timeout, "--pass-timeout")
    at_least(args.top_up, 0, "--top-up")
    at_least(args.top_up_seconds, 0, "--top-up-seconds")
    at_least(args.direct_examples, 0, "--direct-examples")
    at_least(args.max_ops, 1, "--max-ops")
    at_least(args.shrink_seconds, 0, "--shrink-seconds")
    if args.json:
        check_output_file(args.json, "--json")


def search_defaults(args, registry: bool) -> None:
    """The search options' defaults that depend on the run (a registry run's or a --pass check's)
    or on this machine, set on `args` once they are checked: --examples, -j, --pass-timeout (and
    a stage search's timeout), --direct-examples."""
    from verify.gate.workers import DEFAULT_PASS_TIMEOUT, DEFAULT_STAGE_TIMEOUT, default_parallel

    if args.examples is None:
        args.examples = DEFAULT_REGISTRY_EXAMPLES if registry else DEFAULT_PASS_EXAMPLES
    if args.jobs is None:
        args.jobs = default_parallel()
    args.stage_timeout = DEFAULT_STAGE_TIMEOUT if args.pass_timeout is None else args.pass_timeout
    if args.pass_timeout is None:
        args.pass_timeout = DEFAULT_PASS_TIMEOUT
    if args.direct_examples is None:
        args.direct_examples = args.min_evidence + 3


def check_gate_usage(args) -> list[str] | None:
    """Every gate argument that can be wrong, checked before any work (UsageError: one line,
    exit 2): the search options (`check_search_usage`), unknown ops, combinations that contradict
    each other, an unwritable --junit, a --pass reference that is wrong on its face (no file or
    module, no such class in its source). Returns the --ops list. All before the lowering stack
    is imported (torch, executorch: seconds, and their warnings before the one line). --pass
    references are resolved next, then --out is checked (cmd_gate), also before any work."""
    from verify.usage.output_paths import check_output_file

    check_search_usage(args)
    if args.passes and args.stage and len(set(args.stage)) > 1:
        raise UsageError("--pass runs one stage: give one --stage")
    if args.since_gated and args.changed_since:
        raise UsageError("--since-gated and --changed-since name two different bases")
    if args.passes and (args.since_gated or args.changed_since):
        raise UsageError("--since-gated/--changed-since choose passes from the registry: drop --pass")
    if args.junit:
        check_output_file(args.junit, "--junit")
    ops = _ops(args.ops)
    _refs_on_their_face(args.passes)
    return ops


def cmd_gate(args) -> int:
    from verify.jobs.launcher import stop_on_signals, stop_signal, stopped_exit_status

    ops = check_gate_usage(args)  # UsageError: one line, exit 2, before any work
    search_defaults(args, registry=not args.passes)
    # after the argument checks: this imports the lowering stack (torch, executorch: seconds)
    from verify.gate import passes as gp

    explicit = _resolve_all(args.passes)  # UsageError: exit 2, before any work
    out = args.out or DEFAULT_OUT
    check_output_folder(out, "--out")  # UsageError; else the folder exists now
    started = time.perf_counter()
    deadline = None if args.max_seconds is None else time.monotonic() + args.max_seconds
    # SIGINT/SIGTERM stop the run in order (verify.jobs.launcher): every worker's group is killed, no
    # new one starts, the stage searches draw no more graphs; the handlers stay while the reports
    # of what finished are written (a second Ctrl-C must not cut that short).
    with stop_on_signals():
        try:
            verdicts = gate_passes(args, explicit, ops, out, deadline)
        finally:
            release_long_lived_heap()
        stopped = stop_signal()
        if verdicts is None:
            return 2
        wall = time.perf_counter() - started
        print(table(verdicts, args.min_evidence))
        print(unproven_line(verdicts))
        print(f"wall time {wall:.0f} s")
        info = {"examples": args.examples, "stages": args.stage, "seed": args.seed, "wall_seconds": wall,
                "changed_since": args.changed_since, "min_evidence": args.min_evidence, "jobs": args.jobs,
                "pass_timeout": args.pass_timeout, "complete": stopped is None,
                "stopped_by": signal.Signals(stopped).name if stopped is not None else None}
        write_json(verdicts, out / "gate.json", info)
        if args.json:
            write_json(verdicts, args.json, info)
        if args.junit:
            write_junit(verdicts, args.junit, wall, args.min_evidence)
    if stopped is not None:
        unfinished = sum(v.unfinished is not None for v in verdicts)
        print(f"verify gate: stopped by {signal.Signals(stopped).name}: workers killed; the reports hold "
              f"{len(verdicts) - unfinished} finished verdict(s) and {unfinished} pass(es) not finished "
              f"(errors: the run is incomplete)", file=sys.stderr)
        return stopped_exit_status(stopped)
    ok = all(v.ok for v in verdicts)
    if args.record_gated:
        if not ok:
            print("verify gate: not recorded: some pass is unsound or errored", file=sys.stderr)
        else:
            unexercised = [v.name for v in verdicts if v.verdict is ProofStatus.UNEXERCISED]
            if unexercised:
                print(f"verify gate: recording although {len(unexercised)} pass(es) are unexercised "
                      "(no divergence, too little evidence): see the summary", file=sys.stderr)
            # A --pass run proves those passes only: their ledger entries are replaced (the others'
            # proofs still hold, ledger.record says why), and the ledger's gated_at, which names the
            # revision whose every annotation was proven, stays where it is.
            try:
                head = gp.head_if_fastpass_committed()
            except gp.PassRefError as exc:
                print(f"verify gate: {exc}", file=sys.stderr)
                return 2
            annotated = gp.annotated_passes()
            classes = {**annotated, **{gp.qualname(cls): cls for _, cls in explicit}}
            counts = ledger.record(verdicts, classes, info, head, annotated, partial=bool(args.passes))
            where = f"{ledger.LEDGER_PATH}" + ("" if args.passes else ", gated at it")
            print(f"verify gate: recorded {head} in {where} ("
                  + ", ".join(f"{verdict} {n}" for verdict, n in sorted(counts.items())) + ")", file=sys.stderr)
    return 0 if ok else 1


def cmd_infer(args) -> int:
    from verify.usage.output_paths import check_output_file

    at_least(args.examples, 1, "--examples")
    at_least(args.max_ops, 1, "--max-ops")
    if args.json:
        check_output_file(args.json, "--json")
    ops = _ops(args.ops)
    _refs_on_their_face([args.ref])
    # after the argument checks: these import the lowering stack (torch, executorch: seconds)
    from verify.gate import passes as gp
    from verify.gate.infer import infer

    try:
        cls = gp.resolve_pass(args.ref)
    except gp.PassRefError as exc:
        raise UsageError(str(exc)) from None
    result = infer(cls, examples=args.examples, stage=args.stage, max_ops=args.max_ops, ops=ops)
    print("\n".join(result.lines()))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        write_document(args.json, result.to_json())
    return 1 if result.fit.fails else 0
