"""Reports, the bottom layer every command writes through: how a verdict reads (`verdict.py`; the
verdict enums themselves are verify/vocabulary.py's, below compare/ and this package), a run case's result (`case.py`), crosscheck's summary (`crosscheck.py`),
run's table and reports (`table.py`, `files.py`), the gate's (`gate.py`), peer's (`peer.py`), the
fuzz campaign's pass coverage (`fuzz_coverage.py`), the one JSON writer
(`document.py`) and the one JUnit writer (`junit.py`: imported by nothing outside this package),
the one reproducer format, atomic writes, and `-v`/`-q` with the one logging configuration (`verbosity.py`). Why
at the bottom: every command, campaign and worker needs it, so it must need none of them -- it
imports nothing above it (the runner, the commands, the campaigns; tests/test_layering.py), only
the value types of verify.compare it prints; and compare imports nothing of it."""
