"""The picture: where the time goes per pass, stock vs fastpass, and the ablation."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from verify.lowering.mode import Mode


def _per_pass_seconds(per_pass: list[dict], phase: str = "delegate0") -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for step in per_pass:
        if step["phase"] == phase:
            totals[f"{step['pass']} [{step['index']}]"] += step["seconds"]
    return totals


def write_plot(result: dict, path: Path, top: int = 40) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stock = _per_pass_seconds(result["per_pass_last_pair"][Mode.STOCK])
    fast = _per_pass_seconds(result["per_pass_last_pair"][Mode.FASTPASS])
    names = sorted(stock, key=stock.get, reverse=True)[:top]
    ablation = result.get("ablation", [])
    fig, axes = plt.subplots(1, 2 if ablation else 1, figsize=(16 if ablation else 11, 10), squeeze=False)
    ax = axes[0][0]
    y = range(len(names))
    ax.barh([i + 0.2 for i in y], [stock[n] for n in names], height=0.4, label=Mode.STOCK.value)
    ax.barh([i - 0.2 for i in y], [fast.get(n, 0.0) for n in names], height=0.4, label=Mode.FASTPASS.value)
    ax.set_yticks(list(y), names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("seconds (delegate 0, last pair)")
    ax.set_title(f"{result['model']} on {result['target']}: top {len(names)} passes by stock time\n"
                 f"lower() {result['ratio_lower_median']:.2f}x, pass pipeline {result['ratio_passes_median']:.2f}x, "
                 f"identical: {'yes' if result['identical'] else 'NO'}", fontsize=9)
    ax.legend()
    if ablation:
        ax2 = axes[0][1]
        ax2.barh([r["config"] for r in ablation], [r["ratio_passes"] for r in ablation], label="pass pipeline")
        ax2.barh([r["config"] for r in ablation], [r["ratio_lower"] for r in ablation], height=0.4,
                 label="lower()")
        ax2.axvline(1.0, color="gray", linewidth=0.8)
        ax2.set_xlabel("speed-up stock/fastpass")
        ax2.set_title("ablation (one round)", fontsize=9)
        ax2.invert_yaxis()
        ax2.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
