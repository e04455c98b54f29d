"""A registry run's stage plan: how a whole-registry gate run is split into one search per
stage (`StagePlan`: its passes, graphs, vocabulary `stage_ops`, seed `stage_seed`, share of
--max-seconds `stage_shares`), what each search hands back (`StageResult`), who runs the plans
(`RegistryRunner`), and how the results become one verdict per pass (`merge_stage_results`).

Why apart from the drivers (verify.gate.run) and the search (verify.gate.search): it is the
contract between them and the workers that run a plan in another process (verify.gate.workers,
verify.gate.worker), and it imports neither torch nor Hypothesis, so the workers' side reads it
without the search.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from verify.gate.stages import STAGE_TARGETS, STAGES
from verify.gate.verdict import PassVerdict, make_verdict, merge_stages
from verify.vocabulary import Ending


@dataclass(frozen=True)
class StagePlan:
    """One stage's search in a registry run: everything a stage worker needs besides the
    settings every search shares (out, max_ops, shrink_seconds, ops, min_evidence)."""

    stage: str
    passes: tuple[str, ...]  # qualnames of the annotated passes its pipeline invokes, registry order
    examples: int
    top_up: int
    top_up_seconds: float
    seconds: float | None = None  # its share of --max-seconds, counted from the search's start
    not_after: float | None = None  # time.monotonic() past which it lowers no graph (the direct reserve)
    seed: int | None = None  # its own (stage_seed): not shared with, nor counted on from, other stages


@dataclass(frozen=True)
class StageResult:
    """What one stage's search gave: each pass's verdict for this stage alone (not judged), plus
    the stage's own entries (`<search-error:...>`, `<unattributed:...>`, `<worker-crash:...>`).

    `unfinished` says the search did not run to its end (stopped, not started by the deadline,
    or its worker crashed or timed out); `verdicts` then hold the evidence it had gathered so
    far (a stage worker writes it after every graph: see search_stage's `checkpoint`), and
    gate_registry turns every pass it searches into an `error` (PassVerdict.not_finished)."""

    stage: str
    verdicts: dict[str, PassVerdict]
    unfinished: Ending | None = None


# (stage plans, direct passes as (qualname, class), the direct runs' stage, run deadline) ->
# (a result per stage plan, in any order, `unfinished` set where its search did not run to its end;
#  the verdicts of the direct passes whose check finished, or was cut short with `unfinished` set)
RegistryRunner = Callable[[list[StagePlan], list[tuple[str, type]], str, "float | None"],
                          tuple[list[StageResult], dict[str, PassVerdict]]]


def stage_ops(stage: str, ops: list[str] | None) -> list[str] | None:
    """The vocabulary a stage draws from: `ops` (--ops) if given; on a float stage (a target lowered
    without quantization: edge-fp) every op including ``generators.random``'s FLOAT_ONLY ones (an
    int32 operand, addmm), which only quantized targets cannot take; else the default vocabulary
    (None). Without them the gate never drew a mixed-dtype operand, the only form
    RemoveMixedTypeOperators rewrites, and called a wrong annotation of it sound."""
    from generators.random import ops_in_vocabulary
    from generators.random.reach import INT_TARGETS

    if ops is not None or STAGE_TARGETS[stage] in INT_TARGETS:
        return ops
    return list(ops_in_vocabulary(float_target=True))


def stage_seed(seed: int | None, stage: str) -> int | None:
    """A stage's own Hypothesis seed: fixed by --seed and the stage alone, so a stage draws the same
    graphs whichever stages run with it, in whichever order or worker (-j 1 and -j N alike).
    Each search round within the stage adds its own number (1, 2, ...; below 1000), so edge-fp's
    rounds draw as a one-stage run always did."""
    return None if seed is None else seed + 1000 * STAGES.index(stage)


def merge_stage_results(classes: dict[str, type], results: list[StageResult]) -> dict[str, PassVerdict]:
    """Every pass's verdict over the stages (`results` in stage order): merged where stages
    searched it (verdict.merge_stages), a fresh one (no examples) where none did; then the
    stages' own entries (`<search-error:...>`, `<unattributed:...>`, `<worker-crash:...>`) in
    stage order. The order is the registry's, whatever order the stages finished in."""
    verdicts = {}
    for qn, cls in classes.items():
        per_stage = [r.verdicts[qn] for r in results if qn in r.verdicts]
        verdicts[qn] = merge_stages(per_stage) if per_stage else make_verdict(cls)
    for r in results:
        for key, v in r.verdicts.items():
            if key not in classes:
                verdicts[key] = v
    return verdicts


def stage_shares(max_seconds: float | None, direct_reserve: float, stages: int, parallel: int) -> float | None:
    """Each stage search's budget in seconds under --max-seconds: what is left after the direct
    runs' reserve, divided by the rounds of stage searches `parallel` workers run (4 stages at
    -j 2: two rounds, so each stage gets half of it; at -j 1 a quarter)."""
    if max_seconds is None or stages == 0:
        return None
    rounds = -(-stages // max(1, min(parallel, stages)))
    return max(0.0, max_seconds - direct_reserve) / rounds
