"""Replay a saved divergent call: make it again under crosscheck, stock then fastpass, and say
what the records found -- for `python -m verify replay` (verify.commands.replay; `--features`, `--reference-sets`) and the
fresh-process recheck (`run_job`, the crosscheck-replay job's
handler: verify.crosscheck.fresh).

It sits above the session (it opens one with `crosscheck`), while the saving and loading of the
call (verify.crosscheck.reproducer) sits below it: a session saves its divergent calls.
"""

from __future__ import annotations

from pathlib import Path

from verify.crosscheck import crosscheck
from verify.crosscheck.reproducer import load_call
from verify.report.reproducer import Replayed, Reproducer, load
from verify.vocabulary import Verdict


def replay(saved: Reproducer, features: tuple[str, ...] | None = None, reference_sets: int = 1,
           out: Path | None = None) -> Replayed:
    """Make the saved call again under crosscheck (stock, then fastpass with `features`, default:
    the ones it was saved under) and report what the crosscheck records say. A call that diverges
    again is saved as a reproducer in `out` (default: `replayed/` beside the input, for the
    harness's own fresh rechecks of the reproducers it just saved; the commands pass their own)."""
    call = load_call(saved)
    features = saved.manifest.features if features is None else features
    print(f"replaying {call.entry_point.value} from {call.context or saved.path}")
    with crosscheck(features=features, reference_sets=reference_sets,
                    reproducer_dir=saved.path.parent / "replayed" if out is None else out, fresh_recheck=False,
                    trust=saved.manifest.settings.get("trust", "proven")) as session:
        session.context = f"replay of {saved.path.name}"
        with call.lowering_context():
            try:
                call.call()
            except Exception as exc:  # noqa: BLE001 - stock failing is reported, its verdict still stands
                print(f"stock call raised: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    for record in session.records:
        print(record.describe())
        for name, check in record.failed_checks.items():
            for line in check.details[:5]:
                print(f"  {name}: {line}")
    if not session.records:
        return Replayed(Verdict.ERROR, details=("nothing was crosschecked (the saved call made no lowering)",))
    divergent = [r for r in session.records if r.divergent]
    if divergent:
        first = divergent[0].first_divergence
        return Replayed(Verdict.DIVERGENT, first.label if first else None)
    unchecked = [r for r in session.records if r.verdict is Verdict.UNCHECKED]
    if unchecked:  # not compared: never taken for identical
        return Replayed(Verdict.UNCHECKED, details=(unchecked[0].unchecked_reason or "not compared",))
    unstable = [r for r in session.records if r.stock_nondeterministic]
    if unstable:
        first, recheck = unstable[0].first_divergence, unstable[0].order_recheck
        return Replayed(Verdict.NONDETERMINISTIC, first.label if first else None,
                        (recheck.describe(),) if recheck else ())
    return Replayed(Verdict.IDENTICAL)


def run_job(job: dict) -> dict:
    """The worker's handler: replay the reproducer `job["reproducer"]`; what was found (JSON)."""
    try:
        replayed = replay(load(Path(job["reproducer"])))
        return {"verdict": replayed.verdict.value, "first_divergent_pass": replayed.first_divergent_pass,
                "error": "; ".join(replayed.details) if replayed.verdict is Verdict.ERROR else None}
    except Exception as exc:  # noqa: BLE001 - written down for the parent, which reports it
        return {"verdict": Verdict.ERROR.value, "first_divergent_pass": None, "error": f"{type(exc).__name__}: {exc}"}
