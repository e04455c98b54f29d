"""`verify replay` writes what it writes (a crosscheck reproducer that diverges again is saved
anew) under a folder of its own, `--out` or one under verify-out/, never beside its input
(issue 47: it wrote `replayed/` next to the file, in the source tree for a test fixture)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from verify.cli import main as verify_main


@pytest.fixture(scope="module")
def divergent(tmp_path_factory):
    """A crosscheck reproducer of a call that diverges while the fault is planted: (path, fault)."""
    from tests.test_crosscheck import ClampModel, clamp_pass, fastpass_only_fault, rename_first_clamp, transform
    from verify.crosscheck import crosscheck

    import torch
    from executorch.exir import to_edge

    folder = tmp_path_factory.mktemp("input")
    program = to_edge(torch.export.export(ClampModel(), (torch.randn(2, 3),))).exported_program()
    fault = lambda: fastpass_only_fault(clamp_pass(), rename_first_clamp)  # noqa: E731
    with fault():
        with crosscheck(features=("skip", "copy"), reproducer_dir=folder) as session:
            transform(copy.deepcopy(program))
    [record] = session.records
    return Path(record.reproducer.path), fault


def replay(path: Path, *extra: str) -> int:
    return verify_main(["replay", str(path), "--any-hash-seed", "--trust", *extra])


def test_replay_writes_under_out_not_beside_its_input(divergent, tmp_path, capsys):
    path, fault = divergent
    out = tmp_path / "out"
    with fault():
        assert replay(path, "--out", str(out)) == 1
    assert not (path.parent / "replayed").exists()
    assert list(out.rglob("*.xcheck")), sorted(out.rglob("*"))
    assert str(out) in capsys.readouterr().err


def test_replay_defaults_to_a_folder_under_verify_out(divergent, tmp_path, monkeypatch, capsys):
    path, fault = divergent
    monkeypatch.chdir(tmp_path)
    with fault():
        assert replay(path) == 1
    assert not (path.parent / "replayed").exists()
    assert list((tmp_path / "verify-out" / "replay").rglob("*.xcheck"))


def test_replay_refuses_an_out_it_cannot_write_before_replaying(divergent, tmp_path, capsys):
    path, _ = divergent
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert replay(path, "--out", str(blocker / "out")) == 2
    err = capsys.readouterr().err
    assert "verify replay: --out" in err and "replaying" not in err
