"""Write the proof ledger (`fastpass/annotations/proofs.json`) from a passing gate run.

fastpass reads the ledger (fastpass.annotations._proofs) to decide which annotations it may use
under the default trust: only those the ledger calls `sound` for exactly their current claim,
machinery and versions. This module is the one writer: `python -m verify gate --record-gated`
calls `record` after a run in which no pass was unsound or errored, with that run's verdicts.

What an entry holds, per pass: the verdict and, when not `sound`, its reason; the digest of the
claim that was proven (`claim`); the annotation in words; the evidence per feature (examples,
examples with action, calls skipped, nodes copied, calls that ran, nodes dispatched); the
stages and the number of graphs. At the top: what the proofs hold for (`proven_against`:
fastpass's machinery digest, executorch and torch versions), the commit recorded, the gate's
settings and the counts by verdict. Written sorted with one key a line, so a re-proof reads as a
diff of what changed.

A run that gated only some passes (`--since-gated` after an annotation edit) updates their
entries and keeps the others, which stay valid: the machinery is unchanged (a machinery change
gates every pass) and their claims are unchanged (a changed claim is gated).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

from fastpass.annotations import LEDGER_PATH, Ledger, ProofStatus, ProvenAgainst, claim_digest, lookup
from verify.gate.verdict import PassVerdict
from verify.report import atomic


def entry_of(verdict: PassVerdict, cls: type | None) -> dict[str, Any]:
    """One pass's ledger entry from its gate verdict (`cls`: the pass class, for the claim digest)."""
    entry: dict[str, Any] = {
        "verdict": verdict.verdict.value,
        "claim": claim_digest(lookup(cls)) if cls is not None else "unresolved",
        "annotation": verdict.annotation,
        "stages": [s for s in verdict.stage.split(",") if s],
        "examples": verdict.examples,
        "evidence": {feature.value: {key: value for key, value in e.to_json().items()
                                     if key in ("examples", "examples_invoked", "examples_with_action", "skipped_calls",
                                                "copied_nodes", "calls_ran", "nodes_dispatched", "invocations",
                                                "upstream_skipped")}
                     for feature, e in sorted(verdict.evidence.items(), key=lambda item: item[0].value)},
    }
    if verdict.waived:
        entry["waived"] = {f.value: why for f, why in verdict.waived.items()}
    if verdict.verdict is not ProofStatus.SOUND or verdict.reason:
        entry["reason"] = verdict.reason
    return entry


def record(verdicts: Iterable[PassVerdict], classes: dict[str, type], settings: dict[str, Any], commit: str,
           annotated: Iterable[str], path: Path = LEDGER_PATH, partial: bool = False) -> dict[str, int]:
    """Merge a passing run's `verdicts` into the ledger at `path` and write it; returns the counts
    by verdict of the ledger written. `classes`: qualname -> class of the passes gated;
    `annotated`: the qualnames of every annotated pass now (entries of others are dropped);
    `partial`: a run of chosen passes (`--pass`), which leaves the ledger's `gated_at` (the
    revision whose every annotation was proven) as it was, and its entries keep their run's
    settings (`gate`; a whole run's are the ledger's). Either run keeps the ledger's record
    where it is stronger for the same claim (`_stronger`): a proof holds until its claim, the
    machinery or the versions change, and a later run that drew other graphs and saw fastpass
    act less does not undo it (a run that finds the claim unsound is never recorded). Every
    entry says the commit it was proven at (`proven_at`)."""
    verdicts = list(verdicts)
    if any(v.verdict.fails for v in verdicts):
        raise ValueError("the ledger records only a run in which no pass is unsound or errored")
    old_document = _old_document(path)
    keep = set(annotated)
    passes = {name: e for name, e in old_document.get("passes", {}).items() if name in keep}
    for v in verdicts:
        entry = {**entry_of(v, classes.get(v.qualname)), "proven_at": commit, **({"gate": settings} if partial else {})}
        old = passes.get(v.qualname)
        if old is not None and _stronger(old, entry):
            # a run that proved less does not take back a proof of the same claim against the
            # same machinery and versions (`_old_document` holds only such proofs): the proof
            # stays, with the settings of the run that made it
            passes[v.qualname] = old if "gate" in old or partial else {**old, "gate": old_document.get("gate", {})}
            continue
        passes[v.qualname] = entry
    counts = Counter(e["verdict"] for e in passes.values())
    document = {
        "format": Ledger.FORMAT,
        "gated_at": old_document.get("gated_at", "") if partial else commit,
        "proven_against": ProvenAgainst.now().to_json(),
        "gate": settings if not partial else old_document.get("gate", {}),
        "counts": dict(sorted(counts.items())),
        "passes": dict(sorted(passes.items())),
    }
    atomic.write_text(path, json.dumps(document, indent=1, sort_keys=True, default=str) + "\n")
    return dict(counts)


def _stronger(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Is `old` the better record of the same claim than `new`: `new` is not sound, and `old`
    is, or rests on more examples with evidence (its weakest feature's). Why: a run with fewer
    or other graphs (a `--pass` run's one stage and 30 graphs; a registry run whose draws
    changed) that did not make fastpass act proves nothing against a run that did; only a
    failing verdict would, and that is never recorded."""
    if old.get("claim") != new.get("claim") or new["verdict"] == ProofStatus.SOUND.value:
        return False

    def weakest(entry: dict[str, Any]) -> int:
        counts = [e.get("examples_with_action", 0) for e in entry.get("evidence", {}).values()]
        return min(counts) if counts else 0

    return old["verdict"] == ProofStatus.SOUND.value or weakest(old) > weakest(new)


def _old_document(path: Path) -> dict[str, Any]:
    """The ledger at `path` as written (empty if there is none, or it was proven against other
    machinery or versions: then nothing in it holds)."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    if data.get("format") != Ledger.FORMAT or data.get("proven_against") != ProvenAgainst.now().to_json():
        return {}
    return data

