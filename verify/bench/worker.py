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
import time
from pathlib import Path


def program_digest(program) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(str(program.graph_module.graph).encode())
    for name, tensor in sorted(program.state_dict.items()):
        h.update(name.encode())
        h.update(tensor.detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()


def run(job: dict) -> dict:
    from verify.cases import build_model
    from verify.lowering.mode import Mode
    from verify.lowering.observe import observe_lowering
    from verify.lowering.quantize import export_program
    from verify.lowering.snapshot import GraphIds, take_snapshot
    from verify.lowering.targets import get_target

    target = get_target(job["target"])
    module, inputs = build_model(job["model"])
    program = export_program(module, inputs, target)
    digest = program_digest(program)
    partitioner = target.make_partitioner(target.make_spec())
    from executorch.exir import to_edge_transform_and_lower

    mode = Mode(job["mode"])
    mode_context = mode.context(tuple(job["features"]))
    fastpass = None
    if mode is Mode.FASTPASS:
        import fastpass

        fastpass.reset_stats()
    with observe_lowering(snapshots=False) as observation:
        # The timed region includes enabling and disabling fastpass: what a user pays.
        start = time.perf_counter()
        with mode_context:
            edge = to_edge_transform_and_lower(program, partitioner=[partitioner])
        lower_seconds = time.perf_counter() - start
    stats = fastpass.stats() if fastpass is not None else None
    graph_module = edge.exported_program().graph_module
    payloads = [hashlib.blake2b(bytes(m.processed_bytes), digest_size=16).hexdigest()
                for _, m in graph_module.named_modules() if hasattr(m, "processed_bytes")]
    steps = [s for s in observation.steps if s.index >= 0]
    per_pass = [{"label": s.label, "phase": s.phase, "manager": s.manager, "index": s.index, "pass": s.pass_name,
                 "seconds": s.seconds} for s in steps]
    return {
        "mode": mode.value, "features": job["features"], "program_digest": digest,
        "lower_seconds": lower_seconds,
        # the ARM pass pipeline: the passes each delegate's preprocess runs (every phase but the edge's)
        "pass_pipeline_seconds": sum(s.seconds for s in steps if s.phase != "edge"),
        "pass_invocations": len(per_pass), "per_pass": per_pass,
        "payload_digests": payloads, "delegate_tosa_digests": [
            hashlib.blake2b(t, digest_size=16).hexdigest() for t in observation.delegate_tosa],
        "final_graph_digest": take_snapshot(graph_module, GraphIds(), full_provenance=True).digest,
        "fastpass_stats": stats,
    }


if __name__ == "__main__":
    from verify.launcher import die_with_parent
    from verify.report.atomic import write_text

    die_with_parent()
    job = json.loads(Path(sys.argv[1]).read_text())
    write_text(Path(sys.argv[2]), json.dumps(run(job)))
