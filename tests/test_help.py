"""Every command and option explains itself (issue 47): `python -m verify --help` names every
command, every option of every command has a help text, and the numbers a user may leave out
state their defaults."""

from __future__ import annotations

import argparse
import re

import pytest

from verify.cli import build_parser


def commands() -> dict[str, argparse.ArgumentParser]:
    return dict(build_parser()[1].choices)


def test_the_top_level_help_lists_every_command():
    parser, _ = build_parser()
    summary = parser.format_help()
    listed = set(re.findall(r"^\s+python -m verify ([\w-]+)", summary, re.M))
    assert set(commands()) <= listed, set(commands()) - listed


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_option_has_help(name):
    parser = commands()[name]
    missing = [action.option_strings[0] if action.option_strings else action.dest for action in parser._actions
               if not action.help and action.help != argparse.SUPPRESS]
    assert not missing, f"verify {name}: no help for {missing}"


@pytest.mark.parametrize("name, option", [
    ("run", "--hash-seed"), ("run", "--timeout"), ("run", "--seed"), ("run", "--reference-sets"),
    ("run", "--null-seed"), ("bench", "--hash-seed"), ("infer", "--stage"), ("infer", "--max-ops"),
    ("peer", "--timeout"), ("crosscheck", "--reference-sets"),
])
def test_a_number_left_out_states_its_default(name, option):
    [action] = [a for a in commands()[name]._actions if option in a.option_strings]
    assert "default" in action.help, f"verify {name} {option}: {action.help}"


def test_replay_help_says_what_it_prints_and_its_exit_statuses():
    text = commands()["replay"].format_help()
    for said in ("identical (0)", "divergent", "nondeterministic", "unchecked", "error", "2 for bad usage"):
        assert said in text, said
