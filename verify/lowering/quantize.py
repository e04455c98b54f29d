"""Export and (for INT targets) quantize a model: done once per case, shared by both modes."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from verify.lowering.targets import Target

if TYPE_CHECKING:
    import torch


class PrepareError(RuntimeError):
    """The model could not be exported or quantized: a fault of the model, not of a mode."""


# How activation ranges are calibrated. Both give the same quantized graph structure (the
# same q/dq placement, ops and dtypes); only the scale and zero-point values differ.
CALIBRATIONS: dict[str, str] = {
    "histogram": "executorch's recipe as is: get_symmetric_quantization_config(), HistogramObserver "
    "activations (real models)",
    "minmax": "the same recipe with MinMaxObserver activations: HistogramObserver's qparam search costs "
    "~50 ms per observer, most of a random graph's preparation (the fuzz default)",
}


# Random graphs (fuzz tests, gate) are calibrated `minmax`: the graph structure is what they
# test, and it cut a 20-op graph's preparation from ~1.3 s to ~0.3 s.
RANDOM_GRAPH_CALIBRATION = "minmax"


def check_calibration(calibration: str) -> str:
    if calibration not in CALIBRATIONS:
        raise ValueError(f"unknown calibration {calibration!r}; known: {', '.join(CALIBRATIONS)}")
    return calibration


def quantization_config(calibration: str = "histogram"):
    """The ARM symmetric config, with its activation observer swapped for `minmax`."""
    from executorch.backends.arm.quantizer import get_symmetric_quantization_config
    from torchao.quantization.pt2e.observer import MinMaxObserver

    config = get_symmetric_quantization_config()
    if check_calibration(calibration) == "histogram":
        return config
    activation = config.input_activation
    observer = MinMaxObserver.with_args(**activation.observer_or_fake_quant_ctr.p.keywords)  # keeps eps
    activation = dataclasses.replace(activation, observer_or_fake_quant_ctr=observer)
    return dataclasses.replace(config, input_activation=activation, output_activation=activation,
                               label=f"{config.label} with MinMaxObserver activations")


def quantizer_for(target: Target, calibration: str = "histogram"):
    """`target`'s quantizer with the global config every quantization here uses
    (`quantization_config(calibration)`)."""
    quantizer = target.make_quantizer(target.make_spec())
    quantizer.set_global(quantization_config(calibration))
    return quantizer


def export_program(model: torch.nn.Module, example_inputs: tuple, target: Target, calibration: str = "histogram"):
    """Return the ExportedProgram both modes lower.

    `.module(check_guards=False)`: plain `.module()` inserts a `_guards_fn` call_module
    that breaks ARM quantization.
    """
    import torch  # here, not at import: the CLI reads CALIBRATIONS before it checks its arguments

    check_calibration(calibration)
    model = model.eval()
    stage = "export"  # torch.export of the user's model; after it, the quantizer's steps
    try:
        if not target.quantized:
            return torch.export.export(model, example_inputs)
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

        quantizer = quantizer_for(target, calibration)
        graph_module = torch.export.export(model, example_inputs).module(check_guards=False)
        stage = "quantize"
        prepared = prepare_pt2e(graph_module, quantizer)
        prepared(*example_inputs)
        converted = convert_pt2e(prepared)
        return torch.export.export(converted, example_inputs)
    except Exception as exc:  # noqa: BLE001 - re-raised with the stage named
        raise PrepareError(f"{stage} failed for target {target.name}: {type(exc).__name__}: {exc}") from exc
