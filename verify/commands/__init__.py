"""The command line's commands, one module each (`python -m verify run` and `report` in run.py,
`gate` and `infer` in gate.py, `selftest`, `bench`, `replay`, `fuzz`, `peer`, `crosscheck`): each only parses
its options, refuses bad usage in one line before any work (verify.usage.UsageError, exit 2) and
hands the work to the layer below it -- a campaign (the run campaign, the gate's, the bench, the
fuzz campaign, the gate's self-test, peer's pytest runs, a reproducer's producer) or a session (crosscheck) -- and its
results to verify.report. Each module's `add_parser(sub)` registers it with `python -m verify`
(verify.cli.main; run.py's `add_report_parser`, `report`; gate.py's `add_parsers`, `gate` and
`infer`); `arguments.py` parses the option values several commands share."""
