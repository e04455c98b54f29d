"""Lowering, the layer every command lowers through: quantize a model once, then lower it in a
mode (stock, or inside `fastpass.enabled`) while observing every pass (`lower()`,
`observe_call()`), and say what the lowering produced as one value (`LoweringResult`). Why one
layer: a difference between two lowerings means something only if both were made the same way,
so run, bench, fuzz, the gate and crosscheck share this code rather than each keeping a copy.
It imports fastpass and executorch, never the layers above it (compare, report, the commands)."""
