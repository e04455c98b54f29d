"""A run folder that survives torn journals, concurrent use and a full disk (issue 32, 1-6).

Each test reproduces one way a run folder was bricked, shared or lost its reports; the numbers
are the issue's. Most run the CLI in this process with `run_case` replaced by a fake that
finishes a case at once (the folder, the journal, the lock and the reports are what is under
test, not the lowering); one runs a real worker on the tiny model.

A full disk is simulated by `FullDisk`: every write to a file under one folder — through
os.write, os.pwrite, a file from os.fdopen or open() — gets `room` more bytes, then
OSError(ENOSPC), as a real full file system answers (a short write, then the error). Creating an
empty file still works there, as it does on a full disk. With `refuse=errno.EACCES` creating a
file there fails instead (we may run as root, for whom a chmod'ed folder refuses nothing).
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import io
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.test_reliability import CHEAP, ROOT, TINY, cli_main, environment, finished_cases, run_verify
from tests.waiting import wait_for

TINY_PATH = str(ROOT / TINY)


class FullDisk:
    """The file system under `folder` is full once `room` more bytes are written (None: not yet)."""

    def __init__(self, folder: Path, room: int | None = 0, refuse: int | None = None):
        self.folder = Path(os.path.realpath(folder))
        self.room = room
        self.refuse = refuse  # an errno: creating a file under the folder fails with it

    def covers(self, path: str | os.PathLike) -> bool:
        return Path(os.path.realpath(path)).is_relative_to(self.folder)

    def covers_fd(self, fd: int) -> bool:
        try:
            return self.covers(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            return False

    def take(self, wanted: int) -> int:
        """How many of `wanted` bytes fit; none fitting is ENOSPC."""
        if self.room is None or wanted == 0:
            return wanted
        if self.room == 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        given = min(wanted, self.room)
        self.room -= given
        return given

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FullDisk:
        real_write, real_pwrite, real_fdopen, real_open, real_os_open = os.write, os.pwrite, os.fdopen, builtins.open, os.open
        disk = self

        class FullFileIO(io.FileIO):
            def write(self, data) -> int:
                return super().write(memoryview(data)[:disk.take(len(data))])

        def wrap(raw: io.FileIO, mode: str, encoding: str | None):
            buffered = io.BufferedRandom(raw) if "+" in mode else io.BufferedWriter(raw)
            return buffered if "b" in mode else io.TextIOWrapper(buffered, encoding=encoding or "utf-8")

        def writes(mode: str) -> bool:
            return any(c in mode for c in "wax+")

        def write(fd, data):
            if disk.covers_fd(fd):
                return real_write(fd, memoryview(data)[:disk.take(len(data))])
            return real_write(fd, data)

        def pwrite(fd, data, offset):
            if disk.covers_fd(fd):
                return real_pwrite(fd, memoryview(data)[:disk.take(len(data))], offset)
            return real_pwrite(fd, data, offset)

        def fdopen(fd, mode="r", buffering=-1, encoding=None, *args, **kwargs):
            if writes(mode) and disk.covers_fd(fd):
                return wrap(FullFileIO(fd, mode.replace("b", "").replace("t", "")), mode, encoding)
            return real_fdopen(fd, mode, buffering, encoding, *args, **kwargs)

        def open_(file, mode="r", buffering=-1, encoding=None, *args, **kwargs):
            if isinstance(file, (str, os.PathLike)) and writes(mode) and disk.covers(file):
                if disk.refuse is not None:
                    raise OSError(disk.refuse, os.strerror(disk.refuse), str(file))
                return wrap(FullFileIO(file, mode.replace("b", "").replace("t", "")), mode, encoding)
            return real_open(file, mode, buffering, encoding, *args, **kwargs)

        def os_open(path, flags, mode=0o777, *args, **kwargs):
            if disk.refuse is not None and flags & os.O_CREAT and disk.covers(path):
                raise OSError(disk.refuse, os.strerror(disk.refuse), str(path))
            return real_os_open(path, flags, mode, *args, **kwargs)

        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(os, "pwrite", pwrite)
        monkeypatch.setattr(os, "fdopen", fdopen)
        monkeypatch.setattr(builtins, "open", open_)
        monkeypatch.setattr(os, "open", os_open)
        return self


def fake_cases(monkeypatch: pytest.MonkeyPatch, during=None) -> list:
    """Replace run_case with one that finishes each case `identical` at once; returns the list of
    cases it ran. `during(case)` runs inside each case (another process's turn, a disk filling up)."""
    from verify.run import runner
    from verify.report import table
    from verify.vocabulary import Verdict

    ran = []

    def run_case(case, options):
        ran.append(case)
        case_dir = runner._new_case_dir(options.out_dir, case.slug)
        if during is not None:
            during(case)
        return runner.CaseReport(case.model, case.target, Verdict.IDENTICAL, artifacts=str(case_dir),
                                 wall_seconds=0.01)

    monkeypatch.setattr(runner, "run_case", run_case)
    # table.progress binds sys.stderr when imported: the stream of whichever test imported it first
    real_progress = table.progress
    monkeypatch.setattr(table, "progress", lambda event, case, report: real_progress(event, case, report, sys.stderr))
    return ran


def new_run(*args: str) -> tuple[str, ...]:
    return ("run", "--models", "none", "--model", TINY_PATH, *CHEAP, *args)


def journal_lines(run_dir: Path) -> list[dict]:
    """Every line of the journal, each of which must be JSON."""
    return [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]


def temporaries(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.tmp"))


def started_journal(run_dir: Path, targets: tuple[str, ...] = ("tosa-int", "tosa-fp"), finished: int = 0):
    """A run's journal as `run` writes it: the cheap options, `finished` of the cases done."""
    from verify.report.case import Case
    from verify.run.journal import Journal
    from verify.run.runner import RunOptions
    from verify.vocabulary import Verdict
    from verify.report.case import CaseReport

    options = RunOptions(null_seed=None, reference_sets=0, out_dir=run_dir)
    cases = [Case(TINY_PATH, t) for t in targets]
    run_dir.mkdir(parents=True, exist_ok=True)
    journal = Journal(run_dir)
    journal.start(options.to_json(), cases, {"features": "all"})
    for case in cases[:finished]:
        journal.case(CaseReport(case.model, case.target, Verdict.IDENTICAL, wall_seconds=0.01).to_json())
    return journal


def report_of(journal_json: dict) -> list[tuple[str, str]]:
    return [(c["target"], c["verdict"]) for c in journal_json["cases"]]


# 1. A torn journal line bricked the run folder: --resume appended onto the torn bytes.

TORN = '{"record": "case", "model": "n", "tar'


def test_an_append_after_a_torn_line_cuts_it_off_first(tmp_path):
    from verify.run.journal import read_journal

    journal = started_journal(tmp_path, finished=1)
    with open(journal.path, "a") as f:
        f.write(TORN)  # killed mid-write
    journal.resumed()
    journal.case({"model": TINY_PATH, "target": "tosa-fp", "verdict": "identical"})
    assert [line["record"] for line in journal_lines(tmp_path)] == ["run", "case", "resumed", "case"]
    assert [c["target"] for c in read_journal(tmp_path).cases] == ["tosa-int", "tosa-fp"]


def test_a_whole_last_record_missing_only_its_newline_is_kept(tmp_path):
    journal = started_journal(tmp_path)
    with open(journal.path, "a") as f:
        f.write(json.dumps({"record": "case", "model": TINY_PATH, "target": "tosa-int", "verdict": "identical"}))
    journal.resumed()
    assert [line["record"] for line in journal_lines(tmp_path)] == ["run", "case", "resumed"]


def test_a_journal_glued_by_an_earlier_version_is_read_and_garbage_is_not(tmp_path):
    from verify.run.journal import JournalError, read_journal

    journal = started_journal(tmp_path, finished=1)
    case = json.dumps({"record": "case", "model": TINY_PATH, "target": "tosa-fp", "verdict": "identical"})
    with open(journal.path, "a") as f:
        f.write(TORN + '{"record": "resumed"}\n' + case + "\n")  # what the old --resume left
    contents = read_journal(tmp_path)
    assert [c["target"] for c in contents.cases] == ["tosa-int", "tosa-fp"]

    with open(journal.path, "a") as f:
        f.write('not a record {"record": "resumed"}\n' + case + "\n")
    with pytest.raises(JournalError, match="line 5 is not JSON"):
        read_journal(tmp_path)


def test_resume_and_report_after_a_torn_journal_line(tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / "run"
    journal = started_journal(run_dir, finished=1)
    with open(journal.path, "a") as f:
        f.write(TORN)
    ran = fake_cases(monkeypatch)
    assert cli_main("run", "--resume", str(run_dir)) == 0, capsys.readouterr().err
    assert [c.target for c in ran] == ["tosa-fp"]
    assert [line["record"] for line in journal_lines(run_dir)] == ["run", "case", "resumed", "case"]
    assert cli_main("report", "--from", str(run_dir)) == 0
    assert cli_main("run", "--resume", str(run_dir)) == 0 and len(ran) == 1  # nothing left to run


# 2./3. Two runs in one --out, two --resume of one folder: both ran; records interleaved.

def test_a_second_run_in_the_same_out_is_refused_while_the_first_draws_its_graphs(tmp_path, monkeypatch, capsys):
    from verify.run import folder

    run_dir = tmp_path / "run"
    second = []

    def drawing(count, seed, folder):  # the window between "holds no run" and the journal's start
        second.append(cli_main(*new_run("--targets", "tosa-fp", "--out", str(run_dir))))
        return []

    monkeypatch.setattr(folder, "_random_models", drawing)
    fake_cases(monkeypatch)
    assert cli_main(*new_run("--targets", "tosa-int", "--random", "1", "--out", str(run_dir))) == 0
    err = capsys.readouterr().err
    assert second == [2], err
    refusal = [line for line in err.splitlines() if "in use" in line]
    assert refusal == [f"verify: --out {run_dir} is in use by verify run (pid {os.getpid()} on "
                       f"{socket.gethostname()}, since {refusal[0].split('since ')[1].split(')')[0]}); "
                       "wait for it to end or use another folder"], err
    assert [line["record"] for line in journal_lines(run_dir)] == ["run", "case"]
    assert report_of(json.loads((run_dir / "report.json").read_text())) == [("tosa-int", "identical")]
    assert cli_main(*new_run("--targets", "tosa-int", "--out", str(run_dir))) == 2  # after it: holds a run
    assert "holds a run already" in capsys.readouterr().err


def test_a_second_resume_of_the_same_folder_is_refused(tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / "run"
    started_journal(run_dir)
    second = []
    ran = fake_cases(monkeypatch, during=lambda case: second or second.append(
        cli_main("run", "--resume", str(run_dir))))
    assert cli_main("run", "--resume", str(run_dir)) == 0
    err = capsys.readouterr().err
    assert second == [2] and f"--resume {run_dir} is in use by verify run --resume (pid {os.getpid()}" in err, err
    assert [c.target for c in ran] == ["tosa-int", "tosa-fp"]  # each case once
    assert [c["target"] for c in finished_cases(run_dir)] == ["tosa-int", "tosa-fp"]
    assert sorted(p.name for p in run_dir.iterdir() if p.is_dir()) == sorted(c.slug for c in ran)


def test_the_lock_names_its_holder_and_goes_with_it(tmp_path, capsys):
    """Another process holds the folder: run, resume and report are refused naming it; when it is
    killed (no chance to clean up) the folder is free again."""
    run_dir = tmp_path / "run"
    started_journal(run_dir, finished=2)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from verify.run.journal import locked_run_folder
        with locked_run_folder({str(run_dir)!r}, "verify run"):
            print("locked", flush=True)
            time.sleep(600)
        """)], env=environment(), stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        for args in (("run", "--resume", str(run_dir)), ("report", "--from", str(run_dir)),
                     new_run("--out", str(run_dir))):
            assert cli_main(*args) == 2, args
            err = capsys.readouterr().err
            assert f"is in use by verify run (pid {holder.pid} on {socket.gethostname()}, since " in err, err
            assert len(err.strip().splitlines()) == 1, err
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert cli_main("report", "--from", str(run_dir)) == 0


# 4. A full disk mid-run: cases blamed, a torn journal line, traceback, no --json/--junit, a .tmp.

def test_a_failed_append_leaves_the_journal_as_it_was(tmp_path, monkeypatch):
    from verify.usage.output_paths import CannotWrite

    journal = started_journal(tmp_path, finished=1)
    before = journal.path.read_bytes()
    FullDisk(tmp_path, room=40).install(monkeypatch)
    with pytest.raises(CannotWrite) as refused:
        journal.case({"model": TINY_PATH, "target": "tosa-fp", "verdict": "identical"})
    assert str(refused.value) == f"cannot write {journal.path}: No space left on device"
    assert journal.path.read_bytes() == before


def test_a_full_disk_mid_run_stops_it_resumably_and_writes_the_other_reports(tmp_path, monkeypatch, capsys):
    run_dir, healthy = tmp_path / "run", tmp_path / "healthy"
    disk = FullDisk(run_dir, room=None)
    ran = fake_cases(monkeypatch, during=lambda case: len(ran) == 2 and setattr(disk, "room", 50))  # in case 2
    disk.install(monkeypatch)
    code = cli_main(*new_run("--targets", "tosa-int,tosa-fp", "--out", str(run_dir),
                             "--json", str(healthy / "r.json"), "--junit", str(healthy / "j.xml")))
    err = capsys.readouterr().err
    assert code == 1, err
    assert "Traceback" not in err
    assert f"verify: cannot write {run_dir / 'report.json'}: No space left on device" in err.splitlines()
    assert (f"verify: cannot write {run_dir / 'journal.jsonl'}: No space left on device; the run stopped with "
            f"1 of 2 case(s) finished; resume with: python -m verify run --resume {run_dir}") in err.splitlines()
    document = json.loads((healthy / "r.json").read_text())
    assert report_of(document) == [("tosa-int", "identical")] and document["run"]["complete"] is False
    suite = ET.parse(healthy / "j.xml").getroot()
    assert (suite.get("tests"), suite.get("errors")) == ("2", "1")
    assert [line["record"] for line in journal_lines(run_dir)] == ["run", "case"]  # no torn line
    assert temporaries(run_dir) == []

    disk.room = None  # space freed
    assert cli_main("run", "--resume", str(run_dir)) == 0
    assert [c.target for c in ran] == ["tosa-int", "tosa-fp", "tosa-fp"]
    assert report_of(json.loads((run_dir / "report.json").read_text())) == [("tosa-int", "identical"),
                                                                            ("tosa-fp", "identical")]


def test_a_refused_harness_write_stops_the_run_instead_of_failing_the_case(tmp_path, monkeypatch):
    """The harness's own writes in a case (the job file, the worker's log) refused: the run stops;
    the case is not recorded as an error that --resume would skip."""
    from verify.jobs import launcher
    from verify.run import runner
    from verify.report.case import Case
    from verify.usage.output_paths import CannotWrite

    def launch(module, args, *, log_path, **kwargs):
        open(log_path, "a").close()  # as the launcher opens the worker's log
        return 0

    monkeypatch.setattr(launcher, "launch", launch)
    run_dir, case = tmp_path / "run", Case(TINY_PATH, "tosa-int")
    options = runner.RunOptions(out_dir=run_dir, null_seed=None)
    with monkeypatch.context() as patch:
        FullDisk(run_dir).install(patch)
        with pytest.raises(CannotWrite, match=r"cannot write \S*pinned\.job\.json: No space left on device"):
            runner.run_cases([case], options)
    log = run_dir / f"{case.slug}.2" / "pinned.log"
    FullDisk(log, room=None, refuse=errno.EACCES).install(monkeypatch)
    with pytest.raises(CannotWrite, match=f"cannot write {log}: Permission denied"):
        runner.run_cases([case], options)
    assert temporaries(run_dir) == []


@pytest.mark.slow
def test_a_full_disk_in_a_worker_stops_the_run_and_the_case_runs_on_resume(tmp_path):
    """The real worker: its output refused with ENOSPC (FullDisk, installed by the model's factory
    while a marker file says the disk is full). It used to end `worker exited with code 1`, an
    error case that --resume skipped."""
    run_dir, marker = tmp_path / "run", tmp_path / "disk-is-full"
    model = tmp_path / "fills_the_disk.py"
    model.write_text(textwrap.dedent(f"""
        from pathlib import Path
        import pytest
        from tests.models.tiny import make as tiny
        from tests.test_reliability_run import FullDisk

        def make():
            if Path({str(marker)!r}).exists():
                FullDisk(Path({str(run_dir)!r})).install(pytest.MonkeyPatch())
            return tiny()
        """))
    marker.touch()
    full = run_verify("run", "--models", "none", "--model", f"{model}:make", "--targets", "tosa-int",
                      "--second-mode", "stock", *CHEAP, "--out", str(run_dir), "--json", str(tmp_path / "r.json"))
    assert full.returncode == 1, full.stdout + full.stderr
    assert "Traceback" not in full.stderr
    (case_dir,) = [p for p in run_dir.iterdir() if p.is_dir()]
    assert f"verify: cannot write {case_dir}: worker pinned could not write its output" in full.stderr
    assert "resume with: python -m verify run --resume" in full.stderr
    assert finished_cases(run_dir) == [] and temporaries(run_dir) == []
    assert json.loads((tmp_path / "r.json").read_text())["run"]["complete"] is False

    marker.unlink()  # space freed
    resumed = run_verify("run", "--resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert [c["verdict"] for c in finished_cases(run_dir)] == ["identical"]


def _tmpfs_available() -> bool:
    """A tmpfs of our own, in a user and mount namespace: possible without privileges on most
    Linux machines, not on all (then the FullDisk tests above stand alone)."""
    try:
        return subprocess.run(["unshare", "-rm", "mount", "-t", "tmpfs", "-o", "size=64k", "none", "/mnt"],
                              capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@pytest.mark.slow
@pytest.mark.skipif(not _tmpfs_available(), reason="no unprivileged tmpfs (unshare -rm) here")
def test_a_really_full_disk_stops_the_run_resumably(tmp_path):
    """The same on a real full file system: a 128 KiB tmpfs as the run folder, too small for one
    case's program and lowerings. Copied out before the namespace (and its tmpfs) ends."""
    mount, copy = tmp_path / "tmpfs", tmp_path / "copy"
    mount.mkdir()
    run = " ".join(map(shlex.quote, [sys.executable, "-m", "verify", "run", "--models", "none", "--model", TINY_PATH,
                                     "--targets", "tosa-int", "--second-mode", "stock", *CHEAP,
                                     "--out", str(mount / "run"), "--json", str(tmp_path / "r.json")]))
    script = (f"mount -t tmpfs -o size=128k none {mount} && {{ {run}; echo $? > {tmp_path / 'code'}; }}; "
              f"cp -a {mount / 'run'} {copy}")
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", script], cwd=ROOT, env=environment(), capture_output=True,
                          text=True, timeout=900)
    assert (tmp_path / "code").read_text().strip() == "1", proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    refused = [line for line in proc.stderr.splitlines() if line.startswith("verify: cannot write")]
    assert len(refused) == 1 and "resume with: python -m verify run --resume" in refused[0], proc.stderr
    assert finished_cases(copy) == [] and temporaries(copy) == []
    assert json.loads((tmp_path / "r.json").read_text())["run"]["complete"] is False


# 5. report --from on a full disk: a traceback, and the --json on a healthy disk skipped.

def test_report_from_a_full_run_folder_writes_the_other_reports(tmp_path, monkeypatch, capsys):
    run_dir, healthy = tmp_path / "run", tmp_path / "healthy"
    started_journal(run_dir, finished=2)
    FullDisk(run_dir).install(monkeypatch)
    code = cli_main("report", "--from", str(run_dir), "--json", str(healthy / "r.json"),
                    "--junit", str(healthy / "j.xml"))
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.splitlines() == [f"verify report: cannot write {run_dir / 'report.json'}: No space left on device"]
    assert report_of(json.loads((healthy / "r.json").read_text())) == [("tosa-int", "identical"),
                                                                       ("tosa-fp", "identical")]
    assert ET.parse(healthy / "j.xml").getroot().get("tests") == "2"
    assert not (run_dir / "report.json").exists() and temporaries(run_dir) == []


def test_report_from_a_read_only_run_folder_writes_the_other_reports(tmp_path, monkeypatch, capsys):
    """No lock can be made there either: no run can be going on in it, so the report goes ahead."""
    run_dir = tmp_path / "run"
    started_journal(run_dir, finished=1)
    FullDisk(run_dir, room=None, refuse=errno.EACCES).install(monkeypatch)
    assert cli_main("report", "--from", str(run_dir), "--json", str(tmp_path / "r.json")) == 1
    err = capsys.readouterr().err
    assert f"verify report: cannot write {run_dir / 'report.json'}: Permission denied" in err.splitlines(), err
    assert "Traceback" not in err and "wrote" not in err
    assert report_of(json.loads((tmp_path / "r.json").read_text())) == [("tosa-int", "identical")]


def test_a_full_disk_for_a_new_default_run_folder_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    FullDisk(tmp_path / "verify-out", room=None, refuse=errno.ENOSPC).install(monkeypatch)
    ran = fake_cases(monkeypatch)
    assert cli_main(*new_run("--targets", "tosa-int")) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("verify: run folder verify-out/") and line.endswith(": No space left on device"), line
    assert ran == []


def test_an_unwritable_json_path_during_the_run_is_one_line_and_the_rest_is_written(tmp_path, monkeypatch, capsys):
    run_dir, locked = tmp_path / "run", tmp_path / "locked"
    disk = FullDisk(locked, room=None)
    fake_cases(monkeypatch, during=lambda case: setattr(disk, "refuse", errno.EACCES))  # after the check
    disk.install(monkeypatch)
    code = cli_main(*new_run("--targets", "tosa-int", "--out", str(run_dir), "--json", str(locked / "r.json"),
                             "--junit", str(tmp_path / "j.xml")))
    err = capsys.readouterr().err
    assert code == 1, err
    assert f"verify: cannot write {locked / 'r.json'}: Permission denied" in err.splitlines()
    assert "Traceback" not in err
    assert report_of(json.loads((run_dir / "report.json").read_text())) == [("tosa-int", "identical")]
    assert ET.parse(tmp_path / "j.xml").getroot().get("tests") == "1"


# 6. A full disk at the start: the probe passed, a traceback left an empty journal, and then
#    both --resume and --out refused the folder.

def test_a_full_disk_at_the_start_is_refused_and_leaves_the_folder_usable(tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / "run"
    ran = fake_cases(monkeypatch)
    with monkeypatch.context() as patch:
        FullDisk(run_dir).install(patch)
        assert cli_main(*new_run("--targets", "tosa-int", "--out", str(run_dir))) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"verify: --out {run_dir}: cannot write in {run_dir} (No space left on device)"]
    assert ran == [] and not (run_dir / "journal.jsonl").exists()
    assert cli_main(*new_run("--targets", "tosa-int", "--out", str(run_dir))) == 0  # space freed


def test_a_journal_start_that_fails_leaves_no_journal(tmp_path, monkeypatch):
    from verify.usage.output_paths import CannotWrite

    with monkeypatch.context() as patch:
        FullDisk(tmp_path, room=100).install(patch)
        with pytest.raises(CannotWrite, match="journal.jsonl: No space left on device"):
            started_journal(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_an_empty_journal_left_by_a_failed_start_holds_no_run(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "journal.jsonl").write_text("")  # what earlier versions left
    fake_cases(monkeypatch)
    assert cli_main(*new_run("--targets", "tosa-int", "--out", str(run_dir))) == 0
    assert [line["record"] for line in journal_lines(run_dir)] == ["run", "case"]


# Extras: reports were created 0600 whatever the umask; an empty or repeated --features.

@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_reports_respect_the_umask(tmp_path, umask, mode):
    from verify.report.atomic import write_text

    previous = os.umask(umask)
    try:
        write_text(tmp_path / "report.json", "{}")
    finally:
        os.umask(previous)
    assert (tmp_path / "report.json").stat().st_mode & 0o777 == mode


@pytest.mark.parametrize("features, message", [
    ("", "--features '': no feature named; give 'all' or a comma-separated list"),
    (",", "--features ',': no feature named"),
    ("skip,skip", "--features skip,skip: skip given more than once"),
])
def test_an_empty_or_repeated_feature_list_is_refused(tmp_path, monkeypatch, capsys, features, message):
    ran = fake_cases(monkeypatch)
    monkeypatch.chdir(tmp_path)
    assert cli_main(*new_run("--targets", "tosa-int", "--features", features)) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert ran == [] and not (tmp_path / "verify-out").exists()


# Cases at once (verify.jobs.pool): `-j N` counts workers, as the gate's does.

@pytest.mark.parametrize("jobs, null_seed, at_once", [("4", "1", 2), ("2", "-1", 2), ("2", "1", 1)])
def test_j_runs_cases_side_by_side_and_the_reports_keep_the_case_order(tmp_path, monkeypatch, capsys, jobs, null_seed,
                                                                        at_once):
    """Three cases; a case with a null check keeps two workers busy, so -j gives the pool its
    width (jobs // workers per case), and the pool (tests/test_jobs_pool.py) holds to it. Where two
    fit, the first two cases meet at a barrier (neither goes on before the other has started: fails
    if -j is ignored), and the first waits for the second's journal line, so it finishes last of
    its pair: the reports keep the case order all the same."""
    import threading

    from verify.run import runner

    widths = []
    real_pool = runner.run_in_pool

    def pool(tasks, width, **kwargs):
        widths.append(width)
        return real_pool(tasks, width, **kwargs)

    monkeypatch.setattr(runner, "run_in_pool", pool)
    run_dir = tmp_path / "run"
    running, most, lock = [0], [0], threading.Lock()
    pair = threading.Barrier(2)

    def journaled(target: str) -> bool:  # a line being appended may be read half-written: not yet there
        for line in (run_dir / "journal.jsonl").read_text().splitlines():
            with contextlib.suppress(ValueError):
                if json.loads(line).get("target") == target:
                    return True
        return False

    def side_by_side(case):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        if at_once == 2 and case.target in ("tosa-int", "tosa-fp"):
            pair.wait(timeout=60)  # BrokenBarrierError (the case an error, exit 1) if they never meet
            if case.target == "tosa-int":
                wait_for(lambda: journaled("tosa-fp"), 60, "the second case journaled")
        with lock:
            running[0] -= 1

    fake_cases(monkeypatch, during=side_by_side)
    args = ["run", "--models", "none", "--model", TINY_PATH, "--reference-sets", "0", "--null-seed", null_seed,
            "--targets", "tosa-int,tosa-fp,ethos-u55", "--out", str(run_dir), "-j", jobs]
    assert cli_main(*args) == 0, capsys.readouterr().err
    assert widths == [at_once] and most[0] == at_once
    finishing = [line["target"] for line in journal_lines(run_dir) if line.get("record") == "case"]
    if at_once == 2:
        assert finishing.index("tosa-fp") < finishing.index("tosa-int")
    assert report_of(json.loads((run_dir / "report.json").read_text())) == [
        ("tosa-int", "identical"), ("tosa-fp", "identical"), ("ethos-u55", "identical")]


def test_j_below_one_is_bad_usage(tmp_path, capsys):
    assert cli_main(*new_run("--out", str(tmp_path / "run"), "-j", "0")) == 2
    assert "verify: -j must be 1 or more, got 0" in capsys.readouterr().err
