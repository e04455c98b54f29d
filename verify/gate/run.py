"""Drive the gate with Hypothesis: search for a graph on which fastpass changes a pass's result,
shrink it, save it as a reproducer, and turn the search into a verdict per pass.

Two drivers:

* `gate_pass`: one pass (`--pass`), one Hypothesis search per mode (skip, copy), fastpass
  enabled for that pass only; pipeline mode if the TOSA pipeline invokes the pass, else direct.
* `gate_registry`: the whole registry. Per stage, one Hypothesis search whose every example
  lowers a graph stock and once with fastpass ("skip"+"copy") for *all* annotated passes still
  under test; the harness localises a divergence to the first pass whose output differs, the
  search shrinks the graph while it still diverges at that pass, the pass is then classified
  alone (skip only, copy only), taken out of the active set, and the search resumes. So one
  pair of lowerings checks ~150 passes at once, yet each unsound verdict is a single pass's,
  with a minimal reproducer.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from verify.gate import check
from verify.gate import passes as gp
from verify.gate.graphs import strategy_for

VERDICTS = ("sound", "unsound-copy", "unsound-skip", "error", "untested")


@dataclass
class PassVerdict:
    qualname: str
    name: str
    ref: str
    verdict: str = "sound"
    reason: str = ""
    how: str = ""  # pipeline / direct / batch
    stage: str = ""
    annotation: dict = field(default_factory=dict)
    reproducers: dict = field(default_factory=dict)  # verdict -> path
    examples: int = 0
    skipped_invocations: int = 0  # examples in which fastpass skipped the pass
    copied_nodes: int = 0
    modes: dict = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.verdict in ("sound", "untested")

    def to_json(self) -> dict:
        d = asdict(self)
        d["exercised"] = bool(self.skipped_invocations or self.copied_nodes)
        return d


class Divergence(Exception):
    pass


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _settings(examples: int, out: Path, seed: int):
    from hypothesis import HealthCheck, settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    return settings(max_examples=max(1, examples), database=DirectoryBasedExampleDatabase(str(out / "hypothesis-db")),
                    deadline=None, suppress_health_check=list(HealthCheck), derandomize=False,
                    report_multiple_bugs=False, print_blob=False)


def hypothesis_search(key: str, strategy, body: Callable[[Any], check.Outcome], examples: int, out: Path,
                      seed: int | None = None, shrink_seconds: float = 300.0, same_failure: Callable | None = None,
                      on_example: Callable | None = None):
    """Run `body` on up to `examples` graphs; return (failing spec, Outcome) shrunk, or (None, None).

    `same_failure(outcome, first)` says whether a new failure is the one being shrunk (the
    registry driver keeps the culprit pass fixed). Results are cached by graph fingerprint, so
    Hypothesis's final replay of the minimal example does not lower again; after
    `shrink_seconds` of shrinking, new graphs count as passing (the best so far is kept)."""
    import hypothesis
    from hypothesis import given

    failing: dict[str, tuple[Any, check.Outcome]] = {}
    state: dict[str, Any] = {"first": None, "t_fail": None}

    def test(spec):
        fp = spec.fingerprint()
        failed = fp in failing
        if not failed:
            if state["t_fail"] is not None and time.monotonic() - state["t_fail"] > shrink_seconds:
                return
            outcome = body(spec)
            if on_example:
                on_example(spec, outcome, state["first"] is not None)
            if outcome.diverged:
                if state["first"] is None:
                    state["first"], state["t_fail"] = outcome, time.monotonic()
                if same_failure is None or same_failure(outcome, state["first"]):
                    failing[fp] = (spec, outcome)
                    failed = True
        if failed:  # one raise statement: Hypothesis tells failures apart by where they are raised
            raise Divergence(fp)

    wrapped = _settings(examples, out, seed)(given(strategy)(test))
    wrapped._hypothesis_internal_add_digest = key.encode()
    if seed is not None:  # a fixed seed makes the run repeatable, but Hypothesis then skips the database
        wrapped = hypothesis.seed(seed)(wrapped)
    try:
        wrapped()
    except Divergence as exc:
        return failing[exc.args[0]]
    except BaseException as exc:  # noqa: BLE001 - Hypothesis may wrap our exception
        for sub in getattr(exc, "exceptions", ()) or ():
            if isinstance(sub, Divergence):
                return failing[sub.args[0]]
        raise
    return None, None


# ---------------------------------------------------------------------------------------------
# reproducers


def write_reproducer(out: Path, v: PassVerdict, verdict: str, mode: str, spec, outcome: check.Outcome,
                     how: str, stage: str, exclude: list[str] | None = None) -> Path:
    folder = out / "reproducers"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{v.name}-{verdict}.py"
    detail = "\n".join("#   " + line for line in (outcome.detail or "").splitlines()[:12])
    header = (
        f"# verify gate reproducer: {verdict} of {v.qualname}\n"
        f"# The pass gives a different result with fastpass feature '{mode}' than stock on this graph.\n"
        f"# Replay (exit 1 while the annotation is still unsound):\n"
        f"#   python -m verify gate --pass {v.ref} --stage {stage} --replay {path}\n"
        f"# gate-pass: {v.ref}\n# gate-mode: {mode}\n# gate-stage: {stage}\n# gate-how: {how}\n"
        + (f"# gate-scope: registry (fastpass on for every annotated pass except: {','.join(exclude) or '-'})\n"
           f"# gate-exclude: {','.join(exclude)}\n" if exclude is not None else "")
        + f"# first divergence: {outcome.where}\n# differences:\n{detail}\n"
    )
    path.write_text(header + spec.to_python())
    return path


def parse_reproducer(path: Path) -> dict:
    from generators.random import GraphSpec

    info: dict[str, Any] = {}
    for line in path.read_text().splitlines():
        if line.startswith("# gate-scope: registry"):
            info["registry"] = True
        for key in ("gate-pass", "gate-mode", "gate-stage", "gate-how", "gate-exclude"):
            if line.startswith(f"# {key}: "):
                info[key] = line.split(": ", 1)[1].strip()
        if line.startswith("# Spec (JSON): "):
            info["spec"] = GraphSpec.from_json(line.split(": ", 1)[1])
    if "spec" not in info:
        raise ValueError(f"{path} is not a gate reproducer (no '# Spec (JSON):' line)")
    return info


# ---------------------------------------------------------------------------------------------
# one pass


def how_to_run(cls: type, stage: str) -> str:
    from executorch.backends.arm._passes.arm_pass import ArmPass  # noqa: F401

    if cls.__module__.startswith(("executorch.backends.arm", "executorch.exir")):
        if cls.__name__ in check.pipeline_pass_names(check.target_for(stage)):
            return "pipeline"
    return "direct"


def make_verdict(cls: type, ref: str | None = None) -> PassVerdict:
    qn = gp.qualname(cls)
    return PassVerdict(qn, cls.__name__, ref or f"{cls.__module__}:{cls.__qualname__}",
                       annotation=gp.describe_annotation(cls))


def gate_pass(cls: type, ref: str | None, examples: int, stage: str, out: Path, seed: int | None = None,
              how: str | None = None, max_ops: int = 4, shrink_seconds: float = 300.0,
              ops: list[str] | None = None) -> PassVerdict:
    from fastpass.annotations import lookup

    start = time.perf_counter()
    gp.ensure_annotation(cls)
    v = make_verdict(cls, ref)
    v.stage = stage
    ann = lookup(cls)
    if not (ann.skip_sound or ann.copy_sound):
        v.verdict, v.reason = "error", "the pass has no skip- or copy-sound annotation (nothing to check)"
        return v
    try:
        v.how = how or how_to_run(cls, stage)
    except Exception as exc:  # noqa: BLE001
        v.verdict, v.reason = "error", f"cannot decide how to run it: {exc}"
        return v
    strategy = strategy_for(ann.targeted_ops, max_ops, ops)
    modes = [m for m, on in (("skip", ann.skip_sound and ann.targeted_ops), ("copy", ann.copy_sound)) if on]
    unsound = []
    for mode in modes:
        counts = {"examples": 0, "vacuous": 0, "exercised": 0}

        def on_example(spec, o, shrinking, mode=mode, counts=counts):
            if shrinking:
                return
            counts["examples"] += 1
            counts["vacuous"] += bool(o.vacuous)
            counts["exercised"] += bool(o.skipped if mode == "skip" else o.copied)
            v.skipped_invocations += o.skipped
            v.copied_nodes += o.copied
            status = "DIVERGES" if o.diverged else ("vacuous: " + o.vacuous[:80] if o.vacuous else "same")
            _log(f"  {v.name} [{mode}] example {counts['examples']}/{examples}: {len(spec)} op(s) "
                 f"{','.join(spec.op_names())} -> {status} (skipped {o.skipped}, copied {o.copied})")

        def body(spec, mode=mode):
            try:
                return check.example(spec, cls, mode, stage, v.how)
            except Exception as exc:  # noqa: BLE001 - a broken example is not a divergence
                return check.Outcome(False, vacuous=f"harness error: {type(exc).__name__}: {exc}"[:300])

        _log(f"gate: {v.qualname} [{mode}] ({v.how}, {stage}), up to {examples} graph(s)")
        try:
            spec, outcome = hypothesis_search(f"gate:{v.qualname}:{mode}:{stage}:{v.how}", strategy, body,
                                              examples, out, seed, shrink_seconds, on_example=on_example)
        except Exception as exc:  # noqa: BLE001
            v.verdict, v.reason = "error", f"search failed: {type(exc).__name__}: {exc}"[:500]
            v.seconds = time.perf_counter() - start
            return v
        v.examples += counts["examples"]
        v.modes[mode] = dict(counts, diverged=spec is not None)
        if spec is not None:
            verdict = f"unsound-{mode}"
            path = write_reproducer(out, v, verdict, mode, spec, outcome, v.how, stage)
            v.reproducers[verdict] = str(path)
            v.modes[mode].update(detail=outcome.detail, where=outcome.where, graph=spec.describe())
            unsound.append((verdict, outcome))
            _log(f"gate: {v.name}: {verdict}; shrunk to {len(spec)} op(s); reproducer {path}")
        elif counts["examples"] and counts["vacuous"] == counts["examples"]:
            v.modes[mode]["note"] = "every example was vacuous"
    if unsound:
        v.verdict = unsound[0][0]  # skip is checked first
        v.reason = "; ".join(f"{verdict}: {o.detail.splitlines()[0] if o.detail else ''}" for verdict, o in unsound)
    elif v.modes and all(m.get("note") for m in v.modes.values()):
        v.verdict, v.reason = "error", "no example could be run: " + "every example was vacuous"
    v.seconds = time.perf_counter() - start
    return v


def replay(path: Path, ref: str | None, stage: str | None) -> int:
    info = parse_reproducer(path)
    ref = ref or info.get("gate-pass")
    cls = gp.resolve(ref)
    gp.ensure_annotation(cls)
    stage = stage or info.get("gate-stage", "edge-fp")
    how = info.get("gate-how") or how_to_run(cls, stage)
    mode = info.get("gate-mode", "copy")
    if info.get("registry"):
        excluded = set(filter(None, info.get("gate-exclude", "").split(",")))
        with check.quiet():
            keep = [c for qn, c in gp.annotated_passes().items() if qn not in excluded]
        outcome = check.pipeline_example(info["spec"], cls, mode, stage, keep=keep)
    else:
        outcome = check.example(info["spec"], cls, mode, stage, how)
    print(info["spec"].describe())
    if outcome.diverged:
        print(f"DIVERGES with fastpass '{mode}' ({how}, {stage}) at {outcome.where}:\n{outcome.detail}")
        return 1
    print(f"same result stock and with fastpass '{mode}' ({how}, {stage})"
          + (f" [vacuous: {outcome.vacuous}]" if outcome.vacuous else ""))
    return 0


# ---------------------------------------------------------------------------------------------
# the whole registry


def gate_registry(classes: dict[str, type], examples: int, stages: list[str], out: Path, seed: int | None = None,
                  max_ops: int = 4, shrink_seconds: float = 300.0, max_culprits: int = 10,
                  direct_examples: int = 3, ops: list[str] | None = None) -> list[PassVerdict]:
    from fastpass.annotations import lookup

    verdicts = {qn: make_verdict(cls) for qn, cls in classes.items()}
    by_name: dict[str, list[str]] = {}
    for qn, cls in classes.items():
        by_name.setdefault(cls.__name__, []).append(qn)
    tested: set[str] = set()
    for stage in stages:
        target = check.target_for(stage)
        invoked = check.pipeline_pass_names(target)
        active = {qn for qn, cls in classes.items() if cls.__name__ in invoked
                  and verdicts[qn].verdict == "sound"}
        tested |= active
        _log(f"gate: stage {stage} ({target.name}): {len(active)} annotated pass(es) in the pipeline, "
             f"{examples} graph(s)")
        stage_start = time.perf_counter()
        done = 0
        excluded: set[str] = {qn for qn in classes if verdicts[qn].verdict != "sound"}
        for _round in range(max_culprits + 1):
            if not active:
                break
            names = sorted(active)
            from hypothesis import strategies as st

            strategy = st.sampled_from(names).flatmap(
                lambda qn: strategy_for(lookup(classes[qn]).targeted_ops, max_ops, ops))
            keep = [classes[qn] for qn in names]
            counter = {"n": 0}

            def body(spec, keep=keep):
                try:
                    return check.pipeline_example(spec, None, "both", stage, keep=keep)
                except Exception as exc:  # noqa: BLE001
                    return check.Outcome(False, vacuous=f"harness error: {type(exc).__name__}: {exc}"[:300])

            def on_example(spec, o, shrinking, counter=counter, active=active):
                if shrinking:
                    return
                counter["n"] += 1
                for rec in (o.stats or {}).get("per_pass", []) or []:
                    for qn in by_name.get(rec.get("name"), ()):
                        if qn in active:
                            verdicts[qn].skipped_invocations += int(rec.get("skip_reason") == "no-targeted-ops")
                            verdicts[qn].copied_nodes += int(rec.get("copied", 0))
                status = f"DIVERGES at {o.where}" if o.diverged else (
                    "vacuous: " + o.vacuous[:80] if o.vacuous else "same")
                _log(f"  [{stage}] graph {done + counter['n']}/{examples}: {len(spec)} op(s) "
                     f"{','.join(spec.op_names())} -> {status}")

            same = lambda o, first: o.culprit == first.culprit  # noqa: E731
            remaining = max(1, examples - done)
            spec, outcome = hypothesis_search(f"gate-registry:{stage}", strategy, body, remaining, out,
                                              None if seed is None else seed + _round,
                                              shrink_seconds, same_failure=same, on_example=on_example)
            done += counter["n"]
            for qn in active:
                verdicts[qn].examples += counter["n"]
            if spec is None:
                break
            culprits = [qn for qn in by_name.get(outcome.culprit or "", []) if qn in active]
            if not culprits:
                _log(f"gate: divergence at {outcome.where}, not an annotated pass under test; "
                     f"reproducer kept, search stops for stage {stage}")
                v = PassVerdict("<unattributed>", "unattributed", "-", "error",
                                f"divergence at {outcome.where}: {outcome.detail.splitlines()[0]}", "batch", stage)
                v.reproducers["error"] = str(write_reproducer(out, v, "error", "both", spec, outcome, "pipeline", stage))
                verdicts[f"<unattributed:{stage}>"] = v
                break
            qn = culprits[0]
            v = verdicts[qn]
            classify(v, classes[qn], spec, outcome, stage, out, keep, sorted(excluded))
            active.discard(qn)
            excluded.add(qn)
            if done >= examples:
                break
        _log(f"gate: stage {stage}: {done} graph(s) in {time.perf_counter() - stage_start:.0f} s")
        for qn in active:
            verdicts[qn].how = "batch"
            verdicts[qn].stage = (verdicts[qn].stage + "," if verdicts[qn].stage else "") + stage
    # passes no stage's pipeline invokes: run them directly, one by one
    for qn, cls in classes.items():
        if qn in tested:
            continue
        if direct_examples <= 0:
            verdicts[qn].verdict, verdicts[qn].reason = "untested", "not invoked by the pipelines (direct runs disabled)"
            continue
        v = gate_pass(cls, None, direct_examples, stages[0], out, seed, how="direct", max_ops=max_ops,
                      shrink_seconds=shrink_seconds, ops=ops)
        if v.verdict == "error" and "vacuous" in v.reason:
            v.verdict = "untested"
            v.reason = ("not invoked by the " + "/".join(check.target_for(s).name for s in stages)
                        + " pipelines, and it cannot run standalone on edge graphs")
        verdicts[qn] = v
    return list(verdicts.values())


def classify(v: PassVerdict, cls: type, spec, outcome: check.Outcome, stage: str, out: Path, keep: list,
             exclude: list[str]) -> None:
    """Re-run the shrunk graph with the same annotated passes, skip only and copy only; a feature
    is blamed if the first divergence is still this pass."""
    from fastpass.annotations import lookup

    ann = lookup(cls)
    v.how, v.stage = "pipeline", stage
    found = []
    for mode, on in (("skip", ann.skip_sound and ann.targeted_ops), ("copy", ann.copy_sound)):
        if not on:
            continue
        o = check.pipeline_example(spec, cls, mode, stage, keep=keep)
        v.modes[mode] = {"diverged": o.diverged, "where": o.where, "detail": o.detail}
        if o.diverged and o.culprit == cls.__name__:
            verdict = f"unsound-{mode}"
            v.reproducers[verdict] = str(write_reproducer(out, v, verdict, mode, spec, o, "pipeline", stage, exclude))
            found.append((verdict, o))
    if found:
        v.verdict = found[0][0]
        v.reason = "; ".join(f"{verdict} at {o.where}: {o.detail.splitlines()[0]}" for verdict, o in found)
    else:
        v.verdict = "error"
        v.reason = (f"diverges at {outcome.where} only with the other annotated passes active "
                    f"(skip+copy): {outcome.detail.splitlines()[0]}")
        v.reproducers["error"] = str(write_reproducer(out, v, "error", "both", spec, outcome, "pipeline", stage,
                                                      exclude))
    _log(f"gate: {v.name}: {v.verdict}; graph of {len(spec)} op(s); {v.reason[:200]}")
