"""Quantize your own model for an Arm Ethos-U55 and lower it to an ExecuTorch program (.pte).

    python -m fastpass run examples/lower_my_model.py [OUT.pte]       # with fastpass (faster, same .pte)
    python -m verify crosscheck examples/lower_my_model.py [OUT.pte]  # prove it: fastpass vs stock, per lowering
    python examples/lower_my_model.py [OUT.pte]                       # stock executorch

Replace `make_model` with your model and example inputs (and calibrate with representative
inputs). Only executorch's and torchao's public APIs: the recipe the harness uses for its
`ethos-u55` target (verify/lowering/targets.py, verify/lowering/quantize.py). For an Ethos-U85
use EthosUCompileSpec("ethos-u85-256"); for plain TOSA, TOSAQuantizer and TOSAPartitioner with
TosaCompileSpec("TOSA-1.0+INT").
"""

import sys

import torch
from executorch.backends.arm.ethosu import EthosUCompileSpec, EthosUPartitioner
from executorch.backends.arm.quantizer import EthosUQuantizer, get_symmetric_quantization_config
from executorch.exir import to_edge_transform_and_lower
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e


def make_model():
    """Your model (in eval mode) and a tuple of example inputs."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, stride=2), torch.nn.ReLU(),
        torch.nn.Flatten(), torch.nn.Linear(8 * 3 * 3, 4),
    )
    return model.eval(), (torch.randn(1, 3, 8, 8),)


def lower(model, example_inputs, out):
    compile_spec = EthosUCompileSpec("ethos-u55-128")

    # 1. Quantize (PT2E, int8 symmetric): annotate, calibrate, convert.
    quantizer = EthosUQuantizer(compile_spec)
    quantizer.set_global(get_symmetric_quantization_config())
    # check_guards=False: plain .module() adds a guard call that the Arm quantizer cannot take
    graph_module = torch.export.export(model, example_inputs).module(check_guards=False)
    prepared = prepare_pt2e(graph_module, quantizer)
    prepared(*example_inputs)  # calibration: run representative inputs here
    quantized = convert_pt2e(prepared)

    # 2. Export the quantized model; the partitioner hands what the NPU runs to Vela.
    program = torch.export.export(quantized, example_inputs)
    edge = to_edge_transform_and_lower(program, partitioner=[EthosUPartitioner(compile_spec)])

    # 3. Serialize the program the device runs.
    pte = edge.to_executorch().buffer
    with open(out, "wb") as f:
        f.write(pte)
    delegates = [name for name, _ in edge.exported_program().graph_module.named_children()
                 if name.startswith("lowered_module")]
    print(f"wrote {out}: {len(pte)} bytes, {len(delegates)} Ethos-U delegate(s)")


if __name__ == "__main__":
    model, example_inputs = make_model()
    lower(model, example_inputs, sys.argv[1] if len(sys.argv) > 1 else "my_model.pte")
