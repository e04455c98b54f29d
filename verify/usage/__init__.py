"""Bad usage, told apart from a finding: `python -m verify` turns a UsageError into one line on
stderr and exit status 2 (a divergence or a failed case is 1), before any work is done.

The package holds what refuses bad usage before any work, at the bottom of verify (every layer may
raise a UsageError): `output_paths` (every path a command will write, checked first; the writers'
`CannotWrite` when the file system refuses one later) and `references` (a `where:name` model or
pass reference read on its face, without importing it)."""


class UsageError(Exception):
    """The command line asks for something that cannot be done; the message says what, in one line."""
