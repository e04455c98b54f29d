"""The bench's aggregation, table, JSON and model references on synthetic worker results.

No lowering here (fast): `run_bench` is fed made-up WorkerRuns through its `lowering` seam, so
each figure the table and the JSON show can be checked against numbers known in advance.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from verify.bench.models import random_graph, resolve, usage_problem
from verify.report.bench.results import (IDENTITY_FIELDS, MIB, FastpassCounters, Memory, PassTiming, PeakScope, Spread,
                                  WorkerRun)
from verify.bench.run import BenchError, BenchOptions, run_bench
from verify.report.bench.table import format_table
from verify.lowering.mode import Mode


def worker_run(mode: Mode, lower: float, pipeline: float, *, before_mib: int = 500, peak_mib: int = 800,
               copied: int = 0, copy_seconds: float = 0.0, **changes) -> WorkerRun:
    fast = mode is Mode.FASTPASS
    run = WorkerRun(
        mode=mode, features=(), lower_seconds=lower, pass_pipeline_seconds=pipeline, edge_pass_seconds=0.5,
        pass_invocations=300, memory=Memory(before_mib * MIB, peak_mib * MIB, PeakScope.LOWERING),
        fastpass=FastpassCounters(passes_run=100, passes_skipped=200, nodes_copied=copied, nodes_dispatched=50,
                                  copy_seconds=copy_seconds, dispatch_seconds=0.1, fakecache_hits=7,
                                  fakecache_misses=3, relied_on={"x.ProvenPass": "sound"}) if fast else None,
        program_digest="p", payload_digests=("d0",), delegate_tosa_digests=("t0",), final_graph_digest="g",
        per_pass=(PassTiming("delegate0", "PassManager#0", 0, "SomePass", pipeline),))
    return replace(run, **changes)


class Script:
    """A fake `lowering` for run_bench: answers from a table, records the order it was asked in."""

    def __init__(self, answers):
        self.answers, self.calls = answers, []

    def __call__(self, options, case, mode, features, tag):
        pair = int(tag.split("-")[0].removeprefix("pair"))
        self.calls.append((pair, case.model.name, case.target, mode))
        return self.answers(pair, case.model.name, case.target, mode)


def bench(tmp_path, answers, models=("a",), targets=("tosa-int",), pairs=3):
    script = Script(answers)
    options = BenchOptions(models=models, targets=targets, pairs=pairs, work_dir=tmp_path / "work")
    return run_bench(options, lowering=script), script


def test_spread_is_median_min_max_of_what_is_there():
    assert Spread.of([3.0, 1.0, 2.0, None]) == Spread(2.0, 1.0, 3.0, 3)
    assert Spread.of([None, None]) == Spread(None, None, None, 0)
    assert Spread.of([1.0, 4.0]).median == 2.5


def test_pairs_interleave_across_cases_and_modes(tmp_path):
    result, script = bench(tmp_path, lambda p, m, t, mode: worker_run(mode, 2.0, 1.0), models=("a", "random3:1"),
                           targets=("tosa-int", "ethos-u55"), pairs=2)
    cases = [("a", "tosa-int"), ("a", "ethos-u55"), ("random3:1", "tosa-int"), ("random3:1", "ethos-u55")]
    assert script.calls == [(p, m, t, mode) for p in range(2) for m, t in cases for mode in (Mode.STOCK, Mode.FASTPASS)]
    assert [(c.model, c.target) for c in result.cases] == cases
    assert all(len(c.pairs) == 2 for c in result.cases) and result.identical
    assert result.cases[0].graph_spec is None and result.cases[2].graph_spec == random_graph(3, 1).to_dict()


def test_medians_ratios_outside_time_memory_and_node_cost(tmp_path):
    # stock lower 10/12/11, pipeline 6/8/7; fastpass lower 4/3/5, pipeline 1/1/2; per-pair lower ratios 2.5, 4, 2.2
    stock = {0: (10.0, 6.0), 1: (12.0, 8.0), 2: (11.0, 7.0)}
    fast = {0: (4.0, 1.0), 1: (3.0, 1.0), 2: (5.0, 2.0)}

    def answers(pair, model, target, mode):
        if mode is Mode.STOCK:
            return worker_run(mode, *stock[pair], before_mib=500, peak_mib=800)
        return worker_run(mode, *fast[pair], before_mib=500, peak_mib=1000, copied=1000 * (pair + 1),
                          copy_seconds=0.02 * (pair + 1))

    result, _ = bench(tmp_path, answers)
    (case,) = result.cases
    summary = {s.key: s for s in case.summaries()}
    assert summary["lower_seconds"].stock == Spread(11.0, 10.0, 12.0, 3)
    assert summary["lower_seconds"].fastpass == Spread(4.0, 3.0, 5.0, 3)
    assert summary["lower_seconds"].ratio == Spread(2.5, 2.2, 4.0, 3)
    assert summary["pass_pipeline_seconds"].ratio.median == 6.0  # 6/1, 8/1, 7/2
    assert summary["outside_pipeline_seconds"].stock.median == 4.0  # 10-6, 12-8, 11-7
    assert summary["outside_pipeline_seconds"].fastpass == Spread(3.0, 2.0, 3.0, 3)  # 3, 2, 3
    assert summary["rss_increase_bytes"].stock.median == 300 * MIB
    assert summary["rss_increase_bytes"].fastpass.median == 500 * MIB
    assert summary["peak_rss_bytes"].ratio.median == pytest.approx(0.8)  # fastpass uses more: < 1
    assert summary["nodes_copied"].fastpass == Spread(2000, 1000, 3000, 3)
    assert summary["nodes_copied"].stock.median is None  # stock has no fastpass counters
    assert summary["seconds_per_copied_node"].fastpass.median == pytest.approx(2e-5)

    table = format_table(result)
    assert "a on tosa-int" in table
    lower_row = next(line for line in table.splitlines() if "lower() s" in line)
    assert "11 (10–12)" in lower_row and "4 (3–5)" in lower_row and "2.5x (2.2–4)" in lower_row
    assert "0.02" in next(line for line in table.splitlines() if "ms per copied node" in line)
    rss_row = next(line for line in table.splitlines() if "RSS increase MiB" in line)
    assert "300" in rss_row and "500" in rss_row
    assert "yes: 3 of 3 pairs" in table and table.rstrip().endswith(": yes")
    assert "sound" in next(line for line in table.splitlines() if "annotations relied on" in line)
    assert result.cases[0].to_json()["relied_on"] == {"x.ProvenPass": "sound"}


@pytest.mark.parametrize("field", IDENTITY_FIELDS)
def test_a_pair_with_different_output_fails_the_bench(tmp_path, field):
    def answers(pair, model, target, mode):
        run = worker_run(mode, 2.0, 1.0)
        if mode is Mode.FASTPASS and pair == 1:
            value = getattr(run, field)
            return replace(run, **{field: value + ("x",) if isinstance(value, tuple) else "other"})
        return run

    result, _ = bench(tmp_path, answers)
    assert not result.identical and not result.cases[0].identical
    assert [p.problems for p in result.cases[0].pairs] == [(), (f"{field} differs",), ()]
    table = format_table(result)
    assert "pair 2" in table and f"NOT IDENTICAL: {field} differs" in table
    assert "NO: 2 of 3 pairs" in table and table.rstrip().endswith("NO")
    document = json.loads(json.dumps(result.to_json()))
    assert document["identical"] is False and document["cases"][0]["pairs_identical"] == 2
    assert document["cases"][0]["pair_runs"][1]["problems"] == [f"{field} differs"]


def test_ablation_runs_are_checked_identical_too(tmp_path):
    from fastpass import FEATURES

    def lowering(options, case, mode, features, tag):
        run = worker_run(mode, 2.0, 1.0)
        return replace(run, final_graph_digest="other") if tag.startswith("ablation") and features == FEATURES[:1] \
            else run

    options = BenchOptions(models=("a",), targets=("tosa-int",), pairs=1, ablation=True, work_dir=tmp_path / "w")
    result = run_bench(options, lowering=lowering)
    assert all(c.identical for c in result.cases) and not result.identical
    assert [r.config for r in result.ablation if not r.identical] == [f"{FEATURES[0]} alone"]
    assert "NOT IDENTICAL: final_graph_digest differs" in format_table(result)


def test_ablation_ratios_are_against_the_median_of_every_stock_lowering_of_the_case(tmp_path):
    """One stock lowering must not set every ablation row's ratio: the ablation's own stock run
    (an outlier at 5 s here, among pairs at 10/12/11 s) joins the pairs' stock runs, and each
    row divides their median (10.5 s lower(), 6.5 s pipeline) by its own time."""
    from fastpass import FEATURES

    stock_lower = {"pair0": 10.0, "pair1": 12.0, "pair2": 11.0, "ablation": 5.0}
    stock_pipeline = {"pair0": 6.0, "pair1": 8.0, "pair2": 7.0, "ablation": 3.0}

    def lowering(options, case, mode, features, tag):
        key = tag.split("-")[0]
        if mode is Mode.STOCK:
            return worker_run(mode, stock_lower[key], stock_pipeline[key])
        return worker_run(mode, 2.0, 1.0)

    options = BenchOptions(models=("a",), targets=("tosa-int",), pairs=3, ablation=True, work_dir=tmp_path / "w")
    result = run_bench(options, lowering=lowering)
    assert len(result.ablation) == 2 * len(FEATURES) - 1 and result.identical
    for row in result.ablation:
        assert row.ratio_lower == pytest.approx(10.5 / 2.0) and row.ratio_pipeline == pytest.approx(6.5 / 1.0)
        assert len(row.timing_stocks) == 4 and row.stock.lower_seconds == 5.0  # identity: the ablation's own
    table = format_table(result)
    assert "median of the case's 4 stock lowerings" in table
    assert f"{FEATURES[0]} alone" in table and "lower() 5.25x" in table
    document = json.loads(json.dumps(result.to_json()))["ablation"][0]
    assert document["stock_lower_seconds"] == 10.5 and document["stock_lowerings"] == 4


def test_json_holds_the_table_figures_and_every_run(tmp_path):
    result, _ = bench(tmp_path, lambda p, m, t, mode: worker_run(
        mode, 3.0 if mode is Mode.STOCK else 1.0, 2.0 if mode is Mode.STOCK else 0.5, copied=10, copy_seconds=0.001))
    document = json.loads(json.dumps(result.to_json()))
    (case,) = document["cases"]
    assert case["summary"]["lower_seconds"]["ratio"] == {"median": 3.0, "min": 3.0, "max": 3.0, "count": 3}
    assert case["summary"]["outside_pipeline_seconds"]["fastpass"]["median"] == 0.5
    assert case["summary"]["rss_increase_bytes"]["stock"]["median"] == 300 * MIB
    assert set(case["summary"]) == set(document["metrics"])
    assert len(case["pair_runs"]) == 3
    run = case["pair_runs"][0]["fastpass"]
    assert run["memory"]["peak_scope"] == "lowering" and run["fastpass"]["nodes_copied"] == 10
    assert WorkerRun.from_json(run) == result.cases[0].pairs[0].fastpass  # the worker's file reads back the same


def test_a_failed_lowering_fails_its_case_and_the_others_go_on(tmp_path):
    def answers(pair, model, target, mode):
        if model == "broken" and mode is Mode.FASTPASS and pair == 1:
            raise BenchError("pair1-broken-tosa-int-fastpass: lowering process failed (exit 1); log tail:\nboom")
        return worker_run(mode, 1.0, 0.5)

    result, script = bench(tmp_path, answers, models=("broken", "fine"))
    broken, fine = result.cases
    assert len(broken.pairs) == 1 and broken.error.startswith("pair1-broken") and not broken.identical
    assert len(fine.pairs) == 3 and fine.identical and fine.error is None
    assert not result.identical
    assert [c for c in script.calls if c[1] == "broken"][-1] == (1, "broken", "tosa-int", Mode.FASTPASS)
    table = format_table(result)
    assert "lowering FAILED" in table and "lowering process failed (exit 1); log tail:" in table
    assert "boom" not in table  # the log tail is on stderr as progress, the table keeps one line
    assert "lowering failed (logs in the work dir): broken on tosa-int" in table
    assert json.loads(json.dumps(result.to_json()))["cases"][0]["error"].endswith("boom")


def test_random_graph_references_are_reproducible(tmp_path):
    first, again, other = random_graph(10, 3), random_graph(10, 3), random_graph(10, 4)
    assert len(first) == 10 and first.to_json() == again.to_json() and first.to_json() != other.to_json()
    model = resolve("random10:3", tmp_path)
    assert model.name == "random10:3" and model.graph_spec == first.to_dict()
    assert model.worker_reference.startswith("graphspec:") and Path(model.worker_reference[10:]).is_file()
    assert resolve("resnet8", tmp_path).worker_reference == "resnet8"


@pytest.mark.parametrize("name, problem", [
    ("random10:3", None),
    ("resnet8", None),
    ("random0:3", "1 to 40 ops"),
    ("random10:x", "'randomN:SEED'"),
    ("nonet", "unknown model 'nonet'"),
])
def test_model_reference_problems(name, problem):
    found = usage_problem(name)
    assert (found is None) if problem is None else (problem in found), found


@pytest.mark.parametrize("args, message", [
    (("--models", "tests/models/tiny.py:make,nonet"), "unknown model 'nonet'"),
    (("--models", "random10:1", "--targets", "tosa-int,bogus"), "unknown target 'bogus'"),
    (("--models", "random10:1,,resnet8"), "an empty name in the list"),
    (("--models", "random99:1"), "1 to 40 ops"),
])
def test_bad_bench_usage_exits_2_with_one_line(capsys, args, message):
    from verify.cli import main

    assert main(["bench", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_the_worker_measures_the_lowerings_own_peak():
    from verify.bench.worker import peak_resident_bytes, reset_peak, resident_bytes

    before = resident_bytes()
    scope = reset_peak()
    block = bytearray(64 * MIB)
    block[:: 4096] = b"x" * len(block[:: 4096])  # touch every page: resident
    del block
    peak = peak_resident_bytes()
    assert peak - before >= 56 * MIB, (before, peak)
    if scope is PeakScope.LOWERING:
        assert resident_bytes() < peak  # the block is gone; the peak remembers it


def test_one_plot_per_case_and_none_for_a_case_without_pairs(tmp_path):
    def answers(pair, model, target, mode):
        if model == "broken":
            raise BenchError("pair0-broken-tosa-int-stock: lowering process failed (exit 1)")
        return worker_run(mode, 2.0, 1.0)

    from verify.report.bench.plot import write_plots

    result, _ = bench(tmp_path, answers, models=("a", "broken", "random3:1"), pairs=1)
    written = write_plots(tmp_path / "bench.png", result.cases, result.ablation)
    assert written == [tmp_path / "bench-a-tosa-int.png", tmp_path / "bench-random3_1-tosa-int.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in written)
    (alone,) = write_plots(tmp_path / "one.png", result.cases[:1], ())
    assert alone == tmp_path / "one.png" and alone.is_file()


def test_the_table_says_when_a_peak_covers_the_whole_process_and_the_load(tmp_path):
    def answers(pair, model, target, mode):
        run = worker_run(mode, 2.0, 1.0)
        if mode is Mode.FASTPASS and pair == 2:
            return replace(run, memory=replace(run.memory, peak_scope=PeakScope.PROCESS))
        return run

    result, _ = bench(tmp_path, answers)
    table = format_table(result)
    assert "peak RSS: the whole worker process's in 1 run(s)" in table
    assert result.load_at_start is not None and f"{result.cpus} CPUs" in table
    assert "peak RSS: the lowering's own" in format_table(bench(tmp_path, lambda *a: worker_run(a[3], 2.0, 1.0))[0])


@pytest.mark.parametrize("differs", [False, True])
def test_the_command_benches_every_model_and_target_and_writes_the_json(tmp_path, monkeypatch, capsys, differs):
    import verify.bench.run
    from verify.cli import main

    seen = {}

    def fake_run_bench(options, progress, lowering=None):
        seen["options"] = options

        def answers(pair, model, target, mode):
            run = worker_run(mode, 2.0, 1.0)
            return replace(run, program_digest="other") if differs and mode is Mode.FASTPASS else run

        return run_bench(options, lowering=Script(answers))

    monkeypatch.setattr(verify.bench.run, "run_bench", fake_run_bench)
    code = main(["bench", "--models", "resnet8,random3:1", "--model", "ds_cnn", "--model", "resnet8", "--targets",
                 "tosa-int", "--target", "ethos-u55", "--pairs", "2", "--json", str(tmp_path / "b.json"),
                 "--work-dir", str(tmp_path / "work")])
    out, err = capsys.readouterr()
    options = seen["options"]
    assert options.models == ("resnet8", "random3:1", "ds_cnn") and options.targets == ("tosa-int", "ethos-u55")
    document = json.loads((tmp_path / "b.json").read_text())
    assert [(c["model"], c["target"]) for c in document["cases"]] == [
        (m, t) for m in options.models for t in options.targets]
    assert "ds_cnn on ethos-u55" in out
    assert code == (1 if differs else 0) and document["identical"] is (not differs)
    assert ("NOT IDENTICAL" in err) is differs


def test_the_defaults_are_sleepnet_on_ethos_u55(tmp_path, monkeypatch):
    import verify.bench.run
    from verify.cli import main

    class Stop(Exception):
        pass

    def fake_run_bench(options, progress):
        raise Stop((options.models, options.targets, options.pairs))

    monkeypatch.setattr(verify.bench.run, "run_bench", fake_run_bench)
    with pytest.raises(Stop) as stopped:
        main(["bench", "--work-dir", str(tmp_path)])
    assert stopped.value.args[0] == (("sleepnet",), ("ethos-u55",), 3)


def test_bench_options_make_no_folder_until_a_bench_runs(tmp_path, monkeypatch):
    """Building options (every `verify bench` did, and tests do) left an empty fastpass-bench-*
    folder in the temporary directory each time; the folder is made when a bench starts."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    BenchOptions(models=("a",), targets=("tosa-int",), pairs=1)
    assert list(tmp_path.iterdir()) == []
