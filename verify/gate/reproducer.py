"""A gate reproducer, written and replayed: the one job of this module is the file a divergence
leaves behind (verify.report.reproducer's format) -- writing it when a search has shrunk a
failing graph (`write_reproducer`), and lowering it again as the gate did (`replay_saved`,
`verify replay`), with how the pass runs on a stage (`how_to_run`: its Route, pipeline or direct),
which the
file records and the replay decides again.

Why apart from the drivers (verify.gate.run) and the search (verify.gate.search): what a
reproducer says is written and read in one place, and `verify replay` needs only this module,
not Hypothesis nor the drivers.
"""

from __future__ import annotations

from pathlib import Path

from fastpass.annotations import ProofStatus
from verify.gate import check
from verify.gate import passes as gp
from verify.gate.verdict import PassVerdict
from verify.report.reproducer import NO_PASS, Manifest, Producer, Replayed, Reproducer, save
from verify.vocabulary import Feature, FeatureSet, Route, Verdict


def write_reproducer(out: Path, v: PassVerdict, verdict: ProofStatus, enabled: FeatureSet, spec,
                     outcome: check.Outcome, how: Route, stage: str, exclude: list[str] | None = None,
                     per_stage: bool = False) -> Path:
    """Save the graph as a runnable reproducer (verify.report.reproducer's format): the pass and
    its annotation, the feature under test, the stage, how the pass ran, and for a registry run
    the passes fastpass was not on for. `per_stage`: the stage is part of the file name (a
    registry run's stages search at once, each may find the same pass unsound)."""
    verdict = ProofStatus(verdict).value
    path = out / "reproducers" / (f"{v.name}-{verdict}-{stage}.py" if per_stage else f"{v.name}-{verdict}.py")
    manifest = Manifest(Producer.GATE, stage, enabled.names, outcome.where,
                        f"{verdict} of {v.qualname}", pass_ref=v.ref, annotation=v.annotation,
                        graph=spec.to_dict(), settings={"how": how.value, "exclude": exclude})
    scope = ([f"gate-scope: registry (fastpass on for every annotated pass except: {','.join(exclude) or '-'})"]
             if exclude is not None else [])
    if v.ref == NO_PASS:
        how_to_replay = [
            f"The lowering gives a different result with fastpass feature '{enabled}' than stock on this graph, "
            "though no annotated pass's output differs.",
            "No annotated pass under test is first to differ: the replay lowers with the registry's "
            "annotations (no --trust: it imports nothing the file names); exit 1 while it still diverges:",
            f"  python -m verify replay {path}"]
    else:
        how_to_replay = [
            f"The pass gives a different result with fastpass feature '{enabled}' than stock on this graph.",
            "Exit 1 while the annotation is still unsound (the replay imports the pass: --trust); "
            "--pass REF or --stage STAGE replays it with another pass or stage:",
            f"  python -m verify replay {path} --trust --pass {v.ref} --stage {stage}"]
    save(path, manifest, spec.to_python(), notes=[
        f"verify gate reproducer: {verdict} of {v.qualname}",
        *how_to_replay, *scope, f"first divergence: {outcome.where}", "differences:",
        *("  " + line for line in (outcome.detail or "").splitlines()[:12])])
    return path


def how_to_run(cls: type, stage: str) -> Route:
    from executorch.backends.arm._passes.arm_pass import ArmPass  # noqa: F401

    if cls.__module__.startswith(("executorch.backends.arm", "executorch.exir")):
        if cls.__name__ in check.pipeline_pass_names(check.target_for(stage)):
            return Route.PIPELINE
    return Route.DIRECT


def replay_saved(saved: Reproducer, ref: str | None = None, stage: str | None = None) -> Replayed:
    """Lower the saved graph stock and with fastpass on for the pass (and, for a registry
    reproducer, every annotated pass but the excluded ones), as the gate did: `verify replay`'s
    replay of a gate reproducer (verify.commands.replay), optionally with another pass reference or
    stage (`--pass`, `--stage`)."""
    manifest = saved.manifest
    spec = saved.graph_spec()
    stage = stage or manifest.target
    # () in a manifest: every feature (the gate itself always records which)
    enabled = FeatureSet.of(Feature(name) for name in manifest.features) if manifest.features else FeatureSet.BOTH
    exclude = manifest.settings.get("exclude")
    ref = ref or manifest.pass_ref
    cls = None if ref == NO_PASS else gp.resolve_pass(ref)  # NO_PASS: the registry as the search ran it
    if cls is not None:
        gp.ensure_annotation(cls)
    recorded = Route(manifest.settings.get("how") or Route.UNDECIDED)
    how = Route.PIPELINE if cls is None else (how_to_run(cls, stage) if recorded is Route.UNDECIDED else recorded)
    if exclude is not None or cls is None:
        excluded = set(exclude or ())
        with check.quiet():
            keep = [c for qn, c in gp.annotated_passes().items() if qn not in excluded]
        outcome = check.pipeline_example(spec, cls, enabled, stage, keep=keep)
    else:
        outcome = check.example(spec, cls, enabled, stage, how)
    print(spec.describe())
    if outcome.diverged:
        print(f"DIVERGES with fastpass '{enabled}' ({how}, {stage}) at {outcome.where}:\n{outcome.detail}")
        return Replayed(Verdict.DIVERGENT, outcome.where)  # the details are printed above
    if outcome.stocks_own:  # stock gives the difference itself: not "identical"
        print(f"fastpass '{enabled}' ({how}, {stage}) differs from stock as stock differs from itself")
        return Replayed(Verdict.NONDETERMINISTIC, details=(outcome.vacuous,))
    print(f"same result stock and with fastpass '{enabled}' ({how}, {stage})"
          + (f" [vacuous: {outcome.vacuous}]" if outcome.vacuous else ""))
    return Replayed(Verdict.IDENTICAL)
