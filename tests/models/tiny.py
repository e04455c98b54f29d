"""A tiny model for harness tests: conv, relu, linear, add — lowers to TOSA in about a second."""

import torch


class Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.linear = torch.nn.Linear(6, 4)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        return self.linear(y) + 1.0


def make():
    torch.manual_seed(0)
    return Tiny().eval(), (torch.randn(1, 3, 8, 8),)


def broken():
    raise RuntimeError("this factory is broken on purpose")
