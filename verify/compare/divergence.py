"""Where two lowerings part, as a value: the pass step, or the point outside the pass sequence
(a delegate's bytes, the final graph, the serialized program), the check that saw it and what
it saw. Code reads its fields (`step.pass_name`, `delegate`); `label` is for people."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from verify.lowering.steps import PassStep


@dataclass(frozen=True)
class Divergence:
    """`step` is the pass after which the two parted (None when the point is not a pass);
    `label` names the point for a reader: the step's label, or e.g. "final program graph
    (full provenance)", "delegate0", "serialized program"."""

    label: str
    step: PassStep | None = None
    check: str | None = None  # the check that found it (a key of verify.compare.CHECKS)
    details: tuple[str, ...] = ()  # what that check saw differ (first lines)
    delegate: int | None = None  # the delegate whose bytes or reference outputs differ

    @classmethod
    def at_step(cls, step: PassStep, check: str | None = None, details: tuple[str, ...] = ()) -> "Divergence":
        return cls(step.label, step, check, tuple(details))

    @property
    def pass_name(self) -> str | None:
        """The class name of the pass at which they part, if the point is a pass."""
        return self.step.pass_name if self.step is not None else None

    def __str__(self) -> str:
        return self.label

    def to_json(self) -> dict[str, Any]:
        step = self.step
        return {"label": self.label, "check": self.check, "pass": self.pass_name,
                "phase": step.phase if step else None, "manager": step.manager if step else None,
                "index": step.index if step else None, "seq": step.seq if step else None,
                "delegate": self.delegate, "details": list(self.details)}

    @classmethod
    def from_json(cls, data: dict[str, Any] | str | None) -> "Divergence | None":
        """The inverse of to_json (the step without its digest and timing, which JSON does not
        keep); a bare label string, as reports before this type wrote, gives a label-only value."""
        if data is None:
            return None
        if isinstance(data, str):
            return cls(data)
        step = None
        if data.get("pass") is not None:
            step = PassStep(data.get("seq", -1), data["phase"], data["manager"], data["index"], data["pass"],
                            None, 0.0)
        return cls(data["label"], step, data.get("check"), tuple(data.get("details") or ()), data.get("delegate"))
