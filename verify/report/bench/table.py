"""The bench's one table: every case (model × target), every figure, stock, fastpass and ratio."""

from __future__ import annotations

from verify.report.bench.results import METRICS, PART_LABELS, BenchResult, CaseResult, Floor, PeakScope, Spread
from verify.report.verdict import relied_on_summary

_HEADER = ("case", "figure", "stock", "fastpass", "stock/fastpass")


def _number(value: float) -> str:
    """Three significant digits, but whole numbers from 1000 up (counts, MiB) in full."""
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def format_spread(spread: Spread, scale: float = 1.0, suffix: str = "") -> str:
    """`median (min–max)` over the pairs; the median alone when all pairs agree; `-` for none."""
    if spread.median is None:
        return "-"
    scaled = spread.scaled(scale)
    text = _number(scaled.median) + suffix
    low, high = _number(scaled.min), _number(scaled.max)
    if spread.count > 1 and low != high:
        text += f" ({low}–{high})"
    return text


def _case_rows(case: CaseResult) -> list[tuple[str, str, str, str, str]]:
    rows = []
    for metric, summary in zip(METRICS, case.summaries()):
        rows.append(("", metric.label,
                     "-" if metric.fastpass_only else format_spread(summary.stock, metric.unit_scale),
                     format_spread(summary.fastpass, metric.unit_scale),
                     format_spread(summary.ratio, suffix="x")))
    identical = sum(p.identical for p in case.pairs)
    verdict = "yes" if case.identical else "NO"
    rows.append(("", "output identical", "", f"{verdict}: {identical} of {len(case.pairs)} pairs", ""))
    rows.append(("", "annotations relied on", "", relied_on_summary(case.relied_on), ""))
    if case.error is not None:
        rows.append(("", "lowering FAILED", "", case.error.splitlines()[0], ""))
    for pair in case.pairs:
        if not pair.identical:
            rows.append(("", f"  pair {pair.index + 1}", "", "NOT IDENTICAL: " + ", ".join(pair.problems), ""))
    rows[0] = (f"{case.model} on {case.target}", *rows[0][1:])
    return rows


def format_floor(case: CaseResult, floor: Floor) -> str:
    """One line: the floor of a case, what share of a fastpass lowering it is, and the ceiling it sets."""
    if floor.seconds.median is None:
        return f"floor {case.model} on {case.target}: no fastpass lowering finished"
    names = " + ".join(PART_LABELS[p] for p in floor.parts) or "none ran"
    line = (f"floor {case.model} on {case.target}: {format_spread(floor.seconds)} s ({names}: no fastpass patch "
            f"point acts in them; fastpass lowerings), {format_spread(floor.share, 100, ' %')} of fastpass lower()")
    if floor.ceiling.median is not None:
        line += f"; lower() at most {format_spread(floor.ceiling, suffix='x')} if all else took no time"
    return line


def format_table(result: BenchResult) -> str:
    blocks = [_case_rows(case) for case in result.cases]
    rows = [row for block in blocks for row in block]
    widths = [max(len(r[i]) for r in [_HEADER, *rows]) for i in range(len(_HEADER))]
    line = lambda r: "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip()  # noqa: E731
    lines = [f"verify bench: {result.pairs} interleaved pair(s) per case, PYTHONHASHSEED={result.hash_seed}, "
             f"fastpass features {','.join(result.features)}",
             *([f"load average (1 min) {result.load_at_start:.1f} at the start, {result.load_at_end:.1f} at the end, "
                f"{result.cpus} CPUs"] if result.load_at_start is not None else []),
             "figures: median (min–max) over the pairs; ratio stock/fastpass per pair (> 1: fastpass faster or "
             "smaller), then its median (min–max)"]
    process_wide = sum(run.memory.peak_scope is PeakScope.PROCESS for case in result.cases for pair in case.pairs
                       for run in (pair.stock, pair.fastpass))
    lines.append("peak RSS: the lowering's own (high-water mark reset just before lower())" if not process_wide else
                 f"peak RSS: the whole worker process's in {process_wide} run(s) (the kernel refused the reset), "
                 "so it may predate lower()")
    lines += ["", line(_HEADER), line(tuple("-" * w for w in widths))]
    for index, block in enumerate(blocks):
        if index:
            lines.append("")
        lines += [line(r) for r in block]
    lines += ["", "outside the pipeline, by part: exclusive times (a part's inner passes and parts taken out); the "
              "pipeline, the parts and other add up to lower(); -: the part did not run (Vela: Ethos-U targets only); "
              "to_executorch() runs after lower(), timed apart"]
    lines += [format_floor(case, case.floor) for case in result.cases if case.pairs]
    if result.ablation:
        lines += ["", "ablation: one fastpass lowering per configuration; ratios against the median of the case's "
                  f"{len(result.ablation[0].timing_stocks)} stock lowerings in this run "
                  "(the pairs' and the ablation's own)"]
    for row in result.ablation:
        lines.append(f"ablation {row.model} on {row.target}: {row.config:<36} lower() {row.ratio_lower:.2f}x  "
                     f"pass pipeline {row.ratio_pipeline:.2f}x  "
                     + ("identical" if row.identical else "NOT IDENTICAL: " + ", ".join(row.problems)))
    lines.append("")
    failed = [f"{c.model} on {c.target}" for c in result.cases if c.error is not None]
    if failed:
        lines.append(f"lowering failed (logs in the work dir): {', '.join(failed)}")
    if not result.complete:
        finished = sum(len(case.pairs) for case in result.cases)
        lines.append(f"INCOMPLETE: stopped by {result.stopped_by} after {finished} finished pair(s) of "
                     f"{result.pairs * len(result.cases)} (the figures above are theirs)")
    lines.append("every case lowered, output identical in every pair" + (" and every ablation run" if result.ablation
                                                                         else "")
                 + ": " + ("yes" if result.identical else "NO"))
    return "\n".join(lines)
