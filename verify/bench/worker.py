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


class MissingPartError(RuntimeError):
    """A part the lowering must have run was never timed: its timer no longer sees the call
    (executorch moved it), and its time would pass unnoticed as `other`."""


def timed_parts(result, target) -> dict[str, float | None]:
    """Each Part's exclusive seconds (verify.lowering.steps.Part; None: it did not run), checked:
    decompositions, the to_edge conversion and partitioning run in every lowering, the ARM
    pipeline's setup and TOSA serialization once a delegate was made, Vela once one was made for
    a Vela target."""
    from verify.lowering.steps import Part

    observed = result.observation.part_seconds
    expected = {Part.DECOMPOSITIONS, Part.TO_EDGE, Part.PARTITIONING}
    if result.payloads:
        expected |= {Part.PIPELINE_SETUP, Part.TOSA_SERIALIZATION}
        if target.compiles_with_vela:
            expected.add(Part.VELA)
    missing = sorted(part.value for part in expected if part not in observed)
    if missing:
        raise MissingPartError(f"{', '.join(missing)} never timed: the timer (verify/lowering/observe.py, "
                               "feature 'parts') no longer sees the call")
    return {part.value: observed.get(part) for part in Part}


def run(job: dict) -> WorkerRun:
    """One lowering through verify.lowering.lower(), as every command lowers: no per-pass
    snapshots (they would dominate the timings), no reference runs; its parts timed
    (`timed_parts`), and to_executorch() after it, timed apart (`to_executorch_seconds`, not in
    `lower_seconds`); the final graph's digest, the delegates' bytes and the .pte still say that
    both modes produced the same. `lower_seconds` is lower()'s own clock: enabling and disabling
    fastpass included (what a user pays), the deep copy of the input not. The memory figures
    bracket the lowering (its deep copy of the program included, in both modes; to_executorch()
    not: the peak is read as soon as the lowering call returns)."""
    from verify.cases import build_model
    from verify.compare.digests import LoweringDigests, digest as bytes_digest
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
    peaks: list[int] = []
    result = lower(program, target, mode, tuple(job["features"]), snapshots=False, reference_sets=0,
                   final_snapshot=True, serialize=True, parts=True, lowered=lambda: peaks.append(peak_resident_bytes()))
    peak = peaks[0] if peaks else peak_resident_bytes()
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
        parts=timed_parts(result, target),
        nested_step_seconds=result.observation.nested_step_seconds,
        to_executorch_seconds=result.to_executorch_seconds,
        pte_digest=None if result.program is None else bytes_digest(result.program),
        mode_switch_seconds=result.seconds - result.call_seconds,
    )


def run_job(job: dict) -> dict:
    return run(job).to_json()
