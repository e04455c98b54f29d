"""verify.peer's share and collection probe (issue 33, item 3): `--share [SUITE:]AMOUNT` runs a
seeded random share of a suite folder's test files — one seed, one share; a fresh seed per run
unless given; the seed and the files in peer.json; the same files in every mode; a budget of
tests bounds the files drawn — and a file that does not collect here (a module not installed)
is listed with its reason, not run.

The suites are tiny folders of our own (peer takes any path), never executorch's.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from verify.commands.peer import main as peer_main
from verify.commands.peer import share_arg
from verify.jobs import launcher
from verify.peer.suites import arm_test_root

GOOD = "def test_{name}_a():\n    pass\n\n\ndef test_{name}_b():\n    pass\n"


def make_folder(folder: Path, names: list[str]) -> Path:
    folder.mkdir(parents=True)
    for name in names:
        (folder / f"test_{name}.py").write_text(GOOD.format(name=name))
    return folder


def draw(amount: str, files: dict[Path, int], seed: int, suite: str = "ops") -> list[Path]:
    return share_arg(amount).draw(files, seed, suite)


FILES = {Path(f"ops/test_f{k:02}.py"): 1 + k % 7 for k in range(20)}  # test file -> tests it holds


def test_one_seed_one_share_another_seed_another():
    first = draw("5", FILES, 1)
    assert len(first) == 5 and first == sorted(first)
    assert draw("5", FILES, 1) == first, "the same seed draws the same files"
    assert draw("5", FILES, 2) != first, "another seed draws other files"
    assert draw("5", FILES, 1, "models") != first, "each suite its own draw"
    assert len(draw("0.25", FILES, 1)) == 5 and len(draw("0.01", FILES, 1)) == 1
    assert draw("1.0", FILES, 1) == draw("50", FILES, 1) == sorted(FILES)


def test_a_test_budget_draws_files_up_to_it():
    """ops files hold 1 to 585 tests: a budget of tests, not of files, bounds the time."""
    for seed in range(20):
        picked = draw("12tests", FILES, seed)
        total = sum(FILES[f] for f in picked)
        assert total <= 12 and all(total + FILES[f] > 12 for f in FILES if f not in picked), seed
    assert len({tuple(draw("12tests", FILES, seed)) for seed in range(20)}) > 1
    assert draw("1tests", {Path("a"): 5, Path("b"): 3}, 0) == [Path("b")], "none fits: the smallest alone"


def test_a_share_names_a_suite_given_and_a_valid_amount(tmp_path, capsys):
    suite = make_folder(tmp_path / "s", ["one"])
    for bad in ("0", "1.5", "0.0", "x", "ops:", "0tests", "tests"):
        with pytest.raises(SystemExit) as refused:
            peer_main([str(suite), "--share", bad])
        assert refused.value.code == 2, bad
    assert peer_main([str(suite), "--share", "elsewhere:0.5", "--out", str(tmp_path / "out")]) == 2
    assert "'elsewhere' is not one of the suites given" in capsys.readouterr().err
    assert not (tmp_path / "out").exists(), "refused before any run folder"


def test_the_share_is_recorded_run_alike_in_every_mode_and_what_does_not_collect_is_listed(tmp_path, capsys):
    """Two suites: `shared` (ten files, a share of 3) and `mixed` (no share): one good file, one
    importing a module not installed, one raising at import. Either bad file alone, collected by a
    mode, stops that mode's whole session before any test (pytest's collection error)."""
    launcher.reset_after_stop()
    shared = make_folder(tmp_path / "shared", [f"s{k}" for k in range(10)])
    mixed = make_folder(tmp_path / "mixed", ["good"])
    (mixed / "test_needs.py").write_text("import no_such_module_here\n\n\ndef test_needs():\n    pass\n")
    (mixed / "test_boom.py").write_text("raise RuntimeError('boom at import')\n\n\ndef test_boom():\n    pass\n")
    out = tmp_path / "out"
    args = [str(shared), str(mixed), "-n", "0", "--modes", "stock,fastpass", "--share", f"{shared}:3", "--out", str(out)]
    assert peer_main([*args, "--share-seed", "11"]) == 0
    printed = capsys.readouterr().out
    (run,) = out.iterdir()
    document = json.loads((run / "peer.json").read_text())

    # the suite's test files only: running it left a __pycache__ beside them (where bytecode is written)
    files = [f.name for f in draw("3", {f: 2 for f in shared.glob("test_*.py")}, 11, str(shared))]
    assert document["share_seed"] == 11 and "share seed 11" in printed
    assert document["shares"] == {str(shared): {"share": f"{shared}:3", "of_files": 10, "of_tests": 20, "tests": 6,
                                                "files": files}}
    # test ids are relative to peer's rootdir: the folder above the Arm tests and both suites
    rootdir = Path(os.path.commonpath([arm_test_root(), shared, mixed]))
    expected = {f"{p.relative_to(rootdir)}::test_{p.stem[5:]}_{x}" for p in
                [shared / f for f in files] + [mixed / "test_good.py"] for x in "ab"}
    for mode in ("stock", "fastpass"):
        outcomes = json.loads((run / f"{mode}.json").read_text())["outcomes"]
        assert set(outcomes) == expected and set(outcomes.values()) == {"passed"}, mode
    assert document["not_runnable"] == {
        str(mixed / "test_boom.py"): "does not collect here: RuntimeError: boom at import",
        str(mixed / "test_needs.py"): "not runnable here: no_such_module_here missing"}
    assert f"  {mixed / 'test_needs.py'}: not runnable here: no_such_module_here missing" in printed

    # no seed given: a fresh one per run, printed and recorded
    assert peer_main([*args, "--modes", "stock"]) == 0
    assert peer_main([*args, "--modes", "stock"]) == 0
    printed = capsys.readouterr().out
    seeds = [json.loads((r / "peer.json").read_text())["share_seed"] for r in sorted(out.iterdir()) if r != run]
    assert len(seeds) == 2 and seeds[0] != seeds[1]
    assert sorted(re.findall(r"share seed (\d+)", printed)) == sorted(str(s) for s in seeds)
