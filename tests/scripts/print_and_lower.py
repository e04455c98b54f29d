"""A user's script that prints before and after it lowers (tests/scripts/lower_tiny.py): its stdout
must be the same under `python`, `python -m fastpass run` and `python -m verify crosscheck`. The
first line is still in the stdout buffer (a pipe is block-buffered) when the harness forks its
reference-model child."""

import runpy
from pathlib import Path

print("before the lowering")
runpy.run_path(str(Path(__file__).with_name("lower_tiny.py")), run_name="__main__")
