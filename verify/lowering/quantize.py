"""Export and (for INT targets) quantize a model: done once per case, shared by both modes."""

from __future__ import annotations

import torch

from verify.lowering.targets import Target


class PrepareError(RuntimeError):
    """The model could not be exported or quantized: a fault of the model, not of a mode."""


def export_program(model: torch.nn.Module, example_inputs: tuple, target: Target):
    """Return the ExportedProgram both modes lower.

    `.module(check_guards=False)`: plain `.module()` inserts a `_guards_fn` call_module
    that breaks ARM quantization.
    """
    model = model.eval()
    try:
        if not target.quantized:
            return torch.export.export(model, example_inputs)
        from executorch.backends.arm.quantizer import get_symmetric_quantization_config
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

        quantizer = target.make_quantizer(target.make_spec())
        quantizer.set_global(get_symmetric_quantization_config())
        graph_module = torch.export.export(model, example_inputs).module(check_guards=False)
        prepared = prepare_pt2e(graph_module, quantizer)
        prepared(*example_inputs)
        converted = convert_pt2e(prepared)
        return torch.export.export(converted, example_inputs)
    except Exception as exc:  # noqa: BLE001 - re-raised with the stage named
        stage = "quantize" if target.quantized else "export"
        raise PrepareError(f"{stage} failed for target {target.name}: {type(exc).__name__}: {exc}") from exc
