"""How a verdict reads in a report: `relied_on_summary`, the count by proof status of the
annotations a fastpass lowering relied on. The vocabulary itself (`Verdict`, `NullOutcome`,
`Feature`, `AnnotationFit`) lives below compare/ and report/, in verify/vocabulary.py; an
annotated pass's standing is `fastpass.annotations.ProofStatus`. It imports nothing of fastpass:
the pytest plugin reads it, and the plugin keeps fastpass unimported unless asked."""

from __future__ import annotations


def relied_on_summary(relied_on: dict[str, str] | None) -> str:
    """`12 sound` / `3: 2 sound, 1 unproven`: how many annotations a fastpass lowering skipped or
    copied by (`fastpass.stats()["relied_on"]`: annotation -> proof-ledger status), by status;
    `-` when there is nothing to say (no fastpass lowering)."""
    if relied_on is None:
        return "-"
    if not relied_on:
        return "none"
    counts: dict[str, int] = {}
    for status in relied_on.values():
        counts[status] = counts.get(status, 0) + 1
    by_status = ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=lambda item: -item[1]))
    return by_status if len(counts) == 1 else f"{len(relied_on)}: {by_status}"
