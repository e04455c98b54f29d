"""One timed lowering in a fresh process: the bench-lowering job's handler (`run_job`, run by
`python -m verify.jobs.worker`; its result a `verify.report.bench.results.WorkerRun` as JSON).

A fresh process per lowering, because the first lowering in a process also pays warm-up
(imports, caches) and a second one would flatter whichever mode ran second. The program is
quantized here, outside the timed region, from a seeded factory; its digest proves both
modes lowered the same quantized program.
"""

from __future__ import annotations

import hashlib
import logging
import resource
from pathlib import Path

from verify.report.bench.results import FastpassCounters, Memory, PassTiming, PeakScope, WorkerRun

log = logging.getLogger(__name__)


def program_digest(program) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(str(program.graph_module.graph).encode())
    for name, tensor in sorted(program.state_dict.items()):
        h.update(name.encode())
        h.update(tensor.detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()


def resident_bytes() -> int:
    """The process's resident set now (VmRSS), not its peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("/proc/self/status has no VmRSS line")


def peak_resident_bytes() -> int:
    """ru_maxrss of this process, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def reset_peak() -> PeakScope:
    """Reset the kernel's RSS high-water mark (Linux >= 4.0: `5` to /proc/self/clear_refs), so
    that ru_maxrss after the lowering is the lowering's own peak, not one left by building and
    quantizing the model. Where the kernel refuses, the peak covers the whole process, and the
    result says so."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError as exc:
        log.warning("cannot reset the peak RSS (%s): the peak reported is the process's", exc)
        return PeakScope.PROCESS
    return PeakScope.LOWERING if peak_resident_bytes() <= resident_bytes() + 4 * 1024 * 1024 else PeakScope.PROCESS


def run(job: dict) -> WorkerRun:
    """One lowering through verify.lowering.lower(), as every command lowers: no per-pass
    snapshots (they would dominate the timings), no reference runs, no serialization; the
    final graph's digest and the delegates' bytes still say that both modes produced the same.
    `lower_seconds` is lower()'s own clock: enabling and disabling fastpass included (what a
    user pays), the deep copy of the input not. The memory figures bracket the lower() call
    (its deep copy of the program included, in both modes)."""
    from verify.cases import build_model
    from verify.compare.digests import LoweringDigests
    from verify.lowering.lower import lower
    from verify.lowering.mode import Mode
    from verify.lowering.quantize import export_program
    from verify.lowering.targets import get_target

    target = get_target(job["target"])
    module, inputs = build_model(job["model"])
    program = export_program(module, inputs, target)
    digest = program_digest(program)
    mode = Mode(job["mode"])
    rss_before = resident_bytes()
    scope = reset_peak()
    result = lower(program, target, mode, tuple(job["features"]), snapshots=False, reference_sets=0,
                   final_snapshot=True, serialize=False)
    peak = peak_resident_bytes()
    if not result.ok:
        raise RuntimeError(f"{mode.value} lowering failed: {result.error}")
    steps = [s for s in result.observation.steps if s.index >= 0]
    identity = LoweringDigests.of(result)  # what the checks compare, as digests: the pair compares these
    return WorkerRun(
        mode=mode, features=tuple(job["features"]),
        lower_seconds=result.seconds,
        # the ARM pass pipeline: the passes each delegate's preprocess runs (every phase but the edge's)
        pass_pipeline_seconds=sum(s.seconds for s in steps if s.phase != "edge"),
        edge_pass_seconds=sum(s.seconds for s in steps if s.phase == "edge"),
        pass_invocations=len(steps),
        memory=Memory(rss_before, peak, scope),
        fastpass=None if result.fastpass_stats is None else FastpassCounters.from_stats(result.fastpass_stats),
        program_digest=digest,
        payload_digests=identity.payloads,
        delegate_tosa_digests=identity.delegate_tosa,
        final_graph_digest=identity.final_graph,
        per_pass=tuple(PassTiming(s.phase, s.manager, s.index, s.pass_name, s.seconds) for s in steps),
    )



def run_job(job: dict) -> dict:
    return run(job).to_json()
