"""Walk two lowerings' snapshots side by side, in the order the passes ran."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from verify.compare.divergence import Divergence
from verify.lowering.lower import LoweringResult
from verify.lowering.snapshot import GraphSnapshot


@dataclass(frozen=True)
class SnapshotPair:
    where: Divergence  # the point both were taken at (the pass step, or a delegate's or the program's final graph)
    left: GraphSnapshot | None
    right: GraphSnapshot | None


def pass_sequence(result: LoweringResult) -> list[str]:
    return [step.label for step in result.observation.steps]


def snapshot_pairs(a: LoweringResult, b: LoweringResult) -> Iterator[SnapshotPair]:
    """Per-pass snapshots while both ran the same passes, then each delegate's and the program's final graph."""
    for step_a, step_b in zip(a.observation.steps, b.observation.steps):
        if step_a.label != step_b.label:
            return  # the pass sequences part here: the `passes` check reports it
        if step_a.digest is None or step_b.digest is None:
            continue
        yield SnapshotPair(Divergence.at_step(step_a), a.observation.snapshots[step_a.digest],
                           b.observation.snapshots[step_b.digest])
    for k, (fa, fb) in enumerate(zip(a.observation.delegate_final, b.observation.delegate_final)):
        yield SnapshotPair(Divergence(f"delegate{k} final graph (full provenance)", delegate=k), fa, fb)
    if a.final is not None or b.final is not None:
        yield SnapshotPair(Divergence("final program graph (full provenance)"), a.final, b.final)
