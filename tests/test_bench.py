"""`python -m verify bench` end to end on a tiny model: the table, JSON and PNG it promises,
and a failed run when fastpass output is not identical. No timing is asserted here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bench(tmp_path, model, *extra):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "verify", "bench", "--model", model, "--target", "tosa-int",
                           "--pairs", "1", "--json", str(tmp_path / "bench.json"), "--work-dir",
                           str(tmp_path / "work"), *extra], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)


def test_bench_reports_ratios_identity_and_plot(tmp_path):
    proc = bench(tmp_path, "tests/models/tiny.py:make", "--plot", str(tmp_path / "bench.png"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((tmp_path / "bench.json").read_text())
    assert result["identical"] is True
    for key in ("ratio_lower_median", "ratio_passes_median"):
        assert result[key] > 0
    assert result["fastpass"]["passes_skipped"]["median"] > 0, "fastpass skipped nothing"
    assert "lower() ratio stock/fastpass" in proc.stdout
    assert (tmp_path / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_fails_when_fast_output_differs(tmp_path):
    proc = bench(tmp_path, "tests/models/faulty.py:changed_under_fastpass")
    assert proc.returncode == 1
    result = json.loads((tmp_path / "bench.json").read_text())
    assert result["identical"] is False
    assert "NOT IDENTICAL" in proc.stderr
