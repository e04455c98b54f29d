"""Typed results across boundaries: one mode vocabulary (old saved names still read), divergence
points as values that survive JSON, and reports written before either still load."""

from __future__ import annotations

import argparse
import json

from verify.compare import CheckResult, Divergence
from verify.lowering.mode import Mode
from verify.lowering.steps import PassStep
from verify.report.verdict import NullOutcome, Verdict
from verify.report.case import CaseReport


def test_modes_have_one_name_and_old_names_are_read():
    assert [m.value for m in Mode] == ["stock", "fastpass"]
    assert Mode("full") is Mode.STOCK and Mode("fast") is Mode.FASTPASS
    assert json.dumps({"mode": Mode.FASTPASS}) == '{"mode": "fastpass"}'


def test_second_mode_option_takes_the_new_names_and_the_old_ones():
    from verify.cli import _add_run_arguments

    parser = argparse.ArgumentParser()
    _add_run_arguments(parser)
    assert parser.parse_args([]).second_mode is Mode.FASTPASS
    assert parser.parse_args(["--second-mode", "stock"]).second_mode is Mode.STOCK
    assert parser.parse_args(["--second-mode", "full"]).second_mode is Mode.STOCK


def test_a_divergence_survives_the_json_report():
    step = PassStep(4, "delegate0", "ArmPassManager#1", 7, "FuseQuantizedActivationPass", None, 0.0)
    where = Divergence.at_step(step, "graph", ("node 3 differs",))
    report = CaseReport("m", "tosa-int", Verdict.DIVERGENT, first_divergence=where,
                        checks={"graph": CheckResult("graph", False, where, ["node 3 differs"]),
                                "payload": CheckResult("payload", False, Divergence("delegate0", delegate=0), ["x"])},
                        seconds={"stock": 1.0, "fastpass": 0.5})
    data = json.loads(json.dumps(report.to_json()))
    assert data["first_divergent_pass"] == step.label and data["first_divergence"]["pass"] == step.pass_name
    assert data["seconds"] == {"stock": 1.0, "fastpass": 0.5}
    back = CaseReport.from_json(data)
    assert back.first_divergence == where and back.first_divergence.pass_name == "FuseQuantizedActivationPass"
    assert back.checks["payload"].first_divergence.delegate == 0


def test_a_report_written_before_the_typed_values_still_loads():
    old = {"model": "m", "target": "tosa-int", "verdict": "divergent",
           "first_divergent_pass": "edge/ExportedProgramPassManager#0[2] SomePass",
           "checks": {"outcome": True, "graph": False},
           "check_details": {"graph": {"passed": False, "first_divergence": "edge/ExportedProgramPassManager#0[2] SomePass",
                                       "details": ["node differs"]}},
           "seconds": {"full": 2.0, "fast": 1.0, "full_to_executorch": 0.3, "fast_to_executorch": 0.2},
           "null_outcome": "not-run"}
    report = CaseReport.from_json(old)
    assert report.first_divergence.label == old["first_divergent_pass"] and report.first_divergence.step is None
    assert report.checks["graph"].first_divergence.label == old["first_divergent_pass"]
    assert report.seconds == {"stock": 2.0, "fastpass": 1.0, "stock_to_executorch": 0.3,
                              "fastpass_to_executorch": 0.2}
    assert report.null_outcome is NullOutcome.NOT_RUN
