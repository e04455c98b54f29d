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


@pytest.fixture(scope="module")
def tiny_bench(tmp_path_factory):
    """One bench of the tiny model (one pair, tosa-int), shared by the tests that read it."""
    tmp_path = tmp_path_factory.mktemp("bench")
    return tmp_path, bench(tmp_path, "tests/models/tiny.py:make", "--plot", str(tmp_path / "bench.png"))


@pytest.mark.slow
def test_bench_reports_ratios_memory_nodes_identity_and_plot(tiny_bench):
    tmp_path, proc = tiny_bench
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


PARTS = ("decompositions", "to_edge", "partitioning", "pipeline_setup", "pass_managers", "tosa_serialization")
NAMED = ("pass_pipeline_seconds", "edge_pass_seconds", *(f"{p}_seconds" for p in PARTS), "mode_switch_seconds",
         "other_seconds")


@pytest.mark.slow
def test_bench_splits_the_lowering_into_parts_that_add_up(tiny_bench):
    """Every part outside the pipeline has its key in the summary, timed in both modes (a part
    whose timer is not installed fails the worker: tests/test_bench_parts.py), non-negative, and
    with the pipeline, the edge passes and `other` adds up to lower(); Vela is absent for a TOSA
    target (no ratio), not a zero; to_executorch() is timed after lower(); the floor is reported."""
    tmp_path, proc = tiny_bench
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (case,) = json.loads((tmp_path / "bench.json").read_text())["cases"]
    summary = case["summary"]
    for mode in ("stock", "fastpass"):
        median = {key: summary[key][mode]["median"] for key in (*NAMED, "lower_seconds", "to_executorch_seconds")}
        for part in PARTS:
            assert median[f"{part}_seconds"] > 0, f"{part} not timed in {mode}"
        assert all(median[key] >= 0 for key in NAMED), median
        assert sum(median[key] for key in NAMED) == pytest.approx(median["lower_seconds"], abs=1e-6)
        assert median["other_seconds"] < 0.5 * median["lower_seconds"]
        assert median["to_executorch_seconds"] > 0
        run = case["pair_runs"][0][mode]
        assert run["parts"]["vela"] is None and run["pte_digest"]
    assert summary["vela_seconds"] == {"key": "vela_seconds", **{side: {"median": None, "min": None, "max": None,
                                                                         "count": 0}
                                                                  for side in ("stock", "fastpass", "ratio")}}
    floor = case["floor"]
    assert floor["parts"] == ["partitioning", "tosa_serialization"]
    assert 0 < floor["fastpass_seconds"]["median"] < summary["lower_seconds"]["fastpass"]["median"]
    assert floor["ceiling_ratio"]["median"] > 1
    table = proc.stdout
    for label in ("  decompositions re-trace s", "  TOSA serialization s", "  Vela s", "  other s",
                  "to_executorch() s, after lower()", "floor tests/models/tiny.py:make on tosa-int: "):
        assert label in table


@pytest.mark.slow
def test_bench_fails_when_fast_output_differs(tmp_path):
    proc = bench(tmp_path, "tests/models/faulty.py:changed_under_fastpass")
    assert proc.returncode == 1
    result = json.loads((tmp_path / "bench.json").read_text())
    assert result["identical"] is False
    assert result["cases"][0]["pair_runs"][0]["problems"], "no difference named"
    assert "NOT IDENTICAL" in proc.stderr and "NO: 0 of 1 pairs" in proc.stdout
