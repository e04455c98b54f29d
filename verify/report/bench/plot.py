"""The picture: where the time goes per pass, stock vs fastpass, and the ablation (one per case)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from verify.report.bench.results import AblationRow, CaseResult, METRICS, PassTiming
from verify.lowering.mode import Mode

_LOWER, _PIPELINE = (next(m for m in METRICS if m.key == key) for key in ("lower_seconds", "pass_pipeline_seconds"))
# lower() part by part: the pipeline, then the rows outside it (`outside_pipeline_seconds` is their sum)
_SPLIT = [m for m in METRICS if m.key == "pass_pipeline_seconds" or m.label.startswith("  ")]


def _per_pass_seconds(per_pass: tuple[PassTiming, ...], phase: str = "delegate0") -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for step in per_pass:
        if step.phase == phase:
            totals[f"{step.pass_name} [{step.index}]"] += step.seconds
    return totals


def plot_paths(path: Path, cases: tuple[CaseResult, ...]) -> list[Path]:
    """`path` for one case; `<stem>-<model>-<target><suffix>` per case for several."""
    if len(cases) == 1:
        return [path]
    safe = lambda s: "".join(c if c.isalnum() or c in "-_" else "_" for c in s)  # noqa: E731
    return [path.with_name(f"{path.stem}-{safe(c.model)}-{c.target}{path.suffix}") for c in cases]


def write_plots(path: Path, cases: tuple[CaseResult, ...], ablation: tuple[AblationRow, ...]) -> list[Path]:
    """One PNG per case that has a pair to show (a case whose first lowering failed has none)."""
    paths = plot_paths(path, cases)
    cases, paths = [c for c in cases if c.pairs], [p for c, p in zip(cases, paths) if c.pairs]
    for case, case_path in zip(cases, paths):
        write_plot(case, [r for r in ablation if (r.model, r.target) == (case.model, case.target)], case_path)
    return paths


def write_plot(case: CaseResult, ablation: list[AblationRow], path: Path, top: int = 40) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    last = case.pairs[-1]
    stock = _per_pass_seconds(last.stock.per_pass)
    fast = _per_pass_seconds(last.fastpass.per_pass)
    names = sorted(stock, key=stock.get, reverse=True)[:top]
    lower, pipeline = case.summary(_LOWER).ratio.median, case.summary(_PIPELINE).ratio.median
    fig, axes = plt.subplots(2, 2 if ablation else 1, figsize=(16 if ablation else 11, 13), squeeze=False,
                             gridspec_kw={"height_ratios": [4, 1]})
    _plot_split(axes[1][0], case)
    for extra in axes[1][1:]:
        extra.axis("off")
    ax = axes[0][0]
    y = range(len(names))
    ax.barh([i + 0.2 for i in y], [stock[n] for n in names], height=0.4, label=Mode.STOCK.value)
    ax.barh([i - 0.2 for i in y], [fast.get(n, 0.0) for n in names], height=0.4, label=Mode.FASTPASS.value)
    ax.set_yticks(list(y), names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("seconds (delegate 0, last pair)")
    ax.set_title(f"{case.model} on {case.target}: top {len(names)} passes by stock time\n"
                 f"lower() {lower or 0:.2f}x, pass pipeline {pipeline or 0:.2f}x "
                 f"(medians over {len(case.pairs)} pairs), "
                 f"identical: {'yes' if case.identical else 'NO'}", fontsize=9)
    ax.legend()
    if ablation:
        ax2 = axes[0][1]
        ax2.barh([r.config for r in ablation], [r.ratio_pipeline for r in ablation], label="pass pipeline")
        ax2.barh([r.config for r in ablation], [r.ratio_lower for r in ablation], height=0.4, label="lower()")
        ax2.axvline(1.0, color="gray", linewidth=0.8)
        ax2.set_xlabel("speed-up stock/fastpass")
        ax2.set_title("ablation (one round)", fontsize=9)
        ax2.invert_yaxis()
        ax2.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_split(ax, case: CaseResult) -> None:
    """Where lower() goes: one stacked bar per mode, the medians of the pipeline and of each part."""
    from matplotlib import colormaps

    colors = colormaps["tab20"]
    left = {Mode.STOCK: 0.0, Mode.FASTPASS: 0.0}
    for index, metric in enumerate(_SPLIT):
        summary = case.summary(metric)
        widths = {Mode.STOCK: summary.stock.median or 0.0, Mode.FASTPASS: summary.fastpass.median or 0.0}
        if not any(widths.values()):
            continue
        modes = list(widths)
        ax.barh([m.value for m in modes], [widths[m] for m in modes], left=[left[m] for m in modes],
                label=metric.label.strip().removesuffix(" s"), color=colors(index % 20))
        for m in modes:
            left[m] += widths[m]
    ax.invert_yaxis()
    ax.set_xlabel("seconds (medians over the pairs): lower() part by part")
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.3))
