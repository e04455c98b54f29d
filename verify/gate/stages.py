"""The gate's stages: which graphs a stage draws and whose pipeline lowers them.

Its own module, free of torch, so that the CLI can offer the stage names (and refuse bad
arguments) without importing the lowering stack first."""

from __future__ import annotations

# stage -> the lowering target whose pipeline it runs (a stage name says what graphs it draws:
# edge-fp = FP graphs, quantized = TOSA-1.0+INT; the Ethos-U stages quantize with EthosUQuantizer
# and lower through Vela, and reach what only those pipelines do, e.g. the U55-subset rewrites)
STAGE_TARGETS = {"edge-fp": "tosa-fp", "quantized": "tosa-int", "ethos-u55": "ethos-u55", "ethos-u85": "ethos-u85"}
STAGES = tuple(STAGE_TARGETS)
