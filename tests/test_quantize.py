"""Calibration: `minmax` (the fuzz default) keeps executorch's graph structure, only the qparams differ."""

from __future__ import annotations

import pytest

from verify.lowering.quantize import CALIBRATIONS, export_program, quantization_config
from verify.lowering.targets import get_target


def _structure(program):
    return [(n.op, str(n.target)) for n in program.graph_module.graph.nodes]


def test_minmax_swaps_only_the_activation_observer():
    from torchao.quantization.pt2e.observer import HistogramObserver, MinMaxObserver

    stock, minmax = quantization_config("histogram"), quantization_config("minmax")
    assert stock.input_activation.observer_or_fake_quant_ctr.p.func is HistogramObserver
    for spec in (minmax.input_activation, minmax.output_activation):
        assert spec.observer_or_fake_quant_ctr.p.func is MinMaxObserver
        assert spec.observer_or_fake_quant_ctr.p.keywords == stock.input_activation.observer_or_fake_quant_ctr.p.keywords
        assert (spec.dtype, spec.quant_min, spec.quant_max, spec.qscheme) == (
            stock.input_activation.dtype, stock.input_activation.quant_min, stock.input_activation.quant_max,
            stock.input_activation.qscheme)
    assert minmax.weight == stock.weight and minmax.bias == stock.bias


def test_minmax_program_has_the_histogram_program_structure():
    from tests.models.tiny import make

    target = get_target("tosa-int")
    histogram = export_program(*make(), target, "histogram")
    minmax = export_program(*make(), target, "minmax")
    assert _structure(minmax) == _structure(histogram)
    assert any("quantize_per_tensor" in t for _, t in _structure(minmax))


def test_unknown_calibration_is_refused():
    assert set(CALIBRATIONS) == {"histogram", "minmax"}
    with pytest.raises(ValueError, match="unknown calibration 'kmeans'; known: histogram, minmax"):
        export_program(None, (), get_target("tosa-int"), "kmeans")
