"""Fuzzing: random quantizable graphs through both modes, shrunk and saved when they differ.

The default test command runs these with the small derandomized `ci` profile (a smoke
run); `tox -e fuzz` runs them with the `fuzz` profile over all cores.
"""

from __future__ import annotations

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


def _targets_from_environment() -> list[str]:
    """FASTPASS_FUZZ_TARGETS: any of verify.lowering.targets (ethos-u55/u85 reach the U55/U85-only
    passes); a misspelt name stops the run with one line instead of fuzzing nothing."""
    from verify.lowering.targets import UnknownTargetError, get_target

    names = [t.strip() for t in os.environ.get("FASTPASS_FUZZ_TARGETS", "tosa-int,tosa-fp").split(",") if t.strip()]
    try:
        return [get_target(name).name for name in names]
    except UnknownTargetError as exc:
        raise pytest.UsageError(f"FASTPASS_FUZZ_TARGETS: {exc}") from None


TARGETS = _targets_from_environment()
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


def wrong_annotation(pass_cls, ops):
    """Claim `pass_cls` targets only `ops` (absent from every drawn graph): skip drops a needed pass."""
    from fastpass.annotations import Entry, overridden

    return overridden({pass_cls: Entry(ops, skip_sound=True, copy_sound=True, why="deliberately wrong (test)")})


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
    from generators.random import interpret
    from verify.fuzz import record_coverage, summarize_coverage, verify_graph

    monkeypatch.setenv("FASTPASS_COVERAGE_DIR", str(tmp_path))
    spec = interpret([(1, 2, 4, 4)], [("relu", 0, 0), ("where", 0, 0)])  # relu -> clamp; where(gt)
    verdict = verify_graph(spec, "tosa-int")
    assert not verdict.failed and verdict.finished > verdict.started
    record_coverage(verdict)
    record_coverage(verdict)
    summary = summarize_coverage(tmp_path)
    lines = summary.splitlines()
    assert lines[0].startswith("pass coverage, tosa-int: 2 graphs")
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:] if line and not line.startswith(("annotated", " "))}
    # ConvertToClampPass targets relu/hardtanh: invoked, presented and run in both graphs.
    assert rows["ConvertToClampPass"][:4] == ["*", "2", "2", "2"]
    # DecomposeAcoshPass: invoked, never presented (no acosh), skipped by fastpass each time.
    star, stock, presented, fast_ran, skipped, copied, acted = rows["DecomposeAcoshPass"]
    assert (star, stock, presented, fast_ran, acted) == ("*", "2", "0", "0", "2") and int(skipped) >= 2
    assert rows["DebugHandleGeneratorPass"][1] == "-"  # not annotated: nothing to present
    assert "  DecomposeAcoshPass: NOT listed unreachable" in summary
    assert "  DecomposeAdaptiveMaxPool2dPass: listed unreachable: acts on tosa.MAX_POOL2D_ADAPTIVE" in summary
    assert "  DecomposePermuteForU55Pass: acts only on ethos-u55, not in this campaign" in summary
    throughput = [line for line in lines if line.startswith("throughput")]
    assert len(throughput) == 1 and throughput[0].startswith("throughput tosa-int: 2 graphs")
    assert "graphs/min" in throughput[0]
    assert f"graphs of {len(spec.ops)}.0 ops on average" in summary
    assert f"stock lowering {verdict.stock.seconds:.2f} s" in summary
    assert verdict.prepare_seconds > 0


def _step(seq, index, name, digest):
    from verify.lowering.steps import PassStep

    return PassStep(seq, "delegate0", "Manager#0", index, name, digest, 0.0)


def _graph(digest, *targets):
    from verify.lowering.snapshot import GraphSnapshot, NodeRecord

    nodes = tuple(NodeRecord(f"n{i}", "call_function", t, "()", "{}", None, ()) for i, t in enumerate(targets))
    return GraphSnapshot(nodes, digest)


def test_presented_passes_reads_the_graph_each_pass_received():
    """A pass counts as presented only when its targeted ops are in its *input* graph."""
    from verify.fuzz_coverage import presented_passes
    from verify.lowering.observe import Observation

    relu = "executorch.exir.dialects.edge._ops.aten::relu:<EdgeOpOverload: aten.relu.default>: schema = ..."
    clamp = "executorch.exir.dialects.edge._ops.aten::clamp:<EdgeOpOverload: aten.clamp.default>: schema = ..."
    acosh = "torch._ops.aten.acosh.default:aten.acosh.default"
    observation = Observation(
        steps=[_step(0, -1, "<input>", "a"), _step(1, 0, "ConvertToClampPass", "b"),
               _step(2, 1, "DecomposeTOSAUnsupportedClampPass", "b"), _step(3, 2, "DecomposeAcoshPass", "b")],
        snapshots={"a": _graph("a", relu, acosh), "b": _graph("b", clamp, acosh)})
    found = presented_passes(observation)
    assert "ConvertToClampPass" in found  # relu in its input
    assert "DecomposeTOSAUnsupportedClampPass" in found  # clamp created by the previous pass
    assert "DecomposeAcoshPass" in found  # a plain aten target
    observation.snapshots["b"] = _graph("b", clamp)
    assert "DecomposeAcoshPass" not in presented_passes(observation)  # acosh gone from its input


def test_coverage_tally_per_target_counts_skips_copies_and_acting_graphs():
    from verify.fuzz_coverage import tally

    def row(target, fast, stock=("P",), presented=()):
        return {"target": target, "stock": list(stock), "presented": list(presented), "fastpass": fast}

    rows = [row("tosa-int", {"P": {"skipped": 2, "ran": 0, "copied": 0}}),
            row("tosa-int", {"P": {"skipped": 0, "ran": 1, "copied": 7}}, presented=["P"]),
            row("tosa-int", {"P": {"skipped": 0, "ran": 1, "copied": 0}}),
            row("ethos-u55", {"P": {"skipped": 0, "ran": 2, "copied": 3}}, presented=["P"])]
    per_target = tally(rows)
    assert list(per_target) == ["ethos-u55", "tosa-int"]
    p = per_target["tosa-int"].passes["P"]
    assert (p.stock, p.presented, p.fast_ran, p.skipped, p.copied, p.acted) == (3, 1, 2, 2, 7, 2)
    u = per_target["ethos-u55"].passes["P"]
    assert (u.stock, u.fast_ran, u.copied, u.acted) == (1, 1, 3, 1)


def test_fuzz_targets_accept_ethos_u_and_reject_unknown_names(monkeypatch):
    monkeypatch.setenv("FASTPASS_FUZZ_TARGETS", "ethos-u55, ethos-u85,tosa-int")
    assert _targets_from_environment() == ["ethos-u55", "ethos-u85", "tosa-int"]
    monkeypatch.setenv("FASTPASS_FUZZ_TARGETS", "tosa-int,ethos-u56")
    with pytest.raises(pytest.UsageError, match="FASTPASS_FUZZ_TARGETS: unknown target 'ethos-u56'"):
        _targets_from_environment()


def test_coverage_summary_of_a_mixed_campaign_adds_an_all_targets_line(tmp_path):
    from verify.fuzz import summarize_coverage

    def row(target, start, ops):
        return json.dumps({"graph": f"{target}{start}", "target": target, "started": start, "finished": start + 6,
                           "ops": ops, "seconds": {"prepare": 1.0, "stock": 3.0, "fastpass": 2.0},
                           "stock": ["SomePass"], "fastpass": {"SomePass": {"skipped": 0, "ran": 1}}})

    (tmp_path / "coverage-gw0.jsonl").write_text("\n".join([row("tosa-int", 1000, 10), row("tosa-int", 1006, 20)]) + "\n")
    (tmp_path / "coverage-gw1.jsonl").write_text(row("tosa-fp", 1000, 3) + "\n")
    lines = summarize_coverage(tmp_path).splitlines()
    assert [line.split(":")[0] for line in lines if line.startswith("throughput")] == [
        "throughput tosa-fp", "throughput tosa-int", "throughput all targets"]
    (everything,) = [line for line in lines if line.startswith("throughput all targets")]
    assert "3 graphs" in everything and "in 0.2 min wall on 2 worker(s) = 15.0 graphs/min" in everything
    assert "graphs of 11.0 ops on average" in lines[lines.index(everything) + 1]
