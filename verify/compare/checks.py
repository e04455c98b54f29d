"""The checks, one function each, run in a fixed order. Each says whether the two
lowerings agree in its respect and, if not, where they first part and how."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from verify.compare.aligned import pass_sequence, snapshot_pairs
from verify.compare.graphs import identical_up_to_names, structure_differences
from verify.compare.meta import meta_differences
from verify.compare.payloads import bytes_difference, outputs_difference
from verify.compare.program import constants_differences, serialized_program_differences
from verify.compare.vals import val_differences
from verify.lowering.lower import LoweringResult


@dataclass
class CheckResult:
    name: str
    passed: bool
    first_divergence: str | None = None  # a pass label, "final program graph", "delegate0", ...
    details: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"passed": self.passed, "first_divergence": self.first_divergence, "details": self.details}


def check_outcome(a: LoweringResult, b: LoweringResult) -> CheckResult:
    """Both lowerings succeed, or both fail the same way. One failing alone is a divergence."""
    first_line = lambda r: (r.error or "").splitlines()[0] if r.error else None  # noqa: E731
    if first_line(a) == first_line(b):
        return CheckResult("outcome", True)
    describe = lambda r: f"{r.mode}: " + (first_line(r) or "ok")  # noqa: E731
    # Where the failing lowering stopped: the pass the other one ran next.
    ok_run, failed_run = (a, b) if a.ok else (b, a)
    stopped = len(failed_run.observation.steps)
    steps = ok_run.observation.steps
    where = steps[stopped].label if stopped < len(steps) else "after the last pass"
    return CheckResult("outcome", False, where, [describe(a), describe(b)])


def check_passes(a: LoweringResult, b: LoweringResult) -> CheckResult:
    """The same passes ran in the same order, under the same managers and delegates."""
    sa, sb = pass_sequence(a), pass_sequence(b)
    if sa == sb:
        return CheckResult("passes", True)
    i = next((i for i, (x, y) in enumerate(zip(sa, sb)) if x != y), min(len(sa), len(sb)))
    get = lambda s: s[i] if i < len(s) else "<end>"  # noqa: E731
    return CheckResult("passes", False, get(sa), [f"step {i}: {get(sa)} vs {get(sb)}",
                                                   f"{len(sa)} vs {len(sb)} pass invocations"])


def _snapshot_check(name: str, differences: Callable) -> Callable[[LoweringResult, LoweringResult], CheckResult]:
    def check(a: LoweringResult, b: LoweringResult) -> CheckResult:
        for pair in snapshot_pairs(a, b):
            if pair.left is None or pair.right is None:
                if pair.left is not pair.right:
                    return CheckResult(name, False, pair.label,
                                       ["one lowering stopped before this point (see the outcome check)"])
                continue
            if pair.left.digest == pair.right.digest:
                continue
            found = differences(pair.left, pair.right)
            if found:
                if name == "graph":
                    found.append("identical up to names: "
                                 + ("yes" if identical_up_to_names(pair.left, pair.right) else "no"))
                return CheckResult(name, False, pair.label, found)
        return CheckResult(name, True)

    check.__name__ = f"check_{name}"
    return check


check_graph = _snapshot_check("graph", structure_differences)
check_graph.__doc__ = "Per pass and final: node order, names, op kinds, targets, args/kwargs, outputs."
check_val = _snapshot_check("val", val_differences)
check_val.__doc__ = 'Per pass and final: meta["val"] on every node.'
check_meta = _snapshot_check("meta", meta_differences)
check_meta.__doc__ = "Per pass and final: every other compared meta key."


def check_payload(a: LoweringResult, b: LoweringResult) -> CheckResult:
    """The bytes each delegate carries (TOSA flatbuffer, or Vela command stream)."""
    return _payload_bytes("payload", a, b, lambda p: p.processed_bytes)


def check_tosa(a: LoweringResult, b: LoweringResult) -> CheckResult:
    """Each delegate's TOSA flatbuffer (for Ethos-U, the intermediate TOSA given to Vela)."""
    return _payload_bytes("tosa", a, b, lambda p: p.tosa)


def _payload_bytes(name, a, b, get) -> CheckResult:
    details = []
    if len(a.payloads) != len(b.payloads):
        details.append(f"{len(a.payloads)} vs {len(b.payloads)} delegates")
    for k, (pa, pb) in enumerate(zip(a.payloads, b.payloads)):
        diff = bytes_difference(get(pa), get(pb))
        if diff:
            details.append(f"delegate{k} ({pa.backend_id}): {diff}")
    return CheckResult(name, not details, details[0].split(" ")[0] if details else None, details)


def check_program(a: LoweringResult, b: LoweringResult) -> CheckResult:
    """The serialized program (`to_executorch().buffer`, the .pte a user ships), byte for byte."""
    if a.ok != b.ok:
        return CheckResult("program", False, "serialized program",
                           ["one lowering failed before serialization (see the outcome check)"])
    if a.program_error != b.program_error:
        describe = lambda r: f"{r.mode}: " + (r.program_error or "serialized")  # noqa: E731
        return CheckResult("program", False, "serialized program",
                           ["to_executorch() succeeded or failed differently", describe(a), describe(b)])
    if a.program_error is not None:
        return CheckResult("program", True, details=[f"not serialized in either mode, the same way: {a.program_error}"])
    if a.program is None:
        return CheckResult("program", True)  # both lowerings failed: the outcome check speaks
    details = serialized_program_differences(a.program, b.program)
    if details:
        return CheckResult("program", False, "serialized program", details)
    return CheckResult("program", True, details=[f"{len(a.program)} bytes identical"])


def check_constants(a: LoweringResult, b: LoweringResult) -> CheckResult:
    """Every top-level parameter, buffer and lifted constant: name, metadata and exact bytes."""
    details = constants_differences(a.constants, b.constants)
    if details:
        return CheckResult("constants", False, "top-level constants", details)
    return CheckResult("constants", True, details=[f"{len(a.constants)} top-level constants identical"])


def check_reference(a: LoweringResult, b: LoweringResult) -> CheckResult:
    """TOSA reference-model outputs on seeded random inputs, bit for bit."""
    details = []
    if len(a.reference) != len(b.reference):
        details.append(f"reference runs for {len(a.reference)} vs {len(b.reference)} delegates")
    for k, (ra, rb) in enumerate(zip(a.reference, b.reference)):
        if (ra.error is None) != (rb.error is None):
            details.append(f"delegate{k}: reference model error in one mode only: {ra.error or rb.error}")
        for s, (oa, ob) in enumerate(zip(ra.outputs, rb.outputs)):
            diff = outputs_difference(oa, ob)
            if diff:
                details.append(f"delegate{k} input set {s}: {diff}")
    return CheckResult("reference", not details, details[0].split(" ")[0] if details else None, details)


CHECKS: dict[str, Callable[[LoweringResult, LoweringResult], CheckResult]] = {
    "outcome": check_outcome,
    "passes": check_passes,
    "graph": check_graph,
    "val": check_val,
    "meta": check_meta,
    "payload": check_payload,
    "tosa": check_tosa,
    "program": check_program,
    "constants": check_constants,
    "reference": check_reference,
}


def compare(a: LoweringResult, b: LoweringResult) -> dict[str, CheckResult]:
    return {name: check(a, b) for name, check in CHECKS.items()}


def first_divergent_pass(a: LoweringResult, b: LoweringResult, results: dict[str, CheckResult]) -> str | None:
    """The earliest pass at which any snapshot check, or the pass sequence, parts."""
    order = {step.label: step.seq for step in a.observation.steps}
    labels = [r.first_divergence for r in results.values() if not r.passed and r.first_divergence]
    if not labels:
        return None
    return min(labels, key=lambda label: order.get(label, len(order)))
