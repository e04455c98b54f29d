"""One timed lowering in a fresh process: `python -m verify.bench.worker JOB.json OUT.json`.

A fresh process per lowering, because the first lowering in a process also pays warm-up
(imports, caches) and a second one would flatter whichever mode ran second. The program is
quantized here, outside the timed region, from a seeded factory; its digest proves both
modes lowered the same quantized program.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path


def program_digest(program) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(str(program.graph_module.graph).encode())
    for name, tensor in sorted(program.state_dict.items()):
        h.update(name.encode())
        h.update(tensor.detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()


def run(job: dict) -> dict:
    """One lowering through verify.lowering.lower(), as every command lowers: no per-pass
    snapshots (they would dominate the timings), no reference runs, no serialization; the
    final graph's digest and the delegates' bytes still say that both modes produced the same.
    `lower_seconds` is lower()'s own clock: enabling and disabling fastpass included (what a
    user pays), the deep copy of the input not."""
    from verify.cases import build_model
    from verify.lowering.lower import lower
    from verify.lowering.mode import Mode
    from verify.lowering.quantize import export_program
    from verify.lowering.targets import get_target

    target = get_target(job["target"])
    module, inputs = build_model(job["model"])
    program = export_program(module, inputs, target)
    digest = program_digest(program)
    mode = Mode(job["mode"])
    result = lower(program, target, mode, tuple(job["features"]), snapshots=False, reference_sets=0,
                   final_snapshot=True, serialize=False)
    if not result.ok:
        raise RuntimeError(f"{mode.value} lowering failed: {result.error}")
    steps = [s for s in result.observation.steps if s.index >= 0]
    per_pass = [{"label": s.label, "phase": s.phase, "manager": s.manager, "index": s.index, "pass": s.pass_name,
                 "seconds": s.seconds} for s in steps]
    return {
        "mode": mode.value, "features": job["features"], "program_digest": digest,
        "lower_seconds": result.seconds,
        # the ARM pass pipeline: the passes each delegate's preprocess runs (every phase but the edge's)
        "pass_pipeline_seconds": sum(s.seconds for s in steps if s.phase != "edge"),
        "pass_invocations": len(per_pass), "per_pass": per_pass,
        "payload_digests": [hashlib.blake2b(p.processed_bytes, digest_size=16).hexdigest() for p in result.payloads],
        "delegate_tosa_digests": [
            hashlib.blake2b(t, digest_size=16).hexdigest() for t in result.observation.delegate_tosa],
        "final_graph_digest": result.final.digest,
        "fastpass_stats": result.fastpass_stats,
    }


if __name__ == "__main__":
    from verify.launcher import die_with_parent
    from verify.report.atomic import write_text

    die_with_parent()
    job = json.loads(Path(sys.argv[1]).read_text())
    write_text(Path(sys.argv[2]), json.dumps(run(job)))
