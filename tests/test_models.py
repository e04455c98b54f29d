"""The built-in real models are what shared/BENCHMARK.md describes, and deterministic."""

import operator

import pytest
import torch
from executorch.exir.delegate import executorch_call_delegate

from generators.models import MODELS
from verify.commands.run import DEFAULT_TARGETS


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


@pytest.mark.slow
@pytest.mark.parametrize("target_name", DEFAULT_TARGETS)
def test_partly_delegated_leaves_work_and_constants_on_the_cpu(target_name):
    """The model that gives the `program` and `constants` checks something beyond the delegates."""
    from executorch.exir import to_edge_transform_and_lower

    from verify import export_program, get_target

    target = get_target(target_name)
    model, inputs = MODELS["partly_delegated"]()
    edge = to_edge_transform_and_lower(export_program(model, inputs, target),
                                       partitioner=[target.make_partitioner(target.make_spec())])
    program = edge.exported_program()
    calls = [n for n in program.graph.nodes if n.op == "call_function"]
    delegates = [n for n in calls if n.target is executorch_call_delegate]
    cpu_work = {n.target.__name__ for n in calls
                if n.target is not executorch_call_delegate and n.target is not operator.getitem
                and "quantized_decomposed" not in n.target.__name__}
    assert len(delegates) >= 1
    assert {"aten.atan2.default", "aten.fmod.Tensor"} <= cpu_work
    signature = program.graph_signature
    assert signature.inputs_to_parameters and set(signature.inputs_to_parameters.values()) <= set(program.state_dict)
    assert signature.inputs_to_buffers and set(signature.inputs_to_buffers.values()) <= set(program.state_dict)
