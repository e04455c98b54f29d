"""The built-in real models: MLPerf Tiny, a SleepNet-like featurizer, and a partly delegated model.

Each entry is a factory returning `(nn.Module, example_inputs)`, the same contract a
user's own `--model module:factory` follows. Factories seed torch themselves, so a
model's weights (random by design: nothing is downloaded) are the same in every process.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

ModelFactory = Callable[[], "tuple[nn.Module, tuple]"]


SLEEPNET_CHANNELS = (1, 8, 16, 16, 24, 24, 32, 32, 32, 32)
SLEEPNET_POOL_AFTER = (2, 4, 6, 8)


def _sleepnet_blocks(length: int, conv, norm, pool) -> nn.Sequential:
    """The 9 blocks: conv -> norm over [C, (1,) L] -> ReLU, a halving pool after blocks 2, 4, 6, 8."""
    blocks = []
    for i, (cin, cout) in enumerate(zip(SLEEPNET_CHANNELS, SLEEPNET_CHANNELS[1:]), start=1):
        layers = [conv(cin, cout), norm(cout, length), nn.ReLU()]
        if i in SLEEPNET_POOL_AFTER:
            layers.append(pool())
            length //= 2
        blocks.append(nn.Sequential(*layers))
    return nn.Sequential(*blocks)


class SleepNetFeaturizer(nn.Module):
    """A small 1-D CNN feature extractor laid out as NCHW with H = 1 (see shared/BENCHMARK.md).

    9 blocks of Conv2d(1x5) -> LayerNorm([C, 1, L]) -> ReLU, AvgPool2d((1, 2)) after blocks
    2, 4, 6, 8 (L: 256 -> 16), then mean over (H, W) and Linear(32, 16). One U55 delegate.
    """

    def __init__(self, length: int = 256) -> None:
        super().__init__()
        self.blocks = _sleepnet_blocks(
            length,
            conv=lambda cin, cout: nn.Conv2d(cin, cout, kernel_size=(1, 5), padding=(0, 2)),
            norm=lambda c, n: nn.LayerNorm([c, 1, n]),
            pool=lambda: nn.AvgPool2d((1, 2)))
        self.head = nn.Linear(SLEEPNET_CHANNELS[-1], 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(x).mean(dim=(2, 3)))


class SleepNetFeaturizer1d(nn.Module):
    """The Conv1d/MaxPool1d variant: the partitioner splits it into several delegates."""

    def __init__(self, length: int = 256) -> None:
        super().__init__()
        self.blocks = _sleepnet_blocks(
            length,
            conv=lambda cin, cout: nn.Conv1d(cin, cout, kernel_size=5, padding=2),
            norm=lambda c, n: nn.LayerNorm([c, n]),
            pool=lambda: nn.MaxPool1d(2))
        self.head = nn.Linear(SLEEPNET_CHANNELS[-1], 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(x).mean(dim=2))


def sleepnet() -> tuple[nn.Module, tuple]:
    torch.manual_seed(0)
    return SleepNetFeaturizer().eval(), (torch.randn(1, 1, 1, 256),)


def sleepnet_1d() -> tuple[nn.Module, tuple]:
    torch.manual_seed(0)
    return SleepNetFeaturizer1d().eval(), (torch.randn(1, 1, 256),)


class PartlyDelegated(nn.Module):
    """A model the partitioner splits around CPU work: conv -> ReLU -> linear (a delegate), then
    atan2 against a learned parameter and fmod by a buffer (no TOSA lowering for either, on any
    ARM target: they stay on the CPU), then a linear (a second delegate).

    It exists so that the top-level program carries real work and real constants, which a
    fully delegated model never does: the harness's `constants` and `program` checks then
    compare something beyond the delegates.
    """

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.head = nn.Linear(8 * 8 * 8, 16)
        self.reference = nn.Parameter(torch.randn(16))
        self.register_buffer("period", torch.full((16,), 0.75))
        self.tail = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.head(torch.relu(self.conv(x)).flatten(1))
        angle = torch.fmod(torch.atan2(y, self.reference), self.period)
        return self.tail(angle)


def partly_delegated() -> tuple[nn.Module, tuple]:
    torch.manual_seed(0)
    return PartlyDelegated().eval(), (torch.randn(1, 1, 8, 8),)


def _mlperf_tiny(class_name: str) -> ModelFactory:
    def factory() -> tuple[nn.Module, tuple]:
        import importlib

        module_name = {"ResNet8Model": "resnet8", "MobileNetV1025Model": "mobilenet_v1_025",
                       "DSCNNKWSModel": "ds_cnn", "DeepAutoEncoderModel": "deep_autoencoder"}[class_name]
        module = importlib.import_module(f"executorch.examples.models.mlperf_tiny.{module_name}")
        torch.manual_seed(0)  # their weights are random: seed before building
        wrapper = getattr(module, class_name)()
        return wrapper.get_eager_model().eval(), tuple(wrapper.get_example_inputs())

    factory.__name__ = class_name
    factory.__doc__ = f"MLPerf Tiny {class_name} from executorch.examples.models.mlperf_tiny."
    return factory


MODELS: dict[str, ModelFactory] = {
    "resnet8": _mlperf_tiny("ResNet8Model"),
    "mobilenet_v1_025": _mlperf_tiny("MobileNetV1025Model"),
    "ds_cnn": _mlperf_tiny("DSCNNKWSModel"),
    "deep_autoencoder": _mlperf_tiny("DeepAutoEncoderModel"),
    "sleepnet": sleepnet,
    "sleepnet_1d": sleepnet_1d,
    "partly_delegated": partly_delegated,
}
