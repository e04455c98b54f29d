"""check_buildable: export / quantize (INT) / lower a spec, raising GeneratorBug on failure."""

from __future__ import annotations

import torch

from ._spec import GraphSpec
from ._strategy import GeneratorBug

INT = "TOSA-1.0+INT"
FP = "TOSA-1.0+FP"


def quantize(model, example_inputs, target: str = INT):
    """ARM pt2e quantization recipe; returns the re-exported quantized ExportedProgram."""
    from executorch.backends.arm.quantizer import TOSAQuantizer, get_symmetric_quantization_config
    from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    q = TOSAQuantizer(TosaCompileSpec(target))
    q.set_global(get_symmetric_quantization_config())
    # .module(check_guards=False): the _guards_fn node breaks ARM quantization annotation.
    gm = torch.export.export(model, example_inputs).module(check_guards=False)
    p = prepare_pt2e(gm, q)
    p(*example_inputs)
    c = convert_pt2e(p)
    return torch.export.export(c, example_inputs)


def lower(exported_program, target: str):
    from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec
    from executorch.backends.arm.tosa.partitioner import TOSAPartitioner
    from executorch.exir import to_edge_transform_and_lower

    return to_edge_transform_and_lower(exported_program, partitioner=[TOSAPartitioner(TosaCompileSpec(target))])


def check_buildable(spec: GraphSpec, *, quantize_int: bool = True, lower_targets=(), check_finite: bool = True):
    """Build, eager-run, export and (by default) INT-quantize ``spec``; optionally lower it.

    ``lower_targets`` is any of ``("TOSA-1.0+INT", "TOSA-1.0+FP")``: INT lowers the quantized
    program, FP lowers the float export.  Raises ``GeneratorBug`` (carrying the spec) naming the
    failing stage; returns a dict of the artefacts on success.
    """
    out = {}
    stage = "build"
    try:
        model, ex = spec.build()
        stage = "eager"
        with torch.no_grad():
            res = model(*ex)
        if check_finite and not all(bool(torch.isfinite(r).all()) for r in res):
            raise GeneratorBug("eager outputs are not finite", spec)
        stage = "export"
        ep = torch.export.export(model, ex)
        out["exported"] = ep
        if quantize_int or INT in lower_targets:
            stage = "quantize"
            out["quantized"] = quantize(model, ex, INT)
        for t in lower_targets:
            stage = f"lower {t}"
            if t == INT:
                out[t] = lower(out["quantized"], t)
            elif t == FP:
                out[t] = lower(torch.export.export(model, ex), t)
            else:
                raise ValueError(f"unknown target {t!r}")
    except GeneratorBug:
        raise
    except Exception as e:  # noqa: BLE001 - re-raised with the spec attached
        raise GeneratorBug(f"stage {stage!r} failed: {type(e).__name__}: {e}", spec) from e
    return out
