"""Fuzzing: random quantizable graphs through both modes, shrunk and saved when they differ.

The default test command runs these with the small derandomized `ci` profile (a smoke
run); `tox -e fuzz` runs them with the `fuzz` profile over all cores.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest
from hypothesis import Phase, settings

from verify.fuzz import fuzz

REPRO_DIR = Path(os.environ.get("FASTPASS_REPRO_DIR", "reproducers"))
FUZZING = os.environ.get("FASTPASS_PROFILE") == "fuzz"
# Graph size follows the profile: a smoke run in the default tests, 1-40 ops when fuzzing.
# A stock lowering costs ~0.3-0.5 s per op, so FASTPASS_FUZZ_MAX_OPS trades graph size for rate.
MAX_OPS = int(os.environ.get("FASTPASS_FUZZ_MAX_OPS", "40" if FUZZING else "8"))
TARGETS = os.environ.get("FASTPASS_FUZZ_TARGETS", "tosa-int,tosa-fp").split(",")
# One Hypothesis test runs in one xdist worker; shards let one target use every core. Shards
# draw different graphs only when the profile is not derandomized (`fuzz`), so the
# derandomized `ci` profile keeps one. All share one example database key: a saved failure
# replays first in every shard and target.
SHARDS = int(os.environ.get("FASTPASS_FUZZ_SHARDS", str(os.cpu_count() or 1) if FUZZING else "1"))
# FASTPASS_FUZZ_SEED=S makes a campaign repeatable, with a distinct seed per target and shard
# (pytest's --hypothesis-seed would give every shard the same graphs).
SEED = os.environ.get("FASTPASS_FUZZ_SEED")


@pytest.mark.fuzz
@pytest.mark.parametrize("shard", range(SHARDS), ids=lambda k: f"shard{k}")
@pytest.mark.parametrize("target", TARGETS)
def test_random_graphs_lower_identically(target, shard):
    fuzz(target, REPRO_DIR, max_ops=MAX_OPS, seed=None if SEED is None else f"{SEED}/{target}/{shard}")


@contextlib.contextmanager
def wrong_annotation(pass_cls, ops):
    """Claim `pass_cls` targets only `ops` (absent from every drawn graph): skip drops a needed pass."""
    from fastpass.annotations import _lookup, qualname

    registry = _lookup._registry()
    saved = registry.get(qualname(pass_cls))
    _lookup.register(pass_cls, ops, skip_sound=True, copy_sound=True, why="deliberately wrong (test)")
    try:
        yield
    finally:
        if saved is None:
            _lookup.unregister(pass_cls)
        else:
            registry[qualname(pass_cls)] = saved
            _lookup._CLASS_CACHE.clear()


def test_fuzz_finds_a_wrong_annotation_and_writes_a_reproducer(tmp_path):
    from executorch.backends.arm._passes import FoldAndAnnotateQParamsPass
    from executorch.exir.dialects._ops import ops as exir_ops

    with wrong_annotation(FoldAndAnnotateQParamsPass, {exir_ops.edge.aten.cosh.default}):
        with pytest.raises(AssertionError, match="minimal reproducer") as failure:
            fuzz("tosa-int", tmp_path, max_ops=4,
                 # No shrink phase here: shrinking is Hypothesis's job and tested with the
                 # generators; this test is about finding the fault and keeping the case.
                 settings=settings(max_examples=3, derandomize=True, database=None, deadline=None,
                                   phases=[Phase.generate]))
    message = str(failure.value)
    assert "FoldAndAnnotateQParamsPass" in message
    (reproducer,) = tmp_path.glob("graph-*.py")
    text = reproducer.read_text()
    assert "python -m verify run --models none --model" in text and "def make_model" in text
    assert "--calibration minmax" in text  # replays with the calibration the fuzz test used


def test_coverage_summary_counts_passes_and_throughput(tmp_path, monkeypatch):
    from verify.fuzz import draw_graphs, record_coverage, summarize_coverage, verify_graph

    monkeypatch.setenv("FASTPASS_COVERAGE_DIR", str(tmp_path))
    (spec,) = draw_graphs(1, seed=3, max_ops=3)
    verdict = verify_graph(spec, "tosa-int")
    assert not verdict.failed and verdict.finished > verdict.started
    record_coverage(verdict)
    record_coverage(verdict)
    summary = summarize_coverage(tmp_path)
    assert "pass coverage over 2 graphs" in summary
    stock_passes = {s.pass_name for s in verdict.full.observation.steps if s.index >= 0}
    some = sorted(stock_passes)[0]
    assert any(line.split()[:2] == [some, "2"] for line in summary.splitlines())
    assert "never exercised" in summary
    throughput = [line for line in summary.splitlines() if line.startswith("throughput")]
    assert len(throughput) == 1 and throughput[0].startswith("throughput tosa-int: 2 graphs")
    assert "graphs/min" in throughput[0]
    assert f"graphs of {len(spec.ops)}.0 ops on average" in summary
    assert f"stock lowering {verdict.full.seconds:.2f} s" in summary
    assert verdict.prepare_seconds > 0


def test_coverage_summary_of_a_mixed_campaign_adds_an_all_targets_line(tmp_path):
    from verify.fuzz import summarize_coverage

    def row(target, start, ops):
        return json.dumps({"graph": f"{target}{start}", "target": target, "started": start, "finished": start + 6,
                           "ops": ops, "seconds": {"prepare": 1.0, "stock": 3.0, "fastpass": 2.0},
                           "stock": ["SomePass"], "fast": {"SomePass": {"skipped": 0, "ran": 1}}})

    (tmp_path / "coverage-gw0.jsonl").write_text("\n".join([row("tosa-int", 1000, 10), row("tosa-int", 1006, 20)]) + "\n")
    (tmp_path / "coverage-gw1.jsonl").write_text(row("tosa-fp", 1000, 3) + "\n")
    lines = summarize_coverage(tmp_path).splitlines()
    assert [line.split(":")[0] for line in lines if line.startswith("throughput")] == [
        "throughput tosa-fp", "throughput tosa-int", "throughput all targets"]
    (everything,) = [line for line in lines if line.startswith("throughput all targets")]
    assert "3 graphs" in everything and "in 0.2 min wall on 2 worker(s) = 15.0 graphs/min" in everything
    assert "graphs of 11.0 ops on average" in lines[lines.index(everything) + 1]
