"""What watching a lowering records: the pass steps and the graphs, as plain typed values.

Kept apart from `observe.py` (which installs the observers) so that reading a result -- a
`Divergence` names its `PassStep` -- does not import the patch machinery, nor fastpass with it:
the pytest plugin, loaded by every pytest run, must leave fastpass unimported unless asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verify.lowering.snapshot import GraphSnapshot


@dataclass
class PassStep:
    """One pass invocation: where it ran and the digest of the graph it left behind."""

    seq: int
    phase: str  # "edge" before/after delegation, "delegate<k>" inside the k-th delegate's preprocess
    manager: str  # e.g. "ExportedProgramPassManager#3"
    index: int  # position in its manager; -1 = the manager's input graph
    pass_name: str
    digest: str | None
    seconds: float

    @property
    def label(self) -> str:
        return f"{self.phase}/{self.manager}[{self.index}] {self.pass_name}"


@dataclass
class Observation:
    steps: list[PassStep] = field(default_factory=list)
    snapshots: dict[str, GraphSnapshot] = field(default_factory=dict)
    delegate_tosa: list[bytes] = field(default_factory=list)
    delegate_final: list[GraphSnapshot] = field(default_factory=list)
    # Time spent taking those snapshots, inside the lowering's own time: what observing cost it.
    snapshot_seconds: float = 0.0
