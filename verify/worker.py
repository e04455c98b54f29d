"""One process, one hash seed: build the model, quantize it once, lower it in each mode asked.

Run as `python -m verify.worker JOB.json` with PYTHONHASHSEED already set by the parent:
the hash seed must be fixed before the interpreter starts, which is why each seed gets
its own process. Both modes of one comparison run here, one after the other, on deep
copies of the same quantized program (measured: a second stock lowering in a process
gives the same bytes as the first; the test suite keeps that true).
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import time
import traceback
from pathlib import Path


def run_job(job: dict) -> None:
    out = Path(job["out_dir"])
    out.mkdir(parents=True, exist_ok=True)
    status: dict = {"hash_seed": os.environ.get("PYTHONHASHSEED"), "lowerings": []}

    def write_status() -> None:
        (out / f"{job['name']}.status.json").write_text(json.dumps(status, indent=1))

    from verify.cases import build_model
    from verify.lowering.lower import lower
    from verify.lowering.quantize import export_program
    from verify.lowering.targets import get_target

    try:
        target = get_target(job["target"])
        start = time.perf_counter()
        module, inputs = build_model(job["model"])
        program = export_program(module, inputs, target, job.get("calibration", "histogram"))
        status["prepare_seconds"] = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001
        status["prepare_error"] = f"{type(exc).__name__}: {exc}"
        status["prepare_traceback"] = traceback.format_exc()
        write_status()
        return
    for label, mode, features in job["lowerings"]:
        print(f"[worker] lowering {label} ({mode} {','.join(features)})", file=sys.stderr, flush=True)
        result = lower(program, target, mode, tuple(features), snapshots=job.get("snapshots", True),
                       reference_sets=job.get("reference_sets", 3), hash_seed=status["hash_seed"])
        with open(out / f"{job['name']}.{label}.pkl", "wb") as f:
            pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
        status["lowerings"].append({"label": label, "seconds": result.seconds, "error": result.error_type})
        write_status()
    write_status()


if __name__ == "__main__":
    run_job(json.loads(Path(sys.argv[1]).read_text()))
