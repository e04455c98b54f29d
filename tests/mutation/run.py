"""The mutation campaign over the modules that decide a verdict (issue 44): mutmut changes one
operator, constant or condition at a time and runs the fast tests that reach the changed function;
a mutant no test fails on (`survived`) is a rule nothing shows to matter.

    tox -e mutation                                  # every module below; resumes where it stopped
    tox -e mutation -- --modules verify/compare/checks.py,verify/gate/verdict.py
    tox -e mutation -- --report                      # score.json and report.md from what ran, nothing run
    tox exec -e mutation -- python tests/mutation/run.py --help

What it measures is the committed tree (`git archive HEAD`, unpacked into `.mutation/`, where
mutmut keeps its own state in `mutants/`): the score names the commit it holds for, and
uncommitted edits (yours or anyone's) never enter it. Re-running resumes: mutmut keeps every
result whose function did not change; when the selected tests changed, the survivors are run
again (a new test may kill them). It runs niced (19), one test process at a time.

Writes `tests/mutation/score.json` (per module: killed, survived, equivalent, timeout, no tests,
not checked; mutmut's version; the commit) and `tests/mutation/report.md` (the survivors, each
with its diff). A survivor that no test can kill because the mutant behaves as the original is
listed in `tests/mutation/equivalent.txt` with a one-line argument; the score counts it apart.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
WORK = ROOT / ".mutation"  # the committed tree under test, and mutmut's state (mutants/); .gitignore'd
SCORE = HERE / "score.json"
REPORT = HERE / "report.md"
EQUIVALENT = HERE / "equivalent.txt"

# The modules that decide a verdict, smallest and most central first (the order a short campaign
# gets through them).
MODULES = [
    "verify/compare/checks.py",
    "verify/gate/verdict.py",
    "fastpass/annotations/_proofs.py",
    "verify/compare/divergence.py",
    "verify/compare/comparison.py",
    "verify/compare/payloads.py",
    "verify/compare/program.py",
    "verify/compare/aligned.py",
    "verify/compare/graphs.py",
    "verify/compare/meta.py",
    "verify/compare/vals.py",
    "verify/compare/digests.py",
    "verify/compare/__init__.py",
    "verify/lowering/snapshot.py",
]

# The tests a mutant is judged by: synthetic values only (LoweringResults, snapshots of small
# graphs, ledgers, stats in fastpass's shape), no model lowered, so a mutant costs seconds. mutmut
# runs, of these, the ones that reach the mutated function (it records which in a first run).
TESTS = [
    "tests/test_verdict_rules.py",
    "tests/test_compare_rules.py",
    "tests/test_comparison_rules.py",
    "tests/test_compare_parts.py",
    "tests/test_gate_verdict_rules.py",
    "tests/test_ledger_rules.py",
    "tests/test_snapshot_rules.py",
    "tests/test_typed_results.py",
    "tests/test_gate_reach.py::test_the_structural_key_ignores_the_seed_and_nothing_else",
    "tests/test_gate_reach.py::test_a_repeated_graph_is_checked_but_is_no_new_evidence",
    "tests/test_gate_evidence.py",
    "tests/test_proof_ledger.py::test_an_edited_claim_is_stale",
    "tests/test_harness_faults.py::test_a_reused_graph_address_is_a_different_graph_in_provenance",
    "tests/test_harness_faults.py::test_a_tag_left_by_an_earlier_lowering_is_not_read_as_this_lowerings_graph",
    "tests/test_harness_faults.py::test_a_changed_stride_in_eager_input_vals_is_a_meta_difference",
    "tests/test_harness_faults.py::test_snapshots_of_one_lowering_share_unchanged_records_and_still_see_a_change",
    "tests/test_harness_faults.py::test_the_texts_a_snapshot_looks_up_are_the_texts_formatting_gives",
    "tests/test_proof_ledger.py::test_trust_is_checked",
    "tests/test_ledger_damage.py::test_a_damaged_ledger_refuses_enable_the_same_way_every_time",
    "tests/test_ledger_damage.py::test_a_damaged_ledger_is_no_obstacle_to_trust_all",
    "tests/test_ledger_damage.py::test_a_missing_ledger_warns_once_that_every_annotation_runs_stock",
    "tests/test_proof_ledger.py::test_a_pass_run_records_its_passes_and_keeps_the_rest_of_the_ledger",
]

# What is copied into the tree under test: the packages (mutmut copies them once more into
# mutants/, the listed modules mutated), the tests and the pytest configuration.
TREE = ["verify", "fastpass", "generators", "tests", "conftest.py", "pyproject.toml"]

STATUSES = ["killed", "survived", "equivalent", "timeout", "no tests", "suspicious", "not checked"]


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def mutmut_version() -> str:
    from importlib.metadata import version

    return version("mutmut")


def export_tree(worktree: bool) -> str:
    """The tree under test into WORK (files whose bytes did not change keep their mtime, so
    mutmut does not regenerate their mutants); returns what it is (the commit, + '-dirty')."""
    commit = git("rev-parse", "HEAD")
    files: dict[str, bytes] = {}
    if worktree:
        for name in git("ls-files", "-z", "--", *TREE).split("\0"):
            if name and (ROOT / name).is_file():
                files[name] = (ROOT / name).read_bytes()
        what = commit + ("-dirty" if git("status", "--porcelain", "--", *TREE) else "")
    else:
        archive = subprocess.run(["git", "archive", "--format=tar", "HEAD", "--", *TREE], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            for member in tar.getmembers():
                if member.isfile():
                    files[member.name] = tar.extractfile(member).read()
        what = commit
    WORK.mkdir(exist_ok=True)
    kept = set()
    for name, data in files.items():
        path = WORK / name
        kept.add(path)
        if path.is_file() and path.read_bytes() == data:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for top in TREE:  # a file deleted since the last run is deleted here too
        base = WORK / top
        if base.is_dir():
            for path in base.rglob("*"):
                if path.is_file() and path not in kept and "__pycache__" not in path.parts:
                    path.unlink()
    return what


def write_config(modules: list[str]) -> None:
    """mutmut's configuration (setup.cfg in WORK: the exported pyproject.toml has no [tool.mutmut])."""
    lines = ["[mutmut]",
             "source_paths =\n    verify\n    fastpass\n    generators",
             "only_mutate =\n" + "\n".join(f"    {m}" for m in modules),
             "also_copy =\n    conftest.py",
             "pytest_add_cli_args_test_selection =\n" + "\n".join(f"    {t}" for t in TESTS),
             "pytest_add_cli_args =\n    -p\n    no:cacheprovider\n    -p\n    no:xdist",
             # WORK sits inside the project's git checkout but is no checkout itself
             "use_git_change_detection = false",
             ""]
    (WORK / "setup.cfg").write_text("\n".join(lines))


def tests_digest() -> str:
    digest = hashlib.sha256()
    for name in sorted({t.split("::")[0] for t in TESTS} | {"tests/faults.py", "conftest.py", "tests/conftest.py"}):
        path = WORK / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"") + b"\0")
    return digest.hexdigest()[:16]


def results() -> dict[str, dict[str, int | None]]:
    """module -> mutant name -> mutmut's exit code (None: not checked yet), from mutants/*.meta."""
    found = {}
    for module in MODULES:
        meta = WORK / "mutants" / (module + ".meta")
        if meta.is_file():
            found[module] = json.loads(meta.read_text())["exit_code_by_key"]
    return found


def status_of(code: int | None) -> str:
    from mutmut.stats import status_by_exit_code

    return {"check was interrupted by user": "not checked", "caught by type check": "killed",
            "segfault": "killed", "skipped": "not checked"}.get(status_by_exit_code[code], status_by_exit_code[code])


def equivalents() -> dict[str, str]:
    """mutant name -> why it behaves as the original (tests/mutation/equivalent.txt)."""
    found = {}
    for line in EQUIVALENT.read_text().splitlines() if EQUIVALENT.is_file() else []:
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, why = line.partition(" ")
            found[name] = why.strip()
    return found


def mutmut(*args: str, check: bool = True) -> int:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    done = subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=WORK, env=env)
    if check and done.returncode != 0:
        raise SystemExit(f"mutmut {' '.join(args)[:200]} failed (exit {done.returncode})")
    return done.returncode


def diff_of(name: str, module: str) -> str:
    """The mutant's change (mutmut's own diff, made in this process: a `mutmut show` each is slow)."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    here = os.getcwd()
    os.chdir(WORK)
    try:
        text = get_diff_for_mutant(name, path=module)
    except Exception as exc:  # noqa: BLE001 - the report says so and goes on
        return f"(no diff: {type(exc).__name__}: {exc})"
    finally:
        os.chdir(here)
    return "\n".join(line for line in text.splitlines()
                     if line.startswith(("-", "+")) and not line.startswith(("---", "+++")))


def write_score(what: str, requested: list[str], seconds: float | None, from_scratch: bool | None = None) -> dict:
    found, equivalent = results(), equivalents()
    previous = json.loads(SCORE.read_text()) if SCORE.is_file() else {}
    modules = {}
    survivors = []
    for module in MODULES:
        codes = found.get(module)
        if codes is None:
            modules[module] = {"state": "not run"}
            continue
        if not codes:
            modules[module] = {"state": "no mutants", "why": "no function to mutate (imports only)"}
            continue
        counts = Counter()
        for name, code in codes.items():
            status = status_of(code)
            if status == "survived" and name in equivalent:
                status = "equivalent"
            counts[status] += 1
            if status == "survived":
                survivors.append((module, name))
        judged = counts["killed"] + counts["survived"] + counts["timeout"]
        modules[module] = {
            "state": "complete" if not counts["not checked"] else "partial",
            "mutants": len(codes), **{s.replace(" ", "_"): counts[s] for s in STATUSES},
            # killed of the non-equivalent mutants that ran (a timeout counts as killed: the mutant
            # hangs a test, which the default command's timeout fails)
            "score": round((counts["killed"] + counts["timeout"]) / judged, 4) if judged else None,
        }
    score = {"tester": "mutmut", "tester_version": mutmut_version(), "commit": what,
             "tests": TESTS, "modules": modules,
             "seconds_last_run": seconds if seconds is not None else previous.get("seconds_last_run"),
             # the last run mutated and tested everything (true) or resumed from kept results (false)
             "last_run_from_scratch": from_scratch if seconds is not None else previous.get("last_run_from_scratch"),
             "equivalent_listed": len(equivalent)}
    SCORE.write_text(json.dumps(score, indent=2) + "\n")
    write_report(score, survivors, equivalent)
    return score


def write_report(score: dict, survivors: list[tuple[str, str]], equivalent: dict[str, str]) -> None:
    out = ["# Mutation score", "",
           f"mutmut {score['tester_version']} at `{score['commit']}`; tests: "
           + ", ".join(f"`{t}`" for t in score["tests"]), "",
           "| module | state | mutants | killed | survived | equivalent | timeout | no tests | not checked | score |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for module, row in score["modules"].items():
        if row["state"] in ("not run", "no mutants"):
            out.append(f"| `{module}` | {row['state']} | 0 | | | | | | | |" if row["state"] == "no mutants"
                       else f"| `{module}` | not run | | | | | | | | |")
            continue
        value = "-" if row["score"] is None else f"{100 * row['score']:.1f} %"
        out.append(f"| `{module}` | {row['state']} | {row['mutants']} | {row['killed']} | {row['survived']} | "
                   f"{row['equivalent']} | {row['timeout']} | {row['no_tests']} | {row['not_checked']} | {value} |")
    out += ["", "score = (killed + timeout) / (killed + timeout + survived): equivalent mutants (listed in "
            "`tests/mutation/equivalent.txt`, each argued) and mutants no selected test reaches (`no tests`) "
            "are left out and shown apart.", ""]
    out += [f"## Survivors ({len(survivors)})", ""]
    for module, name in survivors:
        out += [f"### `{name}`", "", "```diff", diff_of(name, module), "```", ""]
    codes = {name: code for found in results().values() for name, code in found.items()}
    listed = [n for n in equivalent if n in codes and status_of(codes[n]) == "survived"]
    out += [f"## Equivalent ({len(listed)})", ""]
    out += [f"- `{n}`: {equivalent[n]}" for n in listed]
    stale = [n for n in equivalent if n not in listed]
    if stale:  # killed after all (the argument was wrong) or gone with a change: the list should drop them
        out += ["", f"Listed in equivalent.txt but not surviving (killed, or no such mutant now): "
                + ", ".join(f"`{n}`" for n in stale)]
    REPORT.write_text("\n".join(out) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modules", default=",".join(MODULES),
                        help="comma-separated modules to mutate (default: all, in this order: %(default)s)")
    parser.add_argument("--max-children", type=int, default=1, help="test processes at once (default 1)")
    parser.add_argument("--worktree", action="store_true",
                        help="measure the working tree's files instead of HEAD (score marked -dirty if they differ)")
    parser.add_argument("--report", action="store_true", help="write score.json and report.md only; run nothing")
    parser.add_argument("--fresh", action="store_true", help="forget mutmut's earlier results (.mutation/) first")
    args = parser.parse_args(argv)
    modules = [m.strip() for m in args.modules.split(",") if m.strip()]
    unknown = [m for m in modules if m not in MODULES]
    if unknown:
        parser.error(f"not a campaign module: {', '.join(unknown)} (known: {', '.join(MODULES)})")
    os.nice(max(0, 19 - os.nice(0)))
    if args.fresh and WORK.exists():
        shutil.rmtree(WORK)
    if args.report:
        previous = json.loads(SCORE.read_text()) if SCORE.is_file() else {}
        write_score(previous.get("commit", "?"), modules, None)
        print(REPORT.read_text())
        return 0
    what = export_tree(args.worktree)
    # every module the campaign has results for stays mutated (results kept); the requested ones are added
    had = [m for m in MODULES if m in results()]
    mutated = [m for m in MODULES if m in modules or m in had]
    write_config(mutated)
    listed = WORK / "modules.txt"
    before = listed.read_text().split() if listed.is_file() else []
    if sorted(before) != sorted(mutated):
        # a module added to the campaign: mutmut took its earlier, unmutated copy for written mutants
        # (the copy is newer than the source) and knows no test reaching it (the tests ran without
        # its trampolines). Its copy and results go, and the tests are traced again, every module's.
        for module in set(mutated) - set(before):
            for path in (WORK / "mutants" / module, WORK / "mutants" / (module + ".meta")):
                path.unlink(missing_ok=True)
        (WORK / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    listed.write_text("\n".join(mutated) + "\n")
    started, from_scratch = time.monotonic(), not any(results().values())
    digest, marker = tests_digest(), WORK / "tests.digest"
    if marker.is_file() and marker.read_text() != digest:
        again = [name for codes in results().values() for name, code in codes.items()
                 if status_of(code) in ("survived", "timeout", "no tests")]
        if again:
            print(f"the tests changed since the last run: {len(again)} survivors run again")
            mutmut("run", "--max-children", str(args.max_children), *again)
    mutmut("run", "--max-children", str(args.max_children))
    marker.write_text(digest)
    score = write_score(what, modules, round(time.monotonic() - started, 1), from_scratch)
    print(REPORT.read_text().split("## Survivors")[0])
    print(f"{SCORE.relative_to(ROOT)}, {REPORT.relative_to(ROOT)} written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
