"""The checks, one function each, run in a fixed order. Each says whether the two
lowerings agree in its respect and, if not, where they first part and how."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from verify.compare.aligned import pass_sequence, snapshot_pairs
from verify.compare.divergence import Divergence
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
    first_divergence: Divergence | None = None  # where this check first saw the lowerings part
    details: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"passed": self.passed,
                "first_divergence": self.first_divergence.to_json() if self.first_divergence else None,
                "details": self.details}

    @classmethod
    def from_json(cls, name: str, passed: bool, data: dict) -> "CheckResult":
        """The inverse of to_json."""
        return cls(name, passed, Divergence.from_json(data.get("first_divergence")), list(data.get("details", [])))


def _diverged(name: str, where: Divergence, details: list[str]) -> CheckResult:
    """A failed check: `where` it saw the lowerings part, tagged with the check and what it saw."""
    return CheckResult(name, False, replace(where, check=name, details=tuple(details[:3])), details)


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
    where = Divergence.at_step(steps[stopped]) if stopped < len(steps) else Divergence("after the last pass")
    return _diverged("outcome", where, [describe(a), describe(b)])


def check_passes(a: LoweringResult, b: LoweringResult) -> CheckResult:
    """The same passes ran in the same order, under the same managers and delegates."""
    sa, sb = pass_sequence(a), pass_sequence(b)
    if sa == sb:
        return CheckResult("passes", True)
    i = next((i for i, (x, y) in enumerate(zip(sa, sb)) if x != y), min(len(sa), len(sb)))
    get = lambda s: s[i] if i < len(s) else "<end>"  # noqa: E731
    steps = a.observation.steps
    where = Divergence.at_step(steps[i]) if i < len(steps) else Divergence("<end>")
    return _diverged("passes", where, [f"step {i}: {get(sa)} vs {get(sb)}", f"{len(sa)} vs {len(sb)} pass invocations"])


# The checks that compare the graph snapshots taken after every pass, each by its own function of
# two snapshots (verify.lowering.snapshot.Snapshot).
SNAPSHOT_DIFFERENCES: dict[str, Callable] = {
    "graph": structure_differences, "val": val_differences, "meta": meta_differences}


def snapshot_differences(left, right) -> dict[str, list[str]]:
    """The snapshot checks on one pair of snapshots: check -> what it saw differ (only the checks
    that failed). The gate's direct mode compares one pass's output graphs with it."""
    if left.digest == right.digest:
        return {}
    found = {name: differences(left, right) for name, differences in SNAPSHOT_DIFFERENCES.items()}
    return {name: details for name, details in found.items() if details}


def _snapshot_check(name: str) -> Callable[[LoweringResult, LoweringResult], CheckResult]:
    differences = SNAPSHOT_DIFFERENCES[name]

    def check(a: LoweringResult, b: LoweringResult) -> CheckResult:
        for pair in snapshot_pairs(a, b):
            if pair.left is None or pair.right is None:
                if pair.left is not pair.right:
                    return _diverged(name, pair.where, ["one lowering stopped before this point (see the outcome check)"])
                continue
            if pair.left.digest == pair.right.digest:
                continue
            found = differences(pair.left, pair.right)
            if found:
                if name == "graph":
                    found.append("identical up to names: "
                                 + ("yes" if identical_up_to_names(pair.left, pair.right) else "no"))
                return _diverged(name, pair.where, found)
        return CheckResult(name, True)

    check.__name__ = f"check_{name}"
    return check


check_graph = _snapshot_check("graph")
check_graph.__doc__ = "Per pass and final: node order, names, op kinds, targets, args/kwargs, outputs."
check_val = _snapshot_check("val")
check_val.__doc__ = 'Per pass and final: meta["val"] on every node.'
check_meta = _snapshot_check("meta")
check_meta.__doc__ = "Per pass and final: every other compared meta key."


def check_payload(a: LoweringResult, b: LoweringResult) -> CheckResult:
    """The bytes each delegate carries (TOSA flatbuffer, or Vela command stream)."""
    return _payload_bytes("payload", a, b, lambda p: p.processed_bytes)


def check_tosa(a: LoweringResult, b: LoweringResult) -> CheckResult:
    """Each delegate's TOSA flatbuffer (for Ethos-U, the intermediate TOSA given to Vela)."""
    return _payload_bytes("tosa", a, b, lambda p: p.tosa)


def _delegate(k: int) -> Divergence:
    return Divergence(f"delegate{k}", delegate=k)


_DELEGATE_COUNT = Divergence("delegate count")


def _payload_bytes(name, a, b, get) -> CheckResult:
    details, where = [], None
    if len(a.payloads) != len(b.payloads):
        details.append(f"{len(a.payloads)} vs {len(b.payloads)} delegates")
        where = _DELEGATE_COUNT
    for k, (pa, pb) in enumerate(zip(a.payloads, b.payloads)):
        diff = bytes_difference(get(pa), get(pb))
        if diff:
            details.append(f"delegate{k} ({pa.backend_id}): {diff}")
            where = where or _delegate(k)
    return _diverged(name, where, details) if details else CheckResult(name, True)


_SERIALIZED = Divergence("serialized program")


def check_program(a: LoweringResult, b: LoweringResult) -> CheckResult:
    """The serialized program (`to_executorch().buffer`, the .pte a user ships), byte for byte."""
    if a.ok != b.ok:
        return _diverged("program", _SERIALIZED, ["one lowering failed before serialization (see the outcome check)"])
    if a.program_error != b.program_error:
        describe = lambda r: f"{r.mode}: " + (r.program_error or "serialized")  # noqa: E731
        return _diverged("program", _SERIALIZED,
                         ["to_executorch() succeeded or failed differently", describe(a), describe(b)])
    if a.program_error is not None:
        return CheckResult("program", True, details=[f"not serialized in either mode, the same way: {a.program_error}"])
    if a.program is None:
        return CheckResult("program", True)  # both lowerings failed: the outcome check speaks
    details = serialized_program_differences(a.program, b.program)
    if details:
        return _diverged("program", _SERIALIZED, details)
    return CheckResult("program", True, details=[f"{len(a.program)} bytes identical"])


def check_constants(a: LoweringResult, b: LoweringResult) -> CheckResult:
    """Every top-level parameter, buffer and lifted constant: name, metadata and exact bytes."""
    details = constants_differences(a.constants, b.constants)
    if details:
        return _diverged("constants", Divergence("top-level constants"), details)
    return CheckResult("constants", True, details=[f"{len(a.constants)} top-level constants identical"])


def check_reference(a: LoweringResult, b: LoweringResult) -> CheckResult:
    """TOSA reference-model outputs on seeded random inputs, bit for bit."""
    details, where = [], None
    if len(a.reference) != len(b.reference):
        details.append(f"reference runs for {len(a.reference)} vs {len(b.reference)} delegates")
        where = _DELEGATE_COUNT
    for k, (ra, rb) in enumerate(zip(a.reference, b.reference)):
        if (ra.error is None) != (rb.error is None):
            details.append(f"delegate{k}: reference model error in one mode only: {ra.error or rb.error}")
            where = where or _delegate(k)
        for s, (oa, ob) in enumerate(zip(ra.outputs, rb.outputs)):
            diff = outputs_difference(oa, ob)
            if diff:
                details.append(f"delegate{k} input set {s}: {diff}")
                where = where or _delegate(k)
    return _diverged("reference", where, details) if details else CheckResult("reference", True)


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


def first_divergence(a: LoweringResult, results: dict[str, CheckResult]) -> Divergence | None:
    """The earliest point at which any failed check saw the lowerings part: the first pass step
    (in the order `a`'s passes ran), else, after every pass, the first failed check's point."""
    found = [r.first_divergence for r in results.values() if not r.passed and r.first_divergence]
    if not found:
        return None
    after_every_pass = len(a.observation.steps)
    return min(found, key=lambda where: where.step.seq if where.step is not None else after_every_pass)
