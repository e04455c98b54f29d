"""verify peer's report: the test-by-test comparison of executorch's own suites run in several
modes (stock, fastpass, crosscheck), as text and its exit status.

Built from the modes' results (verify.peer.campaign.ModeRun values, read through `ModeResult`: the report
package imports nothing above it).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Protocol, Sequence

from verify.lowering.mode import Mode
from verify.vocabulary import Verdict

OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")


class ModeResult(Protocol):
    """What the report reads of one mode's run (verify.peer.campaign.ModeRun)."""

    mode: str
    report: dict[str, Any]
    seconds: float
    error: str | None

    @property
    def outcomes(self) -> dict[str, str]: ...


@dataclass(frozen=True)
class PeerSummary:
    """The summary's text (printed by the command) and the exit status it calls for."""

    text: str
    exit: int


def mismatches(runs: Sequence[ModeResult]) -> list[tuple[str, dict[str, str]]]:
    """Tests whose outcome is not the same in every mode (missing in a mode: 'not run')."""
    tests = sorted(set().union(*(r.outcomes for r in runs)))
    found = []
    for test in tests:
        per_mode = {r.mode: r.outcomes.get(test, "not run") for r in runs}
        if len(set(per_mode.values())) > 1:
            found.append((test, per_mode))
    return found


def summary(runs: Sequence[ModeResult], stopped_by: str | None = None, unfinished: Sequence[str] = (),
            not_runnable: Mapping[str, str] | None = None) -> PeerSummary:
    """The comparison of `runs`; exit 1 on any mismatch, divergence, unchecked lowering, failed
    mode or lost xdist worker, else 0. Stopped by a signal, it compares the modes that finished
    and says which did not (the caller exits 130/143). `not_runnable`: the files the collection
    probe left out of every mode, with why (listed; they do not fail the run)."""
    lines: list[str] = []
    say = lines.append  # every line of the summary, in order
    if not_runnable:
        say(f"\nnot run in any mode: {len(not_runnable)} test files that do not collect here")
        for path, reason in not_runnable.items():
            say(f"  {path}: {reason}")
    if not runs:
        say(f"\npeer: stopped by {stopped_by} before any mode finished" if stopped_by
              else "\npeer: no mode ran")
        return PeerSummary("\n".join(lines), 1)
    say("\noutcomes per mode:")
    say(f"  {'':12}" + "".join(f"{o:>9}" for o in OUTCOMES) + f"{'total':>9}{'seconds':>9}")
    for run in runs:
        counts = Counter(run.outcomes.values())
        say(f"  {run.mode:12}" + "".join(f"{counts.get(o, 0):>9}" for o in OUTCOMES)
              + f"{len(run.outcomes):>9}{run.seconds:>9.0f}")
    failed = False
    for run in runs:
        if run.error is not None:
            failed = True
            say(f"  FAILED {run.mode}: {run.error}")
        for lost in run.report.get("lost_workers", []):
            failed = True
            say(f"  LOST WORKER {run.mode}: xdist worker {lost['worker']} went down ({lost['error']}); "
                  f"the tests it was running have no outcome")
    diff = mismatches(runs)
    say(f"\ntests with the same outcome in every mode: {len(set().union(*(r.outcomes for r in runs))) - len(diff)}; "
          f"mismatches: {len(diff)}")
    for test, per_mode in diff:
        failed = True
        say(f"  MISMATCH {test}: " + ", ".join(f"{m} {o}" for m, o in per_mode.items()))
    stock = next((r for r in runs if r.mode == Mode.STOCK), runs[0])
    if stock.report["skip_reasons"]:
        say(f"\nskipped by the suite's own markers ({stock.mode}), by reason:")
        for reason, count in stock.report["skip_reasons"].items():
            say(f"  {count:5}  {reason}")
    check = next((r for r in runs if r.mode == "crosscheck" and r.error is None), None)
    if check is not None:
        totals = check.report["crosscheck"]
        work = totals["fastpass_work"]
        say(f"\ncrosscheck: {totals['crosschecked']} lowerings crosschecked "
              f"({', '.join(f'{k} {v}' for k, v in sorted(totals['by_entry_point'].items()))}): "
              f"{totals['identical']} identical, {totals['divergent']} divergent, {totals['unchecked']} unchecked")
        say(f"  lowering time summed: stock {totals['stock_seconds']:.1f} s, fastpass {totals['fastpass_seconds']:.1f} s")
        say(f"  what fastpass did: {work['passes_skipped']} of {work['passes_run'] + work['passes_skipped']} pass "
              f"invocations skipped, {work['nodes_copied']} of {work['nodes_copied'] + work['nodes_dispatched']} "
              f"nodes copied; {totals['calls_with_fastpass_work']} calls with skip or copy at work")
        for d in totals["divergences"]:
            where = (d["first_divergence"] or {}).get("label", "?")
            repro = d["reproducer"] or {}
            say(f"  DIVERGENT {d['test']}: {d['entry_point']} at {where} "
                  f"(checks {', '.join(d['failed_checks'])}); replay: {repro.get('command') or repro.get('limitation')}")
        for record in check.report["records"]:
            if Verdict(record["verdict"]) is Verdict.UNCHECKED:
                say(f"  UNCHECKED {record['context']}: {record['unchecked_reason']}")
        nondeterministic = totals.get("nondeterministic_calls", [])
        for n in nondeterministic:
            from verify.compare.divergence import OrderRecheck  # here: it imports torch

            recheck = OrderRecheck.from_json(n["order_recheck"])
            say(f"  STOCK NONDETERMINISTIC {n['test']}: {n['entry_point']} (checks {', '.join(n['failed_checks'])}): "
                  f"{recheck.describe() if recheck else '?'}; input: {(n['reproducer'] or {}).get('path')}")
        failed = failed or bool(totals["divergent"] or totals["unchecked"])
    if check is not None and not failed and nondeterministic:
        verdict_line = (f", every crosschecked lowering identical except {len(nondeterministic)} that stock "
                        f"itself does not lower deterministically (not comparable; an executorch finding, above)")
    else:
        verdict_line = ", every crosschecked lowering identical" if check else ""
    if stopped_by is not None:
        say(f"\npeer: STOPPED by {stopped_by}: compared the modes that finished ({', '.join(r.mode for r in runs)}); "
              f"not finished: {', '.join(unfinished) or 'none'}" + ("; FAILED (see above)" if failed else ""))
        return PeerSummary("\n".join(lines), 1)
    left_out = f" ({len(not_runnable)} test files not runnable here, listed above)" if not_runnable else ""
    say("\npeer: " + ("FAILED (see above)" if failed else "every test has the same outcome in every mode"
                        + verdict_line + left_out))
    return PeerSummary("\n".join(lines), 1 if failed else 0)
