"""`python -m verify bench` end to end on a tiny model: the table, JSON and PNG it promises,
and a failed run when fastpass output is not identical. No timing is asserted here (the
figures' arithmetic is tested on synthetic runs in test_bench_results.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def bench(tmp_path, model, *extra):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "verify", "bench", "--model", model, "--target", "tosa-int",
                           "--pairs", "1", "--json", str(tmp_path / "bench.json"), "--work-dir",
                           str(tmp_path / "work"), *extra], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)


@pytest.mark.slow
def test_bench_reports_ratios_memory_nodes_identity_and_plot(tmp_path):
    proc = bench(tmp_path, "tests/models/tiny.py:make", "--plot", str(tmp_path / "bench.png"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((tmp_path / "bench.json").read_text())
    assert result["identical"] is True
    (case,) = result["cases"]
    assert (case["model"], case["target"], case["pairs_identical"]) == ("tests/models/tiny.py:make", "tosa-int", 1)
    summary = case["summary"]
    for key in ("lower_seconds", "pass_pipeline_seconds"):
        assert summary[key]["ratio"]["median"] > 0
    assert summary["passes_skipped"]["fastpass"]["median"] > 0, "fastpass skipped nothing"
    assert summary["nodes_copied"]["fastpass"]["median"] > 0, "fastpass copied nothing"
    assert summary["nodes_copied"]["stock"]["median"] is None
    for mode in ("stock", "fastpass"):
        run = case["pair_runs"][0][mode]
        memory = run["memory"]
        assert memory["rss_before_bytes"] > 50 * 2**20 and memory["peak_rss_bytes"] >= memory["rss_before_bytes"]
        assert memory["peak_scope"] == "lowering"
        assert 0 < run["pass_pipeline_seconds"] < run["lower_seconds"]
        assert summary["outside_pipeline_seconds"][mode]["median"] == pytest.approx(
            run["lower_seconds"] - run["pass_pipeline_seconds"])
    table = proc.stdout
    for label in ("lower() s", "outside the pipeline s", "peak RSS MiB", "RSS increase MiB", "ms per copied node"):
        assert label in table
    assert "yes: 1 of 1 pairs" in table
    assert (tmp_path / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_bench_fails_when_fast_output_differs(tmp_path):
    proc = bench(tmp_path, "tests/models/faulty.py:changed_under_fastpass")
    assert proc.returncode == 1
    result = json.loads((tmp_path / "bench.json").read_text())
    assert result["identical"] is False
    assert result["cases"][0]["pair_runs"][0]["problems"], "no difference named"
    assert "NOT IDENTICAL" in proc.stderr and "NO: 0 of 1 pairs" in proc.stdout
