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


def test_replay_hands_a_crosscheck_reproducer_the_features_and_reference_sets_asked_for(divergent, monkeypatch, capsys):
    """`--features` and `--reference-sets` (once the options of the `verify.crosscheck replay`
    alias) reach the crosscheck replay; without them it replays as saved, with one reference run."""
    import verify.crosscheck.replay as crosscheck_replay
    from verify.report.reproducer import Replayed
    from verify.vocabulary import Verdict

    path, _ = divergent
    calls = []
    monkeypatch.setattr(crosscheck_replay, "replay",
                        lambda saved, features, reference_sets, out: calls.append((features, reference_sets))
                        or Replayed(Verdict.IDENTICAL))
    assert replay(path, "--features", "fakecache,gc", "--reference-sets", "0") == 0
    assert "features fakecache,gc" in capsys.readouterr().out
    assert replay(path) == 0
    assert "features skip,copy" in capsys.readouterr().out
    assert calls == [(("fakecache", "gc"), 0), (None, 1)]
    for bad in (["--features", "nosuch"], ["--features", ""], ["--reference-sets", "-1"]):
        assert replay(path, *bad) == 2, bad
        assert len(capsys.readouterr().err.strip().splitlines()) >= 1
    assert len(calls) == 2  # nothing replayed for a refused option


def test_crosscheck_options_are_refused_for_another_producers_reproducer(tmp_path, capsys):
    """`--features`/`--reference-sets` replay a crosscheck reproducer only: for a fuzz one they are
    one line, exit 2, nothing replayed (as `--pass`/`--stage` are for a crosscheck one)."""
    from verify.bench.models import random_graph
    from verify.report import reproducer
    from verify.report.reproducer import Manifest, Producer

    path = tmp_path / "graph.py"
    reproducer.save(path, Manifest(Producer.FUZZ, "tosa-int", (), None, graph=random_graph(2, 1).to_dict()), "")
    for option in (["--features", "copy"], ["--reference-sets", "0"]):
        assert verify_main(["replay", str(path), "--any-hash-seed", *option]) == 2
        captured = capsys.readouterr()
        err = captured.err.strip().splitlines()
        assert err[-1].startswith("verify replay: --features and --reference-sets replay a crosscheck reproducer; "), err
        assert "replaying" not in captured.out
