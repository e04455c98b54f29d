"""What watching a lowering records: the pass steps and the graphs, as plain typed values.

Kept apart from `observe.py` (which installs the observers) so that reading a result -- a
`Divergence` names its `PassStep` -- does not import the patch machinery, nor fastpass with it:
the pytest plugin, loaded by every pytest run, must leave fastpass unimported unless asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from verify.lowering.snapshot import GraphSnapshot


class Part(str, Enum):
    """A named part of a lowering outside its passes, timed when asked
    (`observe_lowering(parts=True)`, the rows of feature `parts` in verify/lowering/observe.py).

    Each part's time is *exclusive*: the passes and the other parts that run inside it are taken
    out of it, and a part entered inside a pass is that pass's time (the pass step holds it). So
    the parts, the pass steps that run inside no other pass, and the rest add up to the whole
    lowering with nothing counted twice."""

    DECOMPOSITIONS = "decompositions"  # torch's ExportedProgram.run_decompositions: the aot re-trace
    TO_EDGE = "to_edge"  # the aten-to-edge conversion (_generate_edge_program): passes it calls directly
    PARTITIONING = "partitioning"  # the partitioner's partition() (Partitioner.__call__)
    PIPELINE_SETUP = "pipeline_setup"  # building the ARM pass pipeline per delegate (~150 pass objects)
    TOSA_SERIALIZATION = "tosa_serialization"  # TOSABackend._preprocess minus the ARM pass pipeline in it
    VELA = "vela"  # the Ethos-U backend's compile of the TOSA flatbuffer (Vela); no call for a TOSA target
    PASS_MANAGERS = "pass_managers"  # the pass managers' own work around their passes (ordering, checks, verifiers)

    def __str__(self) -> str:
        return self.value


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
    # Exclusive seconds of each Part that ran (timed only when asked; a part that never ran is absent).
    part_seconds: dict[Part, float] = field(default_factory=dict)
    # Seconds of the pass steps run inside another pass step (already inside that step's seconds):
    # a sum over every step counts them twice.
    nested_step_seconds: float = 0.0
