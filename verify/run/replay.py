"""Replaying any reproducer (fuzz, gate, crosscheck): hand it to the producer that saved it.

The command is `python -m verify replay FILE` (verify.commands.replay): it reads the reproducer
and checks it (verify.report.trust's `read` and `authorize`: a reproducer is code), runs under
the hash seed it was found under (in a child process when this one runs under another), and
`replay` hands it to the replay of the producer that saved it (verify.fuzz.search,
verify.gate.run, verify.crosscheck.replay); the command says identical or divergent, with
the first divergent pass.
"""

from __future__ import annotations

from pathlib import Path

from verify.report.reproducer import Producer, Replayed, Reproducer, ReproducerError


def replay(saved: Reproducer, out: Path | None = None, pass_ref: str | None = None,
           stage: str | None = None) -> Replayed:
    """Replay `saved` in this process with its producer's replay (after `authorize`); what the
    replay saves (a crosscheck call that diverges again) goes to `out`. A gate reproducer is
    replayed with the pass `pass_ref` and on `stage` when given, else with those it names."""
    producer = saved.manifest.producer
    if producer is Producer.FUZZ:
        from verify.fuzz.search import replay as replay_graph

        return replay_graph(saved)
    if producer is Producer.GATE:
        from verify.gate.passes import PassRefError
        from verify.gate.run import replay_saved

        try:
            return replay_saved(saved, pass_ref, stage)
        except PassRefError as exc:  # the file's pass reference does not resolve (or is no pass)
            if pass_ref:  # the command line's reference, not the file's
                raise ReproducerError(f"--pass {pass_ref}: {exc}") from None
            raise ReproducerError(f"malformed gate reproducer {saved.path}: {exc}") from None
    from verify.crosscheck.replay import replay as replay_call

    return replay_call(saved, out=out)
