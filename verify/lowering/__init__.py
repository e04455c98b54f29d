"""Lowering: quantize a model once, then lower it in a given mode while observing every pass."""
