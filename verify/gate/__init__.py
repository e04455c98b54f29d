"""The annotation gate: prove `targeted_ops` annotations skip- and copy-sound, pass by pass.

    passes.py   which passes (annotated registry, module:Class / file.py:Class, --changed-since),
                and `only(...)`: neutralise every other pass's annotation for a check
    graphs.py   per-pass biased Hypothesis strategies over generators.random graphs
    aim.py      the ops a pass's code reaches (aliases, imports under other names, literal getattr)
    evidence.py a drawn graph's structural key: only distinct graphs count as evidence
    check.py    one example: pipeline (stock vs fastpass lowering, verify.compare) or direct
                (the pass alone on an edge/ATen graph, harness snapshot checks)
    run.py      the drivers (a pass's check; the whole registry; the quantizer's pipeline) and how
                their outcome becomes a verdict per pass (judge; an unfinished check an error)
    search.py   the search engine: Hypothesis drawing and shrinking, a stage's search of all its
                passes at once, pinning a divergence on its pass, the top-up for passes short of evidence
    plan.py     a registry run's stage plan: each stage's search (passes, seed, vocabulary, time share),
                its result, and the results merged into one verdict per pass (free of torch)
    reproducer.py  a divergence's reproducer, written and replayed (`verify replay`)
    workers.py  each pass's check (run.gate_pass) in a worker via verify.jobs.launcher, -j N at a time
    worker.py   the job handlers (verify.jobs): a pass's check or a stage's search, verdicts as JSON
    events.py   the worker's log records relayed to the gate's terminal while it runs
    infer.py    `infer`: the minimal copy-sound targeted_ops a pass actually needs
    campaign.py a `verify gate` run: which passes, their checks spread over workers, an unfinished
                check an error (the command line: verify/commands/gate.py)
    stages.py   the stages' names, graphs and pipelines (free of torch: the command checks them first)
    op_names.py the vocabulary's op names, free of torch (the command checks --ops first; a test keeps them equal)
    verdict.py  what a verdict rests on: the one place that says what `sound` means
    ledger.py   the proof ledger (fastpass/annotations/proofs.json) written from a passing run
    selftest.py `verify selftest`: the gate's mutation score on wrong annotations derived from the registry
"""
