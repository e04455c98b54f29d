"""A pytest plugin that the test's cluster (tests/test_cluster_campaigns.py) has its nodes' pytest
processes load (`PYTEST_PLUGINS`), for two checks armed by `VERIFY_` variables, which travel with
a job from the harness to its node (verify.cluster.backend), so only the jobs that ask for them
are touched:

- `NODE_FOLDER_VARIABLE=1`: the files pytest was told to read and write (its campaign file, its
  JUnit XML) must be in the job's folder on the node. A loopback cluster's nodes share this
  machine's file system, so a job handed the harness's own paths would still find them and write
  there, and the campaign would look right; on a real cluster those paths do not exist. Not in a
  node folder: a usage error, the job's pytest ends without running anything;
- `PLANTED_VARIABLE=1`: a fault planted in fastpass's lowering: with fastpass on, the TOSA
  backend's emitted bytes get one bit flipped, so every delegated graph a fuzz cell draws diverges
  (the payload check) and the cell saves a reproducer and Hypothesis database entries. Hypothesis
  does not shrink the failure here (the loaded profile loses its shrink phase): every graph fails
  alike and each shrink step is a whole lowering of seconds; what is tested is where the
  failure's files end up."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

NODE_FOLDER_VARIABLE = "VERIFY_TEST_NODE_FOLDER_ONLY"
PLANTED_VARIABLE = "VERIFY_TEST_PLANTED_FUZZ_FAULT"


def pytest_configure(config) -> None:
    # After conftest.py's pytest_configure (a plugin named in PYTEST_PLUGINS is registered before
    # it, so its hook runs after), which loaded the campaign's profile.
    if os.environ.get(NODE_FOLDER_VARIABLE) == "1":
        _check_node_folder(config)
    if os.environ.get(PLANTED_VARIABLE) == "1":
        _plant_fault()


def _check_node_folder(config) -> None:
    from verify.cluster.node import TEMPORARY_PREFIX

    given = {"--junitxml": config.option.xmlpath, "--fuzz-campaign": config.getoption("fuzz_campaign", None)}
    for option, path in given.items():
        if path is None:
            continue
        resolved = Path(path).resolve()
        inside = resolved.is_relative_to(Path(tempfile.gettempdir()).resolve()) and any(
            part.startswith(TEMPORARY_PREFIX) for part in resolved.parts)
        if not inside:
            raise pytest.UsageError(f"{NODE_FOLDER_VARIABLE}: {option} {path} is not in the job's folder on its node")


def _plant_fault() -> None:
    import fastpass
    from executorch.backends.arm.tosa.backend import TOSABackend
    from hypothesis import Phase, settings

    settings.register_profile("planted", settings.default, phases=[Phase.explicit, Phase.reuse, Phase.generate])
    settings.load_profile("planted")
    original = TOSABackend.__dict__["preprocess"]

    def preprocess(edge_program, compile_specs):
        result = original.__func__(edge_program, compile_specs)
        if fastpass.is_enabled():
            data = bytearray(result.processed_bytes)
            data[len(data) // 2] ^= 0x01
            result.processed_bytes = bytes(data)
        return result

    TOSABackend.preprocess = staticmethod(preprocess)
