"""Typed results across boundaries: one mode vocabulary (no other names read: no release wrote
any), divergence points as values that survive JSON."""

from __future__ import annotations

import argparse
import json

import pytest

from verify.compare import CheckResult, Divergence
from verify.lowering.mode import Mode
from verify.lowering.steps import PassStep
from verify.vocabulary import Verdict
from verify.report.case import CaseReport


def test_modes_have_one_name_each():
    assert [m.value for m in Mode] == ["stock", "fastpass"]
    for other in ("full", "fast"):
        with pytest.raises(ValueError):
            Mode(other)
    assert json.dumps({"mode": Mode.FASTPASS}) == '{"mode": "fastpass"}'


def test_second_mode_option_takes_the_mode_names_only(capsys):
    from verify.commands.run import _add_run_arguments

    parser = argparse.ArgumentParser()
    _add_run_arguments(parser)
    assert parser.parse_args([]).second_mode is Mode.FASTPASS
    assert parser.parse_args(["--second-mode", "stock"]).second_mode is Mode.STOCK
    with pytest.raises(SystemExit):
        parser.parse_args(["--second-mode", "full"])
    assert "invalid Mode value: 'full'" in capsys.readouterr().err


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
