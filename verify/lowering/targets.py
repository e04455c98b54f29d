"""The lowering targets the harness knows, each a recipe of quantizer + partitioner.

A target is only a name and three factories, so that the rest of the harness never
imports a backend directly and a new target is one entry here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Target:
    name: str
    description: str
    quantized: bool
    make_spec: Callable[[], Any]
    make_quantizer: Callable[[Any], Any] | None
    make_partitioner: Callable[[Any], Any]
    compiles_with_vela: bool = False  # the delegate's TOSA is compiled by Vela (Ethos-U): a Vela call per delegate


class UnknownTargetError(ValueError):
    pass


def _tosa_spec(profile: str) -> Callable[[], Any]:
    def make():
        from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec

        return TosaCompileSpec(profile)

    return make


def _ethosu_spec(accelerator: str) -> Callable[[], Any]:
    def make():
        from executorch.backends.arm.ethosu import EthosUCompileSpec

        return EthosUCompileSpec(accelerator)

    return make


def _tosa_quantizer(spec):
    from executorch.backends.arm.quantizer import TOSAQuantizer

    return TOSAQuantizer(spec)


def _ethosu_quantizer(spec):
    from executorch.backends.arm.quantizer import EthosUQuantizer

    return EthosUQuantizer(spec)


def _tosa_partitioner(spec):
    from executorch.backends.arm.tosa.partitioner import TOSAPartitioner

    return TOSAPartitioner(spec)


def _ethosu_partitioner(spec):
    from executorch.backends.arm.ethosu import EthosUPartitioner

    return EthosUPartitioner(spec)


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("tosa-int", "TOSA-1.0+INT, TOSAQuantizer + TOSAPartitioner", True,
               _tosa_spec("TOSA-1.0+INT"), _tosa_quantizer, _tosa_partitioner),
        Target("tosa-fp", "TOSA-1.0+FP, no quantization", False,
               _tosa_spec("TOSA-1.0+FP"), None, _tosa_partitioner),
        Target("ethos-u55", "Ethos-U55-128 (Vela), EthosUQuantizer + EthosUPartitioner", True,
               _ethosu_spec("ethos-u55-128"), _ethosu_quantizer, _ethosu_partitioner, compiles_with_vela=True),
        Target("ethos-u85", "Ethos-U85-256 (Vela), EthosUQuantizer + EthosUPartitioner", True,
               _ethosu_spec("ethos-u85-256"), _ethosu_quantizer, _ethosu_partitioner, compiles_with_vela=True),
    )
}


def get_target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise UnknownTargetError(
            f"unknown target {name!r}; known targets: {', '.join(TARGETS)}"
        ) from None
