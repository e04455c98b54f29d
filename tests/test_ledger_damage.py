"""A damaged or missing proof ledger (fastpass/annotations/proofs.json): `fastpass.enabled()` refuses
with one fastpass error naming the file and what is wrong, every time, with nothing installed;
`python -m fastpass run` says that one line and exits 2; `trust="all"` needs no ledger; a missing
ledger warns once that every annotation runs stock.

Why: a traceback from json (or a KeyError) says nothing about which file to restore, and a second
`enabled()` that succeeded after the first refused let the damage surface inside a lowering,
blamed on an executorch pass. No lowering here: the refusal comes before any."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import fastpass
from fastpass.annotations import LedgerError, _proofs

ROOT = Path(__file__).resolve().parents[1]

VALID = {"format": _proofs.LEDGER_FORMAT, "gated_at": "test",
         "proven_against": {"machinery": "0" * 16, "executorch": "1", "torch": "2"}, "passes": {}}

DAMAGE = {
    "truncated": (json.dumps(VALID)[:40], "not valid JSON"),
    "empty": ("", "empty"),
    "invalid": ("{not json", "not valid JSON"),
    "a list": ("[]", "a JSON object"),
    "no proven_against": (json.dumps({k: v for k, v in VALID.items() if k != "proven_against"}), "proven_against"),
    "bad proven_against": (json.dumps({**VALID, "proven_against": {"machinery": "x"}}), "proven_against"),
    "no passes": (json.dumps({k: v for k, v in VALID.items() if k != "passes"}), "passes"),
    "bad verdict": (json.dumps({**VALID, "passes": {"a.B": {"verdict": "great", "claim": "c"}}}), "a.B"),
    "entry without claim": (json.dumps({**VALID, "passes": {"a.B": {"verdict": "sound"}}}), "a.B"),
}


@pytest.fixture
def ledger_at(tmp_path, monkeypatch):
    """Point fastpass at a ledger file of the test's own (read afresh), and forget it after."""
    path = tmp_path / "proofs.json"
    monkeypatch.setattr(_proofs, "LEDGER_PATH", path)
    monkeypatch.setattr(_proofs, "_LEDGER", None)
    monkeypatch.setattr(_proofs, "_warned_missing", False)
    monkeypatch.setattr(fastpass._patches, "_warned_stale", False)
    yield path
    assert not fastpass.is_enabled()
    _proofs.reload(_proofs.Path(_proofs.__file__).with_name("proofs.json"))


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_ledger_refuses_enable_the_same_way_every_time(ledger_at, damage):
    text, what = DAMAGE[damage]
    ledger_at.write_text(text)
    messages = []
    for _ in range(2):  # the second enabled() must not slip through
        with pytest.raises(LedgerError) as caught:
            with fastpass.enabled():
                pass
        assert not fastpass.is_enabled()
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert str(ledger_at) in messages[0] and what in messages[0], messages[0]
    assert "\n" not in messages[0]


def test_a_damaged_ledger_is_no_obstacle_to_trust_all(ledger_at):
    ledger_at.write_text("[]")
    with fastpass.enabled(trust="all"):
        assert fastpass.is_enabled()
    # ... and the status a lowering under trust="all" records for an annotation is unproven
    cls = _proofs.class_named("executorch.backends.arm._passes.decompose_linear_pass.DecomposeLinearPass")
    assert _proofs.status_of(cls) is _proofs.ProofStatus.UNPROVEN


def test_a_missing_ledger_warns_once_that_every_annotation_runs_stock(ledger_at):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            with fastpass.enabled():
                pass
    found = [str(w.message) for w in caught if str(ledger_at) in str(w.message)]
    assert len(found) == 1, [str(w.message) for w in caught]
    assert "stock" in found[0]


RUN_WITH_LEDGER = """
import sys
from pathlib import Path
from fastpass.annotations import _proofs
_proofs.LEDGER_PATH = Path(sys.argv[1])
from fastpass.__main__ import main
sys.exit(main(sys.argv[2:]))
"""


def test_fastpass_run_says_the_one_line_and_exits_2(tmp_path):
    ledger = tmp_path / "proofs.json"
    ledger.write_text('{"format": 1')
    script = tmp_path / "script.py"
    script.write_text("print('the script ran')\n")
    done = subprocess.run([sys.executable, "-c", RUN_WITH_LEDGER, str(ledger), "run", str(script)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and str(ledger) in lines[0] and lines[0].startswith("python -m fastpass run: "), lines


@pytest.mark.parametrize("wrapper", [("fastpass", "run"), ("verify", "crosscheck")])
def test_a_failing_script_shows_its_own_frames_not_the_wrappers(tmp_path, wrapper):
    """`python -m fastpass run SCRIPT` (and `verify crosscheck SCRIPT`) shows the traceback `python
    SCRIPT` would: from the script's own frame on, without fastpass/__main__.py and runpy above it."""
    script = tmp_path / "fails.py"
    script.write_text("def inner():\n    raise RuntimeError('the script failed')\n\ninner()\n")
    done = subprocess.run([sys.executable, "-m", *wrapper, "--trust", "all", str(script)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == plain.returncode == 1
    lines = done.stderr.splitlines()  # (torch's and torchao's import noise comes before it)
    shown = [line for line in lines[lines.index("Traceback (most recent call last):"):]
             if not line.startswith(("fastpass: ", "crosscheck: "))]
    assert shown == plain.stderr.splitlines(), done.stderr


@pytest.fixture
def damaged(ledger_at):
    ledger_at.write_text("[]")
    return ledger_at


def test_verify_run_refuses_a_damaged_ledger_before_any_case(damaged, tmp_path, capsys):
    """Not one error per case (each fastpass lowering would refuse it): one line, exit 2, no run folder."""
    from verify.cli import main as verify_main

    factory = tmp_path / "factory.py"
    factory.write_text("def make():\n    raise RuntimeError('never called: refused before')\n")
    out = tmp_path / "run"
    assert verify_main(["run", "--models", "none", "--model", f"{factory}:make", "--targets", "tosa-int",
                        "--null-seed", "-1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"verify: the proof ledger {damaged} is damaged" in err and not out.exists(), err


def test_verify_crosscheck_refuses_a_damaged_ledger_before_the_script_runs(damaged, tmp_path, capsys):
    from verify.cli import main as verify_main

    script = tmp_path / "script.py"
    script.write_text("print('the script ran')\n")
    assert verify_main(["crosscheck", "--reproducers", str(tmp_path / "r"), str(script)]) == 2
    captured = capsys.readouterr()
    assert "the script ran" not in captured.out
    assert f"verify crosscheck: the proof ledger {damaged} is damaged" in captured.err
    # ... and under --trust all it needs none
    assert verify_main(["crosscheck", "--trust", "all", "--reproducers", str(tmp_path / "r"), str(script)]) == 0
