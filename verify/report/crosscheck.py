"""Crosscheck's report, written once: the totals over a session's records (their JSON form, as
they arrive from pytest-xdist workers or a `verify crosscheck` script run) and the summary lines the
pytest plugin's terminal summary and `python -m verify crosscheck` print."""

from __future__ import annotations

from collections import Counter
from typing import Any

from verify.vocabulary import Verdict
from verify.report.verdict import relied_on_summary


def totals(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Sums over crosscheck records (their JSON form, as they arrive from workers)."""
    verdicts = Counter(Verdict(r["verdict"]) for r in records)
    work: Counter[str] = Counter()
    for r in records:
        work.update(r["fastpass_work"])
    return {
        "crosschecked": len(records),
        "identical": verdicts[Verdict.IDENTICAL],
        "divergent": verdicts[Verdict.DIVERGENT],
        "unchecked": verdicts[Verdict.UNCHECKED],
        "nondeterministic": verdicts[Verdict.NONDETERMINISTIC],
        "by_entry_point": dict(Counter(r["entry_point"] for r in records)),
        "stock_seconds": sum(r["stock_seconds"] for r in records),
        "fastpass_seconds": sum(r["fastpass_seconds"] for r in records),
        "fastpass_work": {k: work[k] for k in ("passes_run", "passes_skipped", "nodes_copied", "nodes_dispatched")},
        "calls_with_fastpass_work": sum(1 for r in records
                                        if r["fastpass_work"]["passes_skipped"] or r["fastpass_work"]["nodes_copied"]),
        # every annotation any fastpass run skipped or copied by, with its proof-ledger status
        "relied_on": dict(sorted({name: status for r in records
                                  for name, status in (r.get("relied_on") or {}).items()}.items())),
        "divergent_reproduced_in_fresh_process": sum(
            1 for r in records if Verdict(r["verdict"]) is Verdict.DIVERGENT
            and ((r.get("fresh_recheck") or {}).get("reproduced") is True)),
        "divergences": [{"test": r["context"], "entry_point": r["entry_point"],
                         "first_divergence": r["first_divergence"], "failed_checks": list(r["failed_checks"]),
                         "reproducer": r["reproducer"]} for r in records if Verdict(r["verdict"]) is Verdict.DIVERGENT],
        "nondeterministic_calls": [{"test": r["context"], "entry_point": r["entry_point"],
                                    "order_recheck": r.get("order_recheck"), "failed_checks": list(r["failed_checks"]),
                                    "reproducer": r["reproducer"]}
                                   for r in records if Verdict(r["verdict"]) is Verdict.NONDETERMINISTIC],
    }


def summary_lines(records: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """The summary, one (line, colour) a line: colour "red" for a divergence, "yellow" for a call
    not counted identical, None otherwise."""
    counts = totals(records)
    work = counts["fastpass_work"]
    lines: list[tuple[str, str | None]] = [
        (f"lowerings crosschecked: {counts['crosschecked']}  identical: {counts['identical']}  "
         f"divergent: {counts['divergent']}  unchecked: {counts['unchecked']}  "
         f"stock nondeterministic: {counts['nondeterministic']}", None),
        ("by entry point: " + ", ".join(f"{k} {v}" for k, v in sorted(counts["by_entry_point"].items())), None),
        (f"time stock {counts['stock_seconds']:.1f} s, fastpass {counts['fastpass_seconds']:.1f} s "
         f"(summed over lowerings)", None),
        (f"what fastpass did: {work['passes_skipped']} passes skipped of "
         f"{work['passes_run'] + work['passes_skipped']}, {work['nodes_copied']} nodes copied of "
         f"{work['nodes_copied'] + work['nodes_dispatched']}; calls with skip or copy at work: "
         f"{counts['calls_with_fastpass_work']}", None),
        (f"relied on {len(counts['relied_on'])} annotations: {relied_on_summary(counts['relied_on'])} "
         f"(proof ledger: fastpass/annotations/proofs.json)", None),
    ]
    if counts["divergent"]:
        reproduced = counts["divergent_reproduced_in_fresh_process"]
        lines.append((f"divergent calls reproduced in a fresh process: {reproduced} of {counts['divergent']} "
                      "(the others depend on what ran before them)", None))
    for record in records:
        verdict = Verdict(record["verdict"])
        if verdict is Verdict.DIVERGENT:
            where = (record["first_divergence"] or {}).get("label", "?")
            repro = (record["reproducer"] or {})
            lines.append((f"DIVERGENT {record['context']}: {record['entry_point']} at {where}; "
                          f"checks {', '.join(record['failed_checks'])}; replay: "
                          f"{repro.get('command') or repro.get('limitation')}", "red"))
        elif verdict is Verdict.UNCHECKED:
            lines.append((f"unchecked {record['context']}: {record['unchecked_reason']}", "yellow"))
        elif verdict is Verdict.NONDETERMINISTIC:
            from verify.compare.divergence import OrderRecheck  # here: it imports torch

            recheck = OrderRecheck.from_json(record["order_recheck"])
            lines.append((f"stock nondeterministic {record['context']}: {record['entry_point']}: "
                          f"{recheck.describe() if recheck else '?'}; not counted identical; "
                          f"input saved: {(record['reproducer'] or {}).get('command')}", "yellow"))
    return lines
