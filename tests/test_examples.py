"""The README's recipe for lowering one's own model (issue 47): `examples/lower_my_model.py` is
the README's copy, word for word, and it runs as the README says, under `python -m fastpass run`,
writing a .pte. Why: a user had to read verify/lowering/targets.py and quantize.py to write that
script; a recipe no test runs rots with the next executorch API change."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "lower_my_model.py"


def _code_blocks(markdown: str, language: str) -> list[str]:
    blocks, current = [], None
    for line in markdown.splitlines(keepends=True):
        if current is None and line.rstrip() == f"```{language}":
            current = []
        elif current is not None and line.rstrip() == "```":
            blocks.append("".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def test_the_readme_recipe_is_the_example_script():
    """The README shows the script whole, less its module docstring (the commands to run it are
    beside the block), so the two cannot drift apart."""
    body = SCRIPT.read_text().split('"""', 2)[2].lstrip("\n")
    readme = (ROOT / "README.md").read_text()
    assert body in _code_blocks(readme, "python"), "README's 'Lowering your own model' block differs from " + str(SCRIPT)
    for command in ("python -m fastpass run examples/lower_my_model.py", "python -m verify crosscheck "
                    "examples/lower_my_model.py"):
        assert command in readme and command in SCRIPT.read_text()


def test_the_example_script_quantizes_and_lowers_its_model_under_fastpass_run(tmp_path):
    out = tmp_path / "my_model.pte"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "fastpass", "run", str(SCRIPT), str(out)], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert out.read_bytes()[4:8] == b"ET12"  # the ExecuTorch program's file identifier
    assert f"wrote {out}: {out.stat().st_size} bytes, 1 Ethos-U delegate(s)" in done.stdout
    assert "fastpass: " in done.stderr and " passes run, " in done.stderr  # fastpass was on: its stats at exit
