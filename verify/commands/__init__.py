"""The command line's newer commands, one module each (`python -m verify fuzz`, `peer`,
`crosscheck`): each only parses its options, refuses bad usage in one line before any work
(verify.usage.UsageError, exit 2) and hands the work to the layer below it -- a campaign (the
fuzz campaign, peer's pytest runs) or a session (crosscheck) -- and its results to verify.report.
Each module's `add_parser(sub)` registers it with `python -m verify` (verify.cli.main);
`arguments.py` parses the option values several commands share."""
