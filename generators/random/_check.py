"""check_buildable: export / quantize (INT) / lower a spec, raising GeneratorBug on failure."""

from __future__ import annotations

import torch

from ._spec import GraphSpec
from ._strategy import GeneratorBug

INT = "TOSA-1.0+INT"
FP = "TOSA-1.0+FP"


# The TOSA specs check_buildable takes, and the harness target that builds each: a graph is
# buildable when the harness's own recipe (verify.lowering: quantizer, calibration,
# partitioner) takes it, not a second copy of that recipe kept here.
_HARNESS_TARGET = {INT: "tosa-int", FP: "tosa-fp"}


def _target(spec: str):
    from verify.lowering.targets import get_target

    if spec not in _HARNESS_TARGET:
        raise ValueError(f"unknown target {spec!r}; known: {', '.join(_HARNESS_TARGET)}")
    return get_target(_HARNESS_TARGET[spec])


def quantize(model, example_inputs, target: str = INT):
    """The harness's pt2e recipe (verify.lowering.quantize.export_program): the re-exported
    quantized ExportedProgram."""
    from verify.lowering.quantize import export_program

    return export_program(model, example_inputs, _target(target))


def lower(exported_program, target: str):
    from executorch.exir import to_edge_transform_and_lower

    harness_target = _target(target)
    partitioner = harness_target.make_partitioner(harness_target.make_spec())
    return to_edge_transform_and_lower(exported_program, partitioner=[partitioner])


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
                raise ValueError(f"unknown target {t!r}; known: {', '.join(_HARNESS_TARGET)}")
    except GeneratorBug:
        raise
    except Exception as e:  # noqa: BLE001 - re-raised with the spec attached
        raise GeneratorBug(f"stage {stage!r} failed: {type(e).__name__}: {e}", spec) from e
    return out
