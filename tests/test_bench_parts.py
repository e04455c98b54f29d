"""The bench's split of a lowering into named parts (verify.lowering.steps.Part), in process on
the tiny model: each part timed, nothing counted twice, the parts and the passes adding up to
lower()'s time; a part whose timer is not installed is an error, not time silently moved to
`other`; and the floor's parts really are ones no fastpass patch point acts in.

Timings are asserted only as present, positive or adding up, never as fast or slow."""

from __future__ import annotations

import contextlib
import functools
from collections import Counter
from pathlib import Path

import pytest

from verify.lowering.steps import Part

ROOT = Path(__file__).resolve().parent.parent
TINY = "tests/models/tiny.py:make"


@functools.cache
def _program(target_name: str):
    from verify.cases import build_model
    from verify.lowering.quantize import export_program
    from verify.lowering.targets import get_target

    target = get_target(target_name)
    module, inputs = build_model(TINY)
    return export_program(module, inputs, target), target


def _lower(target_name: str, mode: str, **options):
    from verify.lowering.lower import lower

    program, target = _program(target_name)
    result = lower(program, target, mode, (), snapshots=False, reference_sets=0, final_snapshot=False,
                   serialize=False, parts=True, **options)
    assert result.ok, result.error
    return result, target


@pytest.mark.usefixtures("fastpass_disabled")
@pytest.mark.parametrize("mode", ["stock", "fastpass"])
def test_parts_are_timed_and_add_up_to_the_lowering(mode):
    from verify.bench.worker import timed_parts

    result, target = _lower("tosa-int", mode)
    parts = timed_parts(result, target)
    observed = result.observation.part_seconds
    for part in (Part.DECOMPOSITIONS, Part.TO_EDGE, Part.PARTITIONING, Part.PASS_MANAGERS, Part.TOSA_SERIALIZATION):
        assert observed[part] > 0, f"{part} not timed"
    assert Part.VELA not in observed, "a TOSA target has no Vela call"
    assert parts[Part.VELA.value] is None
    steps = sum(s.seconds for s in result.observation.steps if s.index >= 0)
    counted = sum(observed.values()) + steps - result.observation.nested_step_seconds
    assert 0 < counted <= result.seconds
    # what is left (fastpass on and off, the observers' install, get_fake_program, ...) is small
    assert result.seconds - counted < 0.5 * result.seconds


@pytest.mark.usefixtures("fastpass_disabled")
def test_vela_is_timed_for_an_ethos_u_target():
    result, _ = _lower("ethos-u55", "stock")
    assert result.observation.part_seconds[Part.VELA] > 0


@pytest.mark.usefixtures("fastpass_disabled")
@pytest.mark.parametrize("part", [Part.DECOMPOSITIONS, Part.PARTITIONING])
def test_a_part_whose_timer_is_not_installed_fails_the_lowering_run(monkeypatch, part):
    """The row that times `part` removed from the observers' table (as if executorch had moved
    the call): the worker's check names the part instead of moving its time to `other`."""
    from verify.bench.worker import MissingPartError, timed_parts
    from verify.lowering import observe

    table = observe.patch_points

    def without_the_row(observer):
        return [p for p in table(observer) if getattr(p.wrap, "part", None) is not part]

    monkeypatch.setattr(observe, "patch_points", without_the_row)
    result, target = _lower("tosa-int", "stock")
    assert part not in result.observation.part_seconds
    with pytest.raises(MissingPartError, match=part.value):
        timed_parts(result, target)


@pytest.mark.usefixtures("fastpass_disabled")
def test_the_floor_parts_are_ones_no_fastpass_patch_point_acts_in(monkeypatch):
    """Every fastpass replacement counted by the part it was called in (with every feature and
    every annotation at work), and the code generation lazycode deferred to wherever it ends up:
    none in a floor part, and some in each other part (so the floor is not empty by a broken
    count)."""
    import fastpass
    from executorch.exir import to_edge_transform_and_lower
    from fastpass import _context, _lazycode
    from fastpass.patching import PatchPoint, Patches, current_value
    from verify.lowering import observe
    from verify.report.bench.results import FLOOR_PARTS

    program, target = _program("ethos-u55")
    program = __import__("copy").deepcopy(program)
    observer = observe._Observer(False, parts=True)
    calls: Counter = Counter()

    def counted(where):
        def wrap(replacement):
            @functools.wraps(replacement)
            def counting(*args, **kwargs):
                if not observer.open_passes:
                    part = next((f.part for f in reversed(observer.frames) if f.part is not None), None)
                    calls[part, where] += 1
                return replacement(*args, **kwargs)
            return counting
        return wrap

    monkeypatch.setattr(_lazycode, "_materialize", counted("lazycode's deferred code generation")(_lazycode._materialize))
    counting = Patches("test counting", "restore")
    observe.PATCHES.install(observe.patch_points(observer), features=(observe.PARTS,))
    try:
        with fastpass.enabled(trust="all"):
            counting.install([PatchPoint(p.owner, p.attribute, (), wrap=counted(p.where), why="count")
                              for p in _context.STATE.installed_points() if callable(current_value(p))])
            try:
                to_edge_transform_and_lower(program, partitioner=[target.make_partitioner(target.make_spec())])
            finally:
                counting.restore()
    finally:
        observe.PATCHES.restore()
    by_part = Counter(part for part, _ in calls.elements())
    assert set(observer.observation.part_seconds) == set(Part)
    for part in FLOOR_PARTS:
        assert by_part[part] == 0, f"fastpass acts in {part}: {[w for p, w in calls if p is part]}"
    for part in set(Part) - set(FLOOR_PARTS):
        assert by_part[part] > 0, f"no fastpass patch point is called in {part}: add it to the floor"


def test_every_part_has_its_row_in_the_table_and_json():
    from verify.report.bench.results import METRICS

    keys = [m.key for m in METRICS]
    assert all(f"{part.value}_seconds" in keys for part in Part)
    assert "other_seconds" in keys and "to_executorch_seconds" in keys


def test_other_the_floor_and_its_ceiling_on_synthetic_runs(tmp_path):
    """The arithmetic on made-up runs: `other` is lower() minus every named figure (a nested pass
    step counted once), the floor sums the floor parts of the fastpass runs, and a part that did
    not run (Vela on a TOSA target) is '-' with no ratio, not a zero."""
    from tests.test_bench_results import bench, worker_run
    from verify.lowering.mode import Mode
    from verify.report.bench.table import format_table

    def parts(decompositions, partitioning, tosa):
        return {"decompositions": decompositions, "to_edge": 1.0, "partitioning": partitioning, "pipeline_setup": 0.25,
                "pass_managers": 0.25, "tosa_serialization": tosa, "vela": None}

    def answers(pair, model, target, mode):
        if mode is Mode.STOCK:  # 20 = 8 pipeline + 0.5 edge + 9.5 parts + 0 switch + 2 other (+ 0 nested)
            return worker_run(mode, 20.0, 8.0, parts=parts(7.0, 0.5, 0.5), to_executorch_seconds=3.0)
        # 4.5 = 1 pipeline + 0.5 edge + 2.5 parts + 0.25 switch + 0.5 other - 0.25 nested step
        return worker_run(mode, 4.5, 1.0, parts=parts(0.5, 0.25, 0.25), mode_switch_seconds=0.25,
                          nested_step_seconds=0.25, to_executorch_seconds=1.5)

    result, _ = bench(tmp_path, answers, pairs=1)
    (case,) = result.cases
    summary = {s.key: s for s in case.summaries()}
    assert summary["other_seconds"].stock.median == pytest.approx(2.0)
    assert summary["other_seconds"].fastpass.median == pytest.approx(0.5)
    assert summary["decompositions_seconds"].ratio.median == pytest.approx(14.0)
    assert summary["to_executorch_seconds"].ratio.median == pytest.approx(2.0)
    assert summary["vela_seconds"].ratio.median is None and summary["vela_seconds"].stock.count == 0
    assert summary["mode_switch_seconds"].fastpass.median == 0.25 and summary["mode_switch_seconds"].ratio.count == 0
    floor = case.floor
    assert floor.parts == (Part.PARTITIONING, Part.TOSA_SERIALIZATION)
    assert floor.seconds.median == pytest.approx(0.5)
    assert floor.share.median == pytest.approx(0.5 / 4.5)
    assert floor.ceiling.median == pytest.approx(40.0)
    document = case.to_json()
    assert document["floor"]["parts"] == ["partitioning", "tosa_serialization"]
    assert document["summary"]["other_seconds"]["fastpass"]["median"] == pytest.approx(0.5)
    table = format_table(result)
    vela = next(line for line in table.splitlines() if "  Vela s" in line)
    assert vela.split()[-3:] == ["-", "-", "-"]
    assert ("floor a on tosa-int: 0.5 s (partitioning + TOSA serialization: no fastpass patch point acts in them; "
            "fastpass lowerings), 11.1 % of fastpass lower(); lower() at most 40x if all else took no time") in table
