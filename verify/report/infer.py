"""What `verify infer` found for one pass, as a typed value, its JSON and its terminal lines.

Why a value: the inference (verify.gate.infer) and the command that prints it used to share a
dict with string keys and a "comparison" string the command tested by its spelling; now the
fit is an `AnnotationFit` and the JSON is `to_json()`, written by the command as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from verify.vocabulary import AnnotationFit


@dataclass(frozen=True)
class InferredAnnotation:
    """The minimal copy-sound targeted_ops seen for `pass_name` over `graphs` corpus graphs at
    `stage`, against its annotation (`annotated`, with its `skip_sound`, `copy_sound`, `source`)."""

    pass_name: str
    stage: str
    graphs: int
    graphs_failed: int
    errors: tuple[str, ...]  # the first few distinct failures
    inferred: tuple[str, ...]  # ops the pass was seen to rewrite
    annotated: tuple[str, ...]
    skip_sound: bool
    copy_sound: bool
    source: str
    fit: AnnotationFit
    missing: tuple[str, ...]  # rewritten but not declared
    not_needed: tuple[str, ...]  # declared, in the corpus, never rewritten
    not_observed: tuple[str, ...]  # declared, never in the corpus: cannot judge
    ops_in_corpus: tuple[str, ...]

    def to_json(self) -> dict:
        return {
            "pass": self.pass_name,
            "stage": self.stage,
            "graphs": self.graphs,
            "graphs_failed": self.graphs_failed,
            "errors": list(self.errors),
            "inferred_targeted_ops": list(self.inferred),
            "annotated_targeted_ops": list(self.annotated),
            "annotation": {"skip_sound": self.skip_sound, "copy_sound": self.copy_sound, "source": self.source},
            "comparison": self.fit.value,
            "missing_from_annotation": list(self.missing),
            "not_needed": list(self.not_needed),
            "not_observed_in_corpus": list(self.not_observed),
            "ops_in_corpus": list(self.ops_in_corpus),
        }

    def lines(self) -> list[str]:
        """The terminal report."""
        failed = f", {self.graphs_failed} failed: {'; '.join(self.errors)}" if self.graphs_failed else ""
        lines = [
            f"pass: {self.pass_name}  ({self.graphs} graph(s), stage {self.stage}{failed})",
            "minimal copy-sound targeted_ops: {" + ", ".join(self.inferred) + "}",
            "current annotation:              {" + ", ".join(self.annotated) + "}"
            + f"  (skip_sound={self.skip_sound}, copy_sound={self.copy_sound}, {self.source})",
            f"comparison: {self.fit}",
        ]
        if self.missing:
            lines.append("  rewritten but not declared (unsound for copy): " + ", ".join(self.missing))
        if self.not_needed:
            lines.append("  declared, present in the corpus, never rewritten (speed lost): " + ", ".join(self.not_needed))
        if self.not_observed:
            lines.append("  declared but never in the corpus (cannot judge; try --ops): " + ", ".join(self.not_observed))
        return lines
