"""Four rules of the harness's verdict that passed every test until a hand sample broke them
(issue 44), each with a check on synthetic values (no model lowered: milliseconds) that fails
when the rule is broken:

- reference: every reference input set counts, not only the first (the other tests run with
  `--reference-sets 0` or `1`);
- reference: a different number of delegates with reference runs is a difference;
- program: two lowerings whose `to_executorch()` failed with *different* errors did not fail
  "the same way";
- ledger: a proof made for another executorch or torch version is stale, even when fastpass's
  machinery digest matches (shielded elsewhere only while the version check refuses untested
  versions).

The faults are kept in tests/faults.py (`HARNESS_FAULTS`); `test_each_rule_test_kills_its_fault`
plants each one and requires its check to fail, so the suite itself shows that every check here
kills its fault. The mutation campaign (tests/mutation/) looks for the rules no one sampled.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests import faults
from verify.compare import compare
from verify.lowering.lower import LoweringResult
from verify.lowering.mode import Mode
from verify.lowering.reference import ReferenceRun


def lowering(mode=Mode.STOCK, **fields) -> LoweringResult:
    """A finished lowering with nothing in it but `fields`: every check passes on two of them."""
    return LoweringResult(mode, (), "0", **fields)


def outputs(*values) -> list[np.ndarray]:
    """One input set's outputs: one int8 tensor per value."""
    return [np.array([v, v + 1], dtype=np.int8) for v in values]


def failing(checks) -> list[str]:
    return sorted(name for name, result in checks.items() if not result.passed)


# ------------------------------------------------------------- reference: every input set counts


def check_reference_compares_every_input_set():
    same = [outputs(1), outputs(2), outputs(3)]
    stock = lowering(reference=[ReferenceRun(same)])
    assert failing(compare(stock, lowering(Mode.FASTPASS, reference=[ReferenceRun(list(same))]))) == []
    for s in (1, 2):
        changed = list(same)
        changed[s] = outputs(9)
        checks = compare(stock, lowering(Mode.FASTPASS, reference=[ReferenceRun(changed)]))
        assert failing(checks) == ["reference"], s
        assert checks["reference"].details == [f"delegate0 input set {s}: output 0: 2 elements differ, first at (0,)"]
        assert checks["reference"].first_divergence.delegate == 0


def test_a_difference_in_a_later_reference_input_set_is_a_difference():
    check_reference_compares_every_input_set()


# ------------------------------------------------------- reference: the number of delegates counts


def check_reference_counts_delegates():
    run = ReferenceRun([outputs(1)])
    stock = lowering(reference=[run])
    more = lowering(Mode.FASTPASS, reference=[run, ReferenceRun([outputs(2)])])
    for a, b, counts in ((stock, more, "1 vs 2"), (more, stock, "2 vs 1"), (stock, lowering(), "1 vs 0")):
        checks = compare(a, b)
        assert failing(checks) == ["reference"], counts
        assert checks["reference"].details == [f"reference runs for {counts} delegates"]
        assert checks["reference"].first_divergence.label == "delegate count"


def test_reference_runs_for_a_different_number_of_delegates_are_a_difference():
    check_reference_counts_delegates()


# ------------------------------------------------- program: failing differently is not "the same way"


def check_program_errors_must_match():
    def failed(mode, error):
        return lowering(mode, program=None, program_error=error)

    alike = compare(failed(Mode.STOCK, "RuntimeError: a"), failed(Mode.FASTPASS, "RuntimeError: a"))
    assert failing(alike) == []
    assert alike["program"].details == ["not serialized in either mode, the same way: RuntimeError: a"]
    checks = compare(failed(Mode.STOCK, "RuntimeError: a"), failed(Mode.FASTPASS, "MemoryError: b"))
    assert failing(checks) == ["program"]
    assert checks["program"].details == ["to_executorch() succeeded or failed differently",
                                         "stock: RuntimeError: a", "fastpass: MemoryError: b"]
    assert checks["program"].first_divergence.label == "serialized program"


def test_serialization_failing_differently_in_each_mode_is_a_divergence():
    check_program_errors_must_match()


# ------------------------------------------------------ ledger: a proof holds for its versions only


class ToyPass:
    """A pass class of this test's own: its annotation is whatever `overridden` says."""


def check_ledger_proof_holds_for_its_versions_only():
    import dataclasses

    from fastpass.annotations import Entry, _model, _proofs, overridden

    now = _proofs.ProvenAgainst.now()
    entry = Entry(frozenset({"aten.toy.default"}), skip_sound=True, copy_sound=False, why="test")
    annotation = _model.Annotation(entry.targeted_ops(), True, False, "test")
    claim = _proofs.LedgerEntry(_proofs.ProofStatus.SOUND, _proofs.claim_digest(annotation))
    name = _model.qualname(ToyPass)
    current = _proofs.Ledger(now, {name: claim})
    assert current.status(name, annotation, now) is _proofs.ProofStatus.SOUND
    assert current.status(name, annotation) is _proofs.ProofStatus.SOUND  # `now` by default: this process's
    for other in (dataclasses.replace(now, executorch=now.executorch + ".other"),
                  dataclasses.replace(now, torch=now.torch + ".other")):
        assert other.machinery == now.machinery
        book = _proofs.Ledger(other, {name: claim})
        assert book.status(name, annotation, now) is _proofs.ProofStatus.STALE, other
        assert book.status(name, annotation) is _proofs.ProofStatus.STALE, other
        # ... and what fastpass consults while enabled (status_of, through the loaded ledger)
        saved, cached = _proofs._LEDGER, dict(_proofs._STATUS)
        _proofs._LEDGER = book
        _proofs._STATUS.clear()
        try:
            with overridden({ToyPass: entry}):
                assert _proofs.status_of(ToyPass) is _proofs.ProofStatus.STALE, other
        finally:
            _proofs._LEDGER = saved
            _proofs._STATUS.clear()
            _proofs._STATUS.update(cached)


def test_a_proof_for_another_executorch_or_torch_version_is_stale():
    check_ledger_proof_holds_for_its_versions_only()


# --------------------------------------------------------------- each check kills its fault

_CHECKS = {"reference_first_set_only": check_reference_compares_every_input_set,
           "reference_delegate_count_ignored": check_reference_counts_delegates,
           "program_errors_alike_if_both_failed": check_program_errors_must_match,
           "ledger_machinery_only": check_ledger_proof_holds_for_its_versions_only}


@pytest.mark.parametrize("fault", sorted(faults.HARNESS_FAULTS))
def test_each_rule_test_kills_its_fault(fault):
    """The fault planted (tests/faults.py), the rule's check fails; the fault removed, it passes."""
    assert set(_CHECKS) == set(faults.HARNESS_FAULTS)
    with faults.HARNESS_FAULTS[fault]():
        with pytest.raises(AssertionError):
            _CHECKS[fault]()
    _CHECKS[fault]()
