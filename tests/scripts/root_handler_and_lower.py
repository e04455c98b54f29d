"""A user's script that puts a handler on the root logger (`logging.basicConfig`, as a stock
Ethos-U lowering's libraries may too) and then lowers (tests/scripts/lower_tiny.py): under
`python -m verify crosscheck` each of crosscheck's lines must appear once, not once more through
the root's handler, and stdout stays the script's own."""

import logging
import runpy
from pathlib import Path

logging.basicConfig()
print("root handler installed")
runpy.run_path(str(Path(__file__).with_name("lower_tiny.py")), run_name="__main__")
