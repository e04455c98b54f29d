"""Command-line entry points of the gate.

    python -m verify gate [--pass REF ...] [--changed-since REV] [--examples N]
                          [--stage edge-fp|quantized] [--junit FILE] [--json FILE] [--out DIR]
                          [--replay REPRODUCER.py]
    python -m verify infer REF [--examples N] [--stage edge-fp|quantized] [--json FILE]

REF is `package.module:Class` or `path/to/file.py:Class`. Exit status of `gate`: 0 if every
checked pass is sound (or untested), 1 if any is unsound or errored, 2 for bad usage.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from verify.lowering.heap import freeze_long_lived_heap, release_long_lived_heap

# Defaults measured on 2 shared cores (see the gate's report): the whole registry with 100 graphs
# per stage takes ~20-25 min; one --pass with 30 graphs per mode a few minutes.
DEFAULT_REGISTRY_EXAMPLES = 100  # graphs per stage, each checks every annotated pass at once
DEFAULT_PASS_EXAMPLES = 30  # graphs per mode (skip, copy) for each --pass


def add_parsers(sub) -> None:
    from verify.gate.check import STAGES

    gate = sub.add_parser("gate", help="prove targeted_ops annotations skip- and copy-sound")
    gate.add_argument("--pass", dest="passes", action="append", default=[], metavar="REF",
                      help="a pass to check: module:Class or path/to/file.py:Class (repeatable); "
                           "default: every annotated pass")
    gate.add_argument("--changed-since", metavar="GIT_REV", default=None,
                      help="only passes whose annotation in fastpass/annotations changed since GIT_REV")
    gate.add_argument("--since-gated", action="store_true",
                      help="only passes whose annotation changed since the revision in "
                           "fastpass/annotations/gated-at (what CI runs); every annotated pass if "
                           "fastpass/*.py changed since, or if that revision is not in this clone")
    gate.add_argument("--record-gated", action="store_true",
                      help="when every checked pass is sound, write HEAD into fastpass/annotations/gated-at")
    gate.add_argument("--examples", type=int, default=None,
                      help=f"graphs per stage for the registry run (default {DEFAULT_REGISTRY_EXAMPLES}), "
                           f"per mode for --pass (default {DEFAULT_PASS_EXAMPLES})")
    gate.add_argument("--stage", choices=STAGES, default=None,
                      help="edge-fp (TOSA-1.0+FP pipeline / FP edge graphs) or quantized (TOSA-1.0+INT); "
                           "default: both for the registry run, edge-fp for --pass")
    gate.add_argument("--max-ops", type=int, default=4, help="ops per random graph (default %(default)s)")
    gate.add_argument("--ops", default=None,
                      help="comma-separated vocabulary ops (generators.random) the graphs are built from")
    gate.add_argument("--seed", type=int, default=None,
                      help="fixed Hypothesis seed (repeatable runs; the example database is then not used)")
    gate.add_argument("--shrink-seconds", type=float, default=300.0, help="time budget to shrink one failure")
    gate.add_argument("--direct", action="store_true",
                      help="run the --pass passes directly on edge graphs even if the pipeline invokes them")
    gate.add_argument("--replay", type=Path, default=None, metavar="REPRODUCER",
                      help="re-run one saved reproducer (exit 1 if it still diverges)")
    gate.add_argument("--out", type=Path, default=None, help="artifacts (default verify-out/gate)")
    gate.add_argument("--json", type=Path, default=None, help="write the JSON report here")
    gate.add_argument("--junit", type=Path, default=None, help="write a JUnit XML report here")
    gate.set_defaults(handler=cmd_gate)

    infer = sub.add_parser("infer", help="propose a pass's minimal copy-sound targeted_ops")
    infer.add_argument("ref", metavar="REF", help="module:Class or path/to/file.py:Class")
    infer.add_argument("--examples", type=int, default=30, help="corpus graphs (default %(default)s)")
    infer.add_argument("--stage", choices=STAGES, default="edge-fp")
    infer.add_argument("--max-ops", type=int, default=4)
    infer.add_argument("--ops", default=None, help="comma-separated vocabulary ops to build the corpus from")
    infer.add_argument("--json", type=Path, default=None)
    infer.set_defaults(handler=cmd_infer)


def _resolve_all(refs):
    from verify.gate import passes as gp

    out = []
    for ref in refs:
        try:
            out.append((ref, gp.resolve(ref)))
        except gp.PassRefError as exc:
            raise SystemExit(f"verify gate: {exc}") from None
    return out


def _ops(text):
    if not text:
        return None
    from generators.random import ops_in_vocabulary

    ops = [o.strip() for o in text.split(",") if o.strip()]
    unknown = [o for o in ops if o not in ops_in_vocabulary()]
    if unknown:
        raise SystemExit(f"verify: unknown vocabulary op(s) {', '.join(unknown)}; "
                         f"known: {', '.join(ops_in_vocabulary())}")
    return ops


def _gate(args, explicit, out: Path):
    """Gate the explicit passes, or the registry (all, or what changed): verdicts, or None after a
    usage error. Freezes the process's long-lived heap once the pipelines are known (the gate
    lowers hundreds of graphs in this process; see verify.lowering.heap); cmd_gate releases it."""
    from verify.gate import check
    from verify.gate import passes as gp
    from verify.gate import run

    if explicit:
        stage = args.stage or "edge-fp"
        _warm_up([stage])
        return [run.gate_pass(cls, ref, args.examples, stage, out, args.seed,
                              how="direct" if args.direct else None, max_ops=args.max_ops,
                              shrink_seconds=args.shrink_seconds, ops=_ops(args.ops))
                for ref, cls in explicit]
    with check.quiet():
        classes = gp.annotated_passes()
    if args.since_gated:
        try:
            args.changed_since = gp.gated_at()
        except gp.PassRefError as exc:
            print(f"verify gate: {exc}", file=sys.stderr)
            return None
    if args.changed_since:
        try:
            names, everything = gp.changed_since(args.changed_since)
        except gp.PassRefError as exc:
            if not args.since_gated:
                print(f"verify gate: {exc}", file=sys.stderr)
                return None
            # A shallow clone lacks the recorded revision: proving everything is the safe answer.
            print(f"verify gate: {exc}; gating the whole registry instead", file=sys.stderr)
            names, everything = set(), True
        if not everything:
            classes = {qn: c for qn, c in classes.items() if qn in names}
        print(f"verify gate: {'every annotation' if everything else f'{len(classes)} annotation(s)'} "
              f"changed since {args.changed_since}", file=sys.stderr)
    stages = [args.stage] if args.stage else ["edge-fp", "quantized"]
    print(f"verify gate: {len(classes)} annotated pass(es), stages {', '.join(stages)}, "
          f"{args.examples} graph(s) per stage, artifacts in {out}", file=sys.stderr, flush=True)
    if not classes:
        return []
    _warm_up(stages)
    return run.gate_registry(classes, args.examples, stages, out, args.seed, args.max_ops,
                             args.shrink_seconds, ops=_ops(args.ops))


def _warm_up(stages) -> None:
    """One lowering per stage (cached by the gate anyway) imports everything; then freeze."""
    from verify.gate import check

    for stage in stages:
        check.pipeline_pass_names(check.target_for(stage))
    freeze_long_lived_heap()


def cmd_gate(args) -> int:
    from verify.gate import passes as gp
    from verify.gate import run

    if args.examples is None:
        args.examples = DEFAULT_PASS_EXAMPLES if args.passes else DEFAULT_REGISTRY_EXAMPLES
    if args.examples < 1:
        print("verify gate: --examples must be at least 1", file=sys.stderr)
        return 2
    if args.since_gated and args.changed_since:
        print("verify gate: --since-gated and --changed-since name two different bases", file=sys.stderr)
        return 2
    if args.record_gated and args.passes:
        print("verify gate: --record-gated needs a registry run (no --pass)", file=sys.stderr)
        return 2
    if args.replay is not None:
        try:
            return run.replay(args.replay, args.passes[0] if args.passes else None, args.stage)
        except (ValueError, OSError, gp.PassRefError) as exc:
            print(f"verify gate: {exc}", file=sys.stderr)
            return 2
    out = args.out or Path("verify-out") / "gate"
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        explicit = _resolve_all(args.passes)
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        verdicts = _gate(args, explicit, out)
    finally:
        release_long_lived_heap()
    if verdicts is None:
        return 2
    wall = time.perf_counter() - started
    print(table(verdicts))
    print(f"wall time {wall:.0f} s")
    info = {"examples": args.examples, "stage": args.stage, "seed": args.seed, "wall_seconds": wall,
            "changed_since": args.changed_since}
    write_json(verdicts, out / "gate.json", info)
    if args.json:
        write_json(verdicts, args.json, info)
    if args.junit:
        write_junit(verdicts, args.junit, wall)
    ok = all(v.ok for v in verdicts)
    if ok and args.record_gated:
        try:
            print(f"verify gate: recorded {gp.record_gated()} in {gp.GATED_AT}", file=sys.stderr)
        except gp.PassRefError as exc:
            print(f"verify gate: {exc}", file=sys.stderr)
            return 2
    return 0 if ok else 1


def table(verdicts) -> str:
    if not verdicts:
        return "no pass checked"
    width = max(len(v.name) for v in verdicts)
    lines = [f"{'pass':<{width}}  {'verdict':<13} {'how':<9} {'graphs':>6} {'skips':>5} {'copied':>6}  reason / reproducer"]
    for v in sorted(verdicts, key=lambda v: (v.ok, v.verdict == "untested", v.name)):
        extra = ", ".join(v.reproducers.values()) or v.reason[:100]
        if v.verdict == "sound" and not (v.skipped_invocations or v.copied_nodes):
            extra = extra or "fastpass never skipped nor copied in it on these graphs (vacuous)"
        lines.append(f"{v.name:<{width}}  {v.verdict:<13} {v.how:<9} {v.examples:>6} {v.skipped_invocations:>5} "
                     f"{v.copied_nodes:>6}  {extra}")
    counts = {}
    for v in verdicts:
        counts[v.verdict] = counts.get(v.verdict, 0) + 1
    lines.append("summary: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))
    return "\n".join(lines)


def write_json(verdicts, path: Path, info: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"run": info, "passes": [v.to_json() for v in verdicts],
                                "ok": all(v.ok for v in verdicts)}, indent=1, default=str))


def write_junit(verdicts, path: Path, wall: float) -> None:
    failures = sum(v.verdict.startswith("unsound") for v in verdicts)
    errors = sum(v.verdict == "error" for v in verdicts)
    skipped = sum(v.verdict == "untested" for v in verdicts)
    cases = []
    for v in verdicts:
        module, _, name = v.qualname.rpartition(".")
        body = ""
        message = v.reason + ("; reproducer: " + ", ".join(v.reproducers.values()) if v.reproducers else "")
        if v.verdict.startswith("unsound"):
            body = f"<failure type={quoteattr(v.verdict)} message={quoteattr(message[:500])}>{escape(message)}</failure>"
        elif v.verdict == "error":
            body = f"<error type=\"error\" message={quoteattr(message[:500])}>{escape(message)}</error>"
        elif v.verdict == "untested":
            body = f"<skipped message={quoteattr(message[:500])}/>"
        cases.append(f'  <testcase classname={quoteattr(module or "gate")} name={quoteattr(name or v.name)} '
                     f'time="{v.seconds:.3f}">{body}</testcase>')
    xml = (f'<?xml version="1.0" encoding="utf-8"?>\n<testsuite name="verify.gate" tests="{len(verdicts)}" '
           f'failures="{failures}" errors="{errors}" skipped="{skipped}" time="{wall:.3f}">\n'
           + "\n".join(cases) + "\n</testsuite>\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(xml)


def cmd_infer(args) -> int:
    from verify.gate import passes as gp
    from verify.gate.infer import format_report, infer

    try:
        cls = gp.resolve(args.ref)
    except gp.PassRefError as exc:
        print(f"verify infer: {exc}", file=sys.stderr)
        return 2
    ops = _ops(args.ops)
    result = infer(cls, examples=args.examples, stage=args.stage, max_ops=args.max_ops, ops=ops)
    print(format_report(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1, default=str))
    return 0 if result["comparison"] in ("equal", "larger than needed") else 1
