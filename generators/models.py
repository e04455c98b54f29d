"""The built-in real models: MLPerf Tiny and a SleepNet-like featurizer.

Each entry is a factory returning `(nn.Module, example_inputs)`, the same contract a
user's own `--model module:factory` follows. Factories seed torch themselves, so a
model's weights (random by design: nothing is downloaded) are the same in every process.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

ModelFactory = Callable[[], "tuple[nn.Module, tuple]"]


class SleepNetFeaturizer(nn.Module):
    """A small 1-D CNN feature extractor laid out as NCHW with H = 1 (see shared/BENCHMARK.md).

    9 blocks of Conv2d(1x5) -> LayerNorm([C, 1, L]) -> ReLU, AvgPool2d((1, 2)) after blocks
    2, 4, 6, 8 (L: 256 -> 16), then mean over (H, W) and Linear(32, 16). One U55 delegate.
    """

    CHANNELS = (1, 8, 16, 16, 24, 24, 32, 32, 32, 32)
    POOL_AFTER = (2, 4, 6, 8)

    def __init__(self, length: int = 256) -> None:
        super().__init__()
        blocks = []
        for i, (cin, cout) in enumerate(zip(self.CHANNELS, self.CHANNELS[1:]), start=1):
            layers = [nn.Conv2d(cin, cout, kernel_size=(1, 5), padding=(0, 2)),
                      nn.LayerNorm([cout, 1, length]), nn.ReLU()]
            if i in self.POOL_AFTER:
                layers.append(nn.AvgPool2d((1, 2)))
                length //= 2
            blocks.append(nn.Sequential(*layers))
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(self.CHANNELS[-1], 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(x).mean(dim=(2, 3)))


class SleepNetFeaturizer1d(nn.Module):
    """The Conv1d/MaxPool1d variant: the partitioner splits it into several delegates."""

    CHANNELS = (1, 8, 16, 16, 24, 24, 32, 32, 32, 32)
    POOL_AFTER = (2, 4, 6, 8)

    def __init__(self, length: int = 256) -> None:
        super().__init__()
        blocks = []
        for i, (cin, cout) in enumerate(zip(self.CHANNELS, self.CHANNELS[1:]), start=1):
            layers = [nn.Conv1d(cin, cout, kernel_size=5, padding=2), nn.LayerNorm([cout, length]), nn.ReLU()]
            if i in self.POOL_AFTER:
                layers.append(nn.MaxPool1d(2))
                length //= 2
            blocks.append(nn.Sequential(*layers))
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(self.CHANNELS[-1], 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(x).mean(dim=2))


def sleepnet() -> tuple[nn.Module, tuple]:
    torch.manual_seed(0)
    return SleepNetFeaturizer().eval(), (torch.randn(1, 1, 1, 256),)


def sleepnet_1d() -> tuple[nn.Module, tuple]:
    torch.manual_seed(0)
    return SleepNetFeaturizer1d().eval(), (torch.randn(1, 1, 256),)


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
}
