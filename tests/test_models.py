"""The built-in real models are what shared/BENCHMARK.md describes, and deterministic."""

import torch

from generators.models import MODELS


def test_sleepnet_matches_the_benchmark_description():
    model, (x,) = MODELS["sleepnet"]()
    kinds = [type(m).__name__ for m in model.modules()]
    assert kinds.count("Conv2d") == 9 and kinds.count("LayerNorm") == 9 and kinds.count("AvgPool2d") == 4
    assert all(m.kernel_size == (1, 5) for m in model.modules() if isinstance(m, torch.nn.Conv2d))
    assert sum(p.numel() for p in model.parameters()) == 61520
    assert tuple(x.shape) == (1, 1, 1, 256) and tuple(model(x).shape) == (1, 16)


def test_every_model_builds_runs_and_is_seeded():
    for name, factory in MODELS.items():
        (m1, in1), (m2, in2) = factory(), factory()
        assert isinstance(in1, tuple) and len(in1) >= 1, name
        with torch.no_grad():
            assert torch.equal(m1(*in1), m2(*in2)), f"{name} is not deterministic"
