"""`python -m verify peer` (`tox -e peer`): executorch's own Arm tests, three ways, test by test.

The peer campaign runs the Arm test suite shipped in the installed executorch wheel
(`backends/arm/test/`; `passes` by default, `ops`, `models` or any sub-path or test file through
the arguments) stock, with `--fastpass` and with `--fastpass=crosscheck` (verify/pytest_plugin.py),
each in its own pytest process with the same hash seed, and compares: every test must have the
same outcome (passed, failed, error, skipped, xfailed, xpassed) in every mode, and every
crosschecked lowering must be identical. A lowering that stock itself does not reproduce under
another node-set iteration order (verify.lowering.node_order) is listed as stock-nondeterministic:
it does not fail the run, and it is not counted identical. The suites, their files, a share of
them and what collects here are suites.py; the modes' pytest processes, their reports and
peer.json are campaign.py; the command is verify.commands.peer, the comparison's text
verify.report.peer.
"""
