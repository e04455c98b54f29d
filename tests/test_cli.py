"""`python -m verify` end to end: the command-line contract, the JSON report, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_verify(*args: str, tmp_path: Path) -> tuple[int, dict, str]:
    report = tmp_path / "report.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "verify", "run", "--out", str(tmp_path / "out"),
                           "--json", str(report), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    return proc.returncode, json.loads(report.read_text()) if report.exists() else {}, proc.stdout + proc.stderr


def test_user_model_stock_vs_stock_is_identical(tmp_path):
    code, report, out = run_verify("--models", "none", "--model", "tests/models/tiny.py:make",
                                   "--targets", "tosa-int", "--second-mode", "stock",
                                   "--junit", str(tmp_path / "junit.xml"), tmp_path=tmp_path)
    assert code == 0, out
    (case,) = report["cases"]
    assert case["verdict"] == "identical"
    assert case["first_divergent_pass"] is None
    assert set(case["checks"]) == {"outcome", "passes", "graph", "val", "meta", "payload", "tosa", "program", "constants",
                                  "reference"}
    assert all(case["checks"].values())
    assert case["null_check"]["seeds"] == [0, 1]
    assert "identical" in out and "stock vs stock" in out
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    assert suite.get("tests") == "1" and suite.get("failures") == "0"


def test_a_case_says_which_annotations_its_fastpass_lowering_rested_on(tmp_path):
    """Every case names the annotations fastpass skipped or copied by, with their proof-ledger
    status: under the default trust every one is `sound` (and there are some: the tiny model's
    lowering copies nodes in proven passes)."""
    code, report, out = run_verify("--models", "none", "--model", "tests/models/tiny.py:make",
                                   "--targets", "tosa-int", "--null-seed", "-1", "--reference-sets", "0",
                                   tmp_path=tmp_path)
    assert code == 0, out
    (case,) = report["cases"]
    assert case["relied_on"] and set(case["relied_on"].values()) == {"sound"}, case["relied_on"]
    assert case["relied_on"] == case["fastpass_stats"]["relied_on"]
    assert f"{len(case['relied_on'])} sound" in out  # the table's column


def test_divergence_is_reported_at_its_pass_with_exit_1(tmp_path):
    code, report, out = run_verify("--models", "none", "--model", "tests/models/faulty.py:renamed_in_second_lowering",
                                   "--targets", "tosa-int", "--second-mode", "stock", "--null-seed", "-1",
                                   tmp_path=tmp_path)
    assert code == 1
    (case,) = report["cases"]
    assert case["verdict"] == "divergent", out
    assert "DecomposeLinearPass" in case["first_divergent_pass"]
    assert case["checks"]["graph"] is False
    assert "identical up to names: yes" in case["check_details"]["graph"]["details"]
    assert Path(case["artifacts"], "pinned.fastpass.pkl").exists(), "a divergent case keeps its snapshots"


def test_unstable_stock_is_nondeterministic_not_divergent(tmp_path):
    code, report, _ = run_verify("--models", "none", "--model", "tests/models/faulty.py:renamed_at_random",
                                 "--targets", "tosa-int", "--second-mode", "stock", "--null-seed", "-1",
                                 tmp_path=tmp_path)
    assert code == 1
    assert report["cases"][0]["verdict"] == "nondeterministic"


def test_bad_input_is_recorded_and_the_run_goes_on(tmp_path):
    """A model that fails in its worker is a case error; the run goes on. (A model or target that
    is wrong on its face is bad usage, refused before any work: tests/test_reliability.py.)"""
    code, report, out = run_verify(
        "--models", "none", "--model", "tests/models/tiny.py:broken", "--model", "tests/models/tiny.py:make",
        "--targets", "tosa-int", "--second-mode", "stock", "--null-seed", "-1", "--reference-sets", "1",
        tmp_path=tmp_path)
    assert code == 1
    verdicts = {(c["model"], c["target"]): (c["verdict"], c["error"]) for c in report["cases"]}
    assert len(verdicts) == 2
    assert verdicts[("tests/models/tiny.py:make", "tosa-int")][0] == "identical"
    broken = verdicts[("tests/models/tiny.py:broken", "tosa-int")]
    assert broken[0] == "error" and "broken on purpose" in broken[1]


def test_a_hanging_case_times_out(tmp_path):
    code, report, _ = run_verify("--models", "none", "--model", "tests/models/faulty.py:sleeps",
                                 "--targets", "tosa-int", "--null-seed", "-1", "--timeout", "20",
                                 tmp_path=tmp_path)
    assert code == 1
    case = report["cases"][0]
    assert case["verdict"] == "error" and "timed out" in case["error"]


def test_unknown_feature_is_a_usage_error(tmp_path):
    pytest.importorskip("fastpass")
    code, _, out = run_verify("--models", "none", "--model", "tests/models/tiny.py:make",
                              "--features", "skip,warp", tmp_path=tmp_path)
    assert code == 2 and "unknown fastpass feature" in out


def test_random_graphs_are_verified_alongside_models(tmp_path):
    code, report, out = run_verify("--models", "none", "--random", "1", "--seed", "3", "--targets", "tosa-int",
                                   "--null-seed", "-1", "--reference-sets", "1", "--calibration", "minmax",
                                   tmp_path=tmp_path)
    (case,) = report["cases"]
    assert case["model"].startswith("graphspec:") and Path(case["model"][len("graphspec:"):]).exists()
    assert case["verdict"] == "identical", out
    assert code == 0
    assert report["run"]["calibration"] == "minmax"
    (job,) = (tmp_path / "out").glob("*/pinned.job.json")
    assert json.loads(job.read_text())["settings"]["calibration"] == "minmax"  # what the worker quantizes with


def test_unknown_calibration_is_a_usage_error(tmp_path):
    code, _, out = run_verify("--models", "none", "--model", "tests/models/tiny.py:make",
                              "--calibration", "kmeans", tmp_path=tmp_path)
    assert code == 2 and "invalid choice: 'kmeans'" in out


def test_stock_that_depends_on_node_set_order_is_nondeterministic_with_the_evidence(tmp_path, monkeypatch):
    """run's recheck lowers stock under two opposite node orders (verify.lowering.node_order): a
    fastpass difference that stock shows too, there, is not called divergent."""
    monkeypatch.setenv("FAULTY_TAG_IN_NODE_SET_ORDER", "1")
    code, report, out = run_verify("--models", "none", "--model", "tests/models/faulty.py:tagged_in_node_set_order",
                                   "--targets", "tosa-int", "--null-seed", "-1", "--reference-sets", "1",
                                   tmp_path=tmp_path)
    assert code == 1
    (case,) = report["cases"]
    assert case["verdict"] == "nondeterministic", out
    recheck = case["order_recheck"]
    assert recheck["differing_checks"] == ["meta"] and recheck["error"] is None
    assert recheck["first_divergence"]["pass"] == "DecomposeLinearPass"
    assert recheck["reproduces_fastpass"] == "descending"  # fastpass's reversed graph order
