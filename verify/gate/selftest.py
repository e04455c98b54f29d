"""`verify selftest`: a mutation score for the gate, on the real registry.

Why: a gate that calls every annotation `sound` looks the same as a gate that proves them. Here
wrong annotations are derived from the real entries (each a fault a reviewer could make), the
gate is run on each exactly as CI runs it (its defaults, its budget), and every mutant ends
`killed` (CI would fail: unsound or error), `survived` (the gate calls the wrong claim sound:
fastpass would act on it), `unproven` (CI passes it, but the gate does not call it sound --
unexercised, unreachable, inert -- so fastpass's default trust never acts on it) or
`equivalent` (the wrong claim cannot change a lowering; the argument is recorded). The command
fails when the share killed of the decided ones (killed or survived) is below its threshold.

Faults (`Fault`):

* DROP_TARGETED_OP: an op the entry targets *and* the pass's code names (`ops_named_by`: one it
  matches or emits) is dropped from the op set (every overload object of that name: aten and
  edge), flags unchanged;
* CLAIM_COPY: copy-sound claimed for an annotated pass that does not claim it (its reviewer
  found it edits outside its targeted ops; in executorch 1.5.1 one pass:
  DecomposeDynamicAdaptiveAvgPool2dPass);
* WIDEN_SKIP: skip-sound claimed for a copy-only entry with targeted ops (fastpass would then
  skip every call without them). A retrace-only entry (no targeted ops) gets no such mutant:
  fastpass never skips a pass whose entry names no op, so the widened claim is the same entry.

The mutants are derived from the entries the proof ledger calls sound (`proven`: where the gate
can prove at all). A seeded sample of N mutants across them is gated in this process
(`annotations.overridden` puts the mutant in effect; worker processes would not see it), or,
with `-j K`, each mutant in a self-test process of its own, K at a time (`in_processes`: the
costs are uneven, and a verdict then depends on nothing gated before it); this process reports
each as it ends and merges them in sample order.

`--unaimed` gates with the drawing the gate had before its aimed search (`graphs.AIMED`
emptied: no suspect-in-skip graphs, no targeted/suspect links): the "before" figure of a
before/after comparison on the same sample.

A sample of 40 costs hours (a surviving mutant about half an hour), so a stopped run is
continued, not restarted: `--resume JSON` keeps the mutants an earlier run's JSON records and
gates the rest. Only the same run can be continued: the JSON records the settings that decide
a mutant's verdict (`run_settings`: the sample, the drawing, the budget, the stages, the
revision of the code); a resume that differs in any is refused (exit 2), as is one whose
recorded mutants are not this sample's at their positions, or one from a modified checkout (its
code is recorded nowhere). To continue a run of another revision, resume from a checkout of it.
"""

from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from verify.gate.campaign import DEFAULT_OUT
from verify.report.selftest import (DEFAULT_KILL_THRESHOLD, Fault, MutantResult, MutantVerdict, SelfTestReport,
                                    table, write_json)

_log = logging.getLogger(__name__)

DEFAULT_MUTANTS = 6


@dataclass(frozen=True)
class Mutant:
    """One wrong annotation: the pass, the fault, and the entry put in effect instead of the real one."""

    qualname: str
    cls: type
    fault: Fault
    entry: Any  # fastpass.annotations.Entry
    detail: str  # what changed (the dropped op, the flag)

    @property
    def label(self) -> str:
        return f"{self.qualname.rsplit('.', 1)[-1]} {self.fault.value} {self.detail}"


def derive_mutants(classes: dict[str, type]) -> list[Mutant]:
    """Every mutant the three faults give on `classes` (qualname -> pass class), in a fixed order."""
    from dataclasses import replace

    from fastpass.annotations import Entry, entries, lookup

    from verify.gate import passes as gp

    registry = entries()
    out: list[Mutant] = []
    for qn, cls in sorted(classes.items()):
        ann = lookup(cls)
        ops = ann.targeted_ops
        if getattr(ops, "rule", None) is not None:  # a rule family: no op list to drop from
            ops = None
        base = registry.get(qn) or Entry(frozenset(ops or ()), ann.skip_sound, ann.copy_sound, why="discovered")
        if ops and (ann.skip_sound or ann.copy_sound):
            named = gp.ops_named_by(cls)
            # by name: an entry often holds an op's aten and edge overloads, one op to a reviewer
            for name in sorted({gp.op_name(op) for op in ops} & named):
                kept = frozenset(o for o in ops if gp.op_name(o) != name)
                out.append(Mutant(qn, cls, Fault.DROP_TARGETED_OP, replace(base, ops=kept, why="self-test mutant"),
                                  name))
        if not ann.copy_sound and (ann.skip_sound or ops):
            out.append(Mutant(qn, cls, Fault.CLAIM_COPY,
                              Entry(frozenset(ops or ()), ann.skip_sound, True, why="self-test mutant"), "copy_sound=True"))
        # a skip claim needs targeted ops to act on: fastpass never skips a pass whose entry names
        # none (`_passcall._skip_reason`), so widening a retrace-only entry changes no lowering
        if ann.copy_sound and not ann.skip_sound and ops:
            out.append(Mutant(qn, cls, Fault.WIDEN_SKIP,
                              Entry(frozenset(ops), True, ann.copy_sound, why="self-test mutant"), "skip_sound=True"))
    return out


def sample(mutants: list[Mutant], n: int, seed: int) -> list[Mutant]:
    """A seeded sample of `n` mutants, spread across the faults (round-robin over the faults'
    lists), so that a small N still exercises each fault, and within a fault across the entries
    (a shuffled round-robin over them: every entry once before any twice), so that 40 mutants
    measure the gate on as many passes as they can, not on the one with the most targeted ops."""
    rng = random.Random(seed)
    by_fault = {}
    for fault in Fault:
        by_entry: dict[str, list[Mutant]] = {}
        for m in mutants:
            if m.fault is fault:
                by_entry.setdefault(m.qualname, []).append(m)
        groups = list(by_entry.values())
        rng.shuffle(groups)
        for group in groups:
            rng.shuffle(group)
        spread = [group[i] for i in range(max(map(len, groups), default=0)) for group in groups if i < len(group)]
        by_fault[fault] = spread[::-1]  # popped from the end
    out: list[Mutant] = []
    while len(out) < n and any(by_fault.values()):
        for fault in Fault:
            if by_fault[fault] and len(out) < n:
                out.append(by_fault[fault].pop())
    return out


def equivalence(mutant: Mutant) -> str | None:
    """Why `mutant` cannot change a lowering, if a reason is known; else None.

    A widened skip claim is inert when upstream's own `should_run_pass` already skips every call
    without one of the targeted ops (`passes.upstream_skip_covers`): fastpass checks upstream's
    skip first, so its own skip never applies. A dropped op is never in a graph a pass that runs
    on edge graphs only sees when it is an in-place overload (to_edge's program is functional) or
    the ATen form of a view op (to_edge has made it the ``*_copy`` form, which the entry still
    targets)."""
    from fastpass.annotations import overridden

    from generators.random.reach import VIEW_OPS

    from verify.gate import passes as gp

    if mutant.fault is Fault.DROP_TARGETED_OP:
        if not mutant.entry.ops and not mutant.entry.copy_sound:
            return (f"{mutant.detail} was the entry's only targeted op and it claims skip only: fastpass never "
                    "skips a pass whose entry names no op, so the mutant entry is never used")
        namespace, op, _ = (mutant.detail.split(".") + ["", ""])[:3]
        # edge graphs only: not the quantizer's pipeline (ATen graphs, in which in-place ops still
        # stand until its RewriteInplaceArithmeticPass; fastpass acts there when a user enables it
        # around quantization), not on the exported graph itself
        edge_only = gp.edge_only(mutant.cls)
        if edge_only and gp.in_place_overload(mutant.detail):
            return (f"{mutant.detail} is an in-place overload and the pass sees edge graphs only: to_edge's "
                    "functional program holds none")
        kept = {gp.op_name(o) for o in mutant.entry.ops}
        if namespace == "aten" and op in VIEW_OPS and edge_only and f"aten.{op}_copy.{_}" in kept:
            return (f"{mutant.detail} is the ATen form of a view op; the pass runs on edge graphs only, where "
                    f"to_edge has made it aten.{op}_copy.{_}, which the entry still targets")
    if mutant.fault is Fault.WIDEN_SKIP:
        with overridden({mutant.qualname: mutant.entry}):
            if gp.upstream_skip_covers(mutant.cls):
                return ("upstream's should_run_pass skips every call without one of the pass's target_ops, "
                        "all of them targeted: fastpass's skip never applies")
    return None


# gate(mutant classes, out folder, seed) -> the pass's PassVerdict, run as CI runs it
GateRun = Callable[[dict[str, type], Path, "int | None"], Any]


def ci_gate(args) -> GateRun:
    """The gate as CI runs it for a changed annotation (`--since-gated`): a registry run over
    the changed pass, every default stage, the CLI's budget (`args`), in this process.

    The stages a pipeline invokes the pass in are gated one at a time, and the first that fails
    ends the mutant: a registry run's stages search independently (each its own seed,
    `plan.stage_seed`, the same draws whichever stages run with it) and any failing stage fails
    the run, so the verdict is CI's, without the hours the remaining stages would cost. A pass no
    stage invokes is gated once, directly, as CI would."""
    from verify.gate import check, run

    def registry(classes: dict[str, type], stages: list[str], out: Path, seed: int | None):
        verdicts = run.gate_registry(classes, args.examples, stages, out, seed, args.max_ops, args.shrink_seconds,
                                     args.direct_examples, None, args.min_evidence, args.top_up,
                                     args.top_up_seconds, args.max_seconds)
        return ci_verdict(verdicts, next(iter(classes)))

    def gate(classes: dict[str, type], out: Path, seed: int | None):
        stages = list(args.stage or args.default_stages)
        (cls,) = classes.values()
        invoking = [s for s in stages if cls.__name__ in check.pipeline_pass_names(check.target_for(s))]
        if not invoking:
            return registry(classes, stages, out, seed)
        for stage in invoking:
            v = registry(classes, [stage], out, seed)
            if v.verdict.fails:
                break
        return v

    return gate


def presentable(mutant: Mutant) -> str | None:
    """None if a graph the gate draws can hold what `mutant` changed; else why not. A dropped op
    must be presented by a vocabulary op (any stage's, `reach.presented_ops`) or produced from one
    by an earlier pass (`reach.PRODUCED_IN_PIPELINE`): otherwise no search, aimed or not, can
    put it in front of the pass, and the mutant measures the vocabulary, not the search."""
    from generators.random import ops_in_vocabulary
    from generators.random.reach import PRODUCED_IN_PIPELINE, presented_ops

    if mutant.fault is not Fault.DROP_TARGETED_OP or mutant.cls.__name__ in PRODUCED_IN_PIPELINE:
        return None
    if any(mutant.detail in presented_ops(e) for e in ops_in_vocabulary(float_target=True).values()):
        return None
    return f"no vocabulary op presents {mutant.detail} and no earlier pass produces it from one"


def ci_verdict(verdicts: list, qualname: str):
    """The verdict CI acts on for a run that gated the pass `qualname`: its own when it fails or
    nothing in the run fails, else the run's first failing one. Why: CI fails a run on any
    failing verdict, an `<unattributed>` divergence or a search error included; with one
    annotation in effect it can only come from that one (MemoryFormatOpsPass without _to_copy
    diverges at the first pass manager's input, before any pass the observation names)."""
    own = next((v for v in verdicts if v.qualname == qualname), None)
    if own is not None and own.verdict.fails:
        return own
    return next((v for v in verdicts if v.verdict.fails), own if own is not None else verdicts[0])


def run_mutant(index: int, mutant: Mutant, gate: GateRun, out: Path, seed: int | None) -> MutantResult | None:
    """The mutant's result, or None when a stop cut its gate run short (its `error` then says
    "not run: stopped", which would otherwise count as a kill)."""
    from fastpass.annotations import ProofStatus, overridden

    start = time.perf_counter()
    argument = equivalence(mutant)
    if argument is not None:
        return MutantResult(index, mutant.qualname, mutant.fault, mutant.detail, MutantVerdict.EQUIVALENT,
                            argument=argument)
    gap = presentable(mutant)
    if gap is not None:
        return MutantResult(index, mutant.qualname, mutant.fault, mutant.detail, MutantVerdict.UNPRESENTABLE,
                            reason=gap)
    with overridden({mutant.qualname: mutant.entry}):
        v = gate({mutant.qualname: mutant.cls}, out, seed)
    if _stopped() and v.verdict is ProofStatus.ERROR:
        return None  # cut short by the stop: an error saying "not run", not CI's verdict on the mutant
    reproducer = next(iter(v.reproducers.values()), None) if v.reproducers else None
    return MutantResult(index, mutant.qualname, mutant.fault, mutant.detail,
                        MutantVerdict.of_gate(v.verdict), v.verdict.value,
                        reproducer, reason=(v.reason or "")[:300], seconds=time.perf_counter() - start)


def self_test(classes: dict[str, type], n: int, seed: int, gate: GateRun, out: Path,
              threshold: float = DEFAULT_KILL_THRESHOLD, on_result: Callable[[MutantResult], None] | None = None,
              shard: tuple[int, int] = (0, 1), done: frozenset[int] = frozenset()) -> SelfTestReport:
    """Gate the seeded sample of `n` mutants (`shard` (i, k): only every k-th from the i-th), but
    not those whose positions are in `done` (gated by the run this one resumes)."""
    report = SelfTestReport(threshold=threshold)
    chosen = sample(derive_mutants(classes), n, seed)
    first, step = shard
    for index, mutant in list(enumerate(chosen, 1))[first::step]:
        if index in done:
            continue
        if _stopped():  # the rest are not gated; the run is incomplete (run says so)
            break
        _log.info("gate self-test: [%d/%d] %s", index, len(chosen), mutant.label)
        result = run_mutant(index, mutant, gate, out / f"mutant-{index}", seed)
        if result is None:
            break
        report.results.append(result)
        if on_result:
            on_result(result)
    return report


def run(args, default_stages) -> int:
    """`verify selftest [--mutants N] [--seed S] [-j K] [--unaimed] --json FILE`: exit 0
    if the gate kills at least the threshold share of the decided mutants (killed or called sound), 1 otherwise."""
    from verify.gate import graphs
    from verify.gate import passes as gp

    args.default_stages = default_stages
    out = (args.out or DEFAULT_OUT) / "self-test"
    seed = 0 if args.seed is None else args.seed
    if args.unaimed:
        graphs.AIMED = frozenset()
    partial = SelfTestReport()

    def on_result(result: MutantResult) -> None:
        print(f"self-test: [{result.index}] {result.entry.rsplit('.', 1)[-1]} {result.fault.value} {result.detail}: "
              f"{result.verdict.value} ({result.gate_verdict or 'not gated'}, {result.seconds:.0f} s)", flush=True)
        partial.results.append(result)
        if args.json:  # after every mutant: a run cut short keeps what it measured
            write_json(Path(args.json), SelfTestReport(sorted(partial.results, key=lambda r: r.index)),
                       complete=False, settings=settings)

    classes = proven(gp.annotated_passes())
    chosen = sample(derive_mutants(classes), args.mutants, seed)
    settings = run_settings(args, seed)
    kept = resumed(args.resume, settings, chosen) if args.resume is not None else []  # UsageError: exit 2
    done = frozenset(r.index for r in kept)
    if args.shard is not None:  # a mutant's own process (in_processes): its result, written when gated
        self_test(classes, args.mutants, seed, ci_gate(args), out, on_result=on_result, shard=args.shard, done=done)
        return 0
    partial.results.extend(kept)  # a run stopped again keeps them too
    if kept:
        print(f"self-test: resumed: {len(kept)} of {len(chosen)} mutants kept from {args.resume}", flush=True)
    if args.jobs > 1:
        report = in_processes(args, seed, out, [i for i in range(1, len(chosen) + 1) if i not in done], on_result)
    else:
        report = self_test(classes, args.mutants, seed, ci_gate(args), out, on_result=on_result, done=done)
    report.results = sorted({r.index: r for r in kept + report.results}.values(), key=lambda r: r.index)
    complete = len(report.results) == len(chosen) and not _stopped()
    print(table(report))
    if not complete:
        print(f"self-test: incomplete: {len(report.results)} of {len(chosen)} mutants gated", flush=True)
    if args.json:
        write_json(Path(args.json), report, complete=complete, settings=settings)
    return 0 if report.passed and complete else 1


def run_settings(args, seed: int) -> dict[str, Any]:
    """What decides each mutant's verdict besides the mutant: the sample (its size and seed), the
    drawing (`--unaimed`), the stages, the gate's budget, and the code (`revision`). Written into
    the JSON; `--resume` continues only a run whose settings are these."""
    return {"mutants": args.mutants, "seed": seed, "unaimed": bool(args.unaimed),
            "stages": list(args.stage or args.default_stages),
            **{name: getattr(args, name, None) for name in _PROCESS_OPTIONS}, "revision": revision()}


def revision() -> str | None:
    """The commit the harness runs from, with " (modified)" when fastpass/, verify/ or generators/
    differ from it (tracked or not); None outside a git checkout."""
    import subprocess

    from verify.gate.passes import PROJECT_ROOT as root

    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        changed = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "fastpass", "verify",
                                  "generators"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + (" (modified)" if changed else "")


def resumed(path: Path, settings: dict[str, Any], chosen: list[Mutant]) -> list[MutantResult]:
    """The mutants an earlier run's JSON at `path` recorded, if that run is this one (see the
    module docstring); UsageError otherwise."""
    from verify.usage import UsageError

    try:
        data = json.loads(Path(path).read_text())
        recorded, mutants = data["settings"], [MutantResult.from_dict(m) for m in data["mutants"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--resume {path}: not the JSON of a self-test run ({type(exc).__name__}: {exc})") from None
    differ = [f"{key} {recorded.get(key)!r} (now {value!r})" for key, value in settings.items()
              if recorded.get(key) != value]
    if differ:
        raise UsageError(f"--resume {path}: another run: its {'; '.join(differ)}")
    if settings["revision"] is None or settings["revision"].endswith("(modified)"):
        raise UsageError(f"--resume {path}: the code is not a commit ({settings['revision'] or 'no git checkout'}): "
                         "a resumed run could mix two versions of the gate")
    for m in mutants:
        mutant = chosen[m.index - 1] if 1 <= m.index <= len(chosen) else None
        if mutant is None or (mutant.qualname, mutant.fault, mutant.detail) != (m.entry, m.fault, m.detail):
            raise UsageError(f"--resume {path}: its mutant {m.index} ({m.entry} {m.fault.value} {m.detail}) is not "
                             "this sample's (the registry or the proof ledger changed)")
    return sorted({m.index: m for m in mutants}.values(), key=lambda m: m.index)


def proven(classes: dict[str, type]) -> dict[str, type]:
    """The passes whose real annotation the proof ledger calls sound: the mutants are drawn from
    these. Why: a mutation score measures what the gate can catch where it can prove at all; a
    pass the gate cannot prove with its real annotation (unexercised, inert, unreachable,
    untested) cannot be told from its mutant either, and under the default trust fastpass uses
    neither (it uses only `sound` entries, so such a mutant changes no lowering)."""
    from fastpass.annotations import ProofStatus, status_of

    return {qn: cls for qn, cls in classes.items() if status_of(cls) is ProofStatus.SOUND}


def _stopped() -> bool:
    from verify.jobs.launcher import stop_signal

    return stop_signal() is not None


# The options a mutant's process gets from its parent: the gate's budget, exactly as given.
_PROCESS_OPTIONS = ("examples", "min_evidence", "top_up", "direct_examples", "max_seconds", "top_up_seconds",
                  "max_ops", "shrink_seconds", "pass_timeout")


def in_processes(args, seed: int, out: Path, todo: list[int],
                 on_result: Callable[[MutantResult], None]) -> SelfTestReport:
    """Gate each mutant whose position is in `todo` in a self-test process of its own, `args.jobs`
    at a time in the one pool (verify.jobs.pool). The launcher starts each as `--shard I/N` (the
    sample's (I+1)-th mutant only) in its own process group, killed with this one; it writes its
    result to mutant-<position>.json, which is reported as the process ends. The results come back
    in sample order. A process that dies loses its one mutant, and the run is then short of the
    sample (incomplete).

    Why one process per mutant, not K processes each gating every K-th mutant: the costs are
    uneven (a kill takes minutes, a survivor a whole CI gate run, about half an hour; 34 s to
    1,520 s in the 40-mutant sample at ce0c863), so a fixed split left one process gating long
    after the other had finished; and a mutant's verdict then rests on nothing gated before it in
    the same interpreter, so `--shard I/N` alone gives it again."""
    import sys

    from verify.jobs import launcher
    from verify.jobs.pool import run_in_pool

    out.mkdir(parents=True, exist_ok=True)
    n = args.mutants

    def part(index: int) -> Path:
        return out / f"mutant-{index}.json"

    for index in todo:
        part(index).unlink(missing_ok=True)

    def command(index: int) -> list[str]:
        words = [sys.executable, "-m", "verify", "selftest", "--mutants", str(n), "--seed", str(seed),
                 "--shard", f"{index - 1}/{n}", "-j", "1", "--json", str(part(index)),
                 "--out", str(args.out or DEFAULT_OUT)]
        for name in _PROCESS_OPTIONS:
            value = getattr(args, name, None)
            if value is not None:
                words += [f"--{name.replace('_', '-')}", str(value)]
        for stage in args.stage or ():
            words += ["--stage", stage]
        if args.unaimed:
            words.append("--unaimed")
        return words

    def gate(index: int) -> Callable[[], object]:
        def task() -> object:  # the process's exit status, or why it had none
            try:
                return launcher.launch_command(command(index), log_path=out / f"mutant-{index}.log", timeout=None,
                                              memory_limit=launcher.DEFAULT_MEMORY_LIMIT)
            except (launcher.RunStopped, launcher.WorkerMemoryExceeded, OSError) as exc:
                return exc
        return task

    results: dict[int, MutantResult] = {}

    def finished(position: int, status: object) -> None:
        index = todo[position]
        try:
            recorded = [MutantResult.from_dict(m) for m in json.loads(part(index).read_text())["mutants"]]
        except (OSError, ValueError, KeyError, TypeError):
            recorded = []
        for result in recorded:
            if result.index == index:
                results[index] = result
                on_result(result)
        if index not in results and not _stopped():
            _log.warning("gate self-test: mutant %d's process ended with %s and no verdict (log: %s)", index,
                         status, out / f"mutant-{index}.log")

    run_in_pool([gate(index) for index in todo], args.jobs, on_finished=finished, name="self-test")
    return SelfTestReport([results[index] for index in sorted(results)])
