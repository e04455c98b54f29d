"""Bad usage, told apart from a finding: `python -m verify` turns a UsageError into one line on
stderr and exit status 2 (a divergence or a failed case is 1), before any work is done."""


class UsageError(Exception):
    """The command line asks for something that cannot be done; the message says what, in one line."""
