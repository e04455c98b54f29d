"""Annotations as named records: `Entry` values in the registry, and `overridden({...})` as the one
way to change them for a while (the gate isolating a pass, a test's deliberately wrong claim),
restoring exactly what was there and never writing to the checked-in table."""

from __future__ import annotations

import pytest
import torch
from executorch.exir.pass_base import ExportPass

from fastpass import annotations
from fastpass.annotations import UPSTREAM, Entry, OverrideOrderError, arm_registry, lookup, overridden

A = torch.ops.aten
CLAMP = "executorch.backends.arm._passes.convert_to_clamp_pass.ConvertToClampPass"


class _SigmoidPass(ExportPass):
    pass


class _Discovered(ExportPass):
    _TARGET_OPS = {A.relu.default}


def _state():
    return dict(arm_registry.REGISTRY), annotations.entries()


def test_registry_holds_entry_records():
    assert arm_registry.REGISTRY and all(isinstance(e, Entry) for e in arm_registry.REGISTRY.values())
    clamp = arm_registry.REGISTRY[CLAMP]
    assert clamp.ops is UPSTREAM and clamp.skip_sound and clamp.copy_sound and clamp.why
    assert repr(UPSTREAM) == "UPSTREAM"


def test_entry_freezes_its_ops_and_flags():
    entry = Entry([A.add.Tensor, A.add.Tensor], skip_sound=1, copy_sound=0)
    assert entry.ops == frozenset({A.add.Tensor}) and entry.skip_sound is True and entry.copy_sound is False
    assert entry == Entry({A.add.Tensor}, True, False)
    with pytest.raises(AttributeError):
        entry.skip_sound = False  # frozen: one entry can serve many passes (GUARDED, RETRACE_ONLY)


def test_overridden_changes_lookup_inside_and_restores_exactly():
    before = _state()
    cold = lookup(_SigmoidPass)  # cached before the override: the context must invalidate it
    assert not cold.skip_sound and not cold.copy_sound
    with overridden({_SigmoidPass: Entry({A.sigmoid.default}, skip_sound=True, copy_sound=False, why="test")}):
        ann = lookup(_SigmoidPass)
        assert ann.targeted_ops == {A.sigmoid.default} and ann.skip_sound and not ann.copy_sound
        assert ann.source == "registry"
        assert arm_registry.REGISTRY == before[0]  # the checked-in table is never written to
    assert lookup(_SigmoidPass) == cold
    assert _state() == before


def test_overridden_replaces_and_removes_checked_in_entries():
    from executorch.backends.arm._passes.convert_to_clamp_pass import ConvertToClampPass

    stock = lookup(ConvertToClampPass)
    assert stock.skip_sound and stock.copy_sound and stock.targeted_ops
    with overridden({CLAMP: Entry((), skip_sound=False, copy_sound=False, why="neutral")}):
        neutral = lookup(ConvertToClampPass)
        assert not neutral.skip_sound and not neutral.copy_sound and not neutral.targeted_ops
        with overridden({ConvertToClampPass: None}):  # no entry: auto-discovery decides
            assert lookup(ConvertToClampPass).source == "upstream:target_ops"
            assert CLAMP not in annotations.entries()
        assert lookup(ConvertToClampPass) == neutral
    assert lookup(ConvertToClampPass) == stock
    with overridden({_Discovered: None}):
        assert lookup(_Discovered).source == "auto:_TARGET_OPS"


def test_overridden_restores_after_an_exception():
    before = _state()
    with pytest.raises(KeyError):
        with overridden({_SigmoidPass: Entry({A.sigmoid.default}, True, True)}):
            raise KeyError("inside")
    assert _state() == before and not lookup(_SigmoidPass).skip_sound


def test_overridden_refuses_an_out_of_order_exit_and_still_restores():
    before = _state()
    outer = overridden({_SigmoidPass: Entry({A.sigmoid.default}, True, False)})
    inner = overridden({_Discovered: Entry({A.abs.default}, False, True)})
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(OverrideOrderError, match=r"overridden\(_SigmoidPass\) left while 1 context"):
        outer.__exit__(None, None, None)
    # the outer layer is gone, the inner one still active, until it is left too
    assert not lookup(_SigmoidPass).skip_sound and lookup(_Discovered).targeted_ops == {A.abs.default}
    inner.__exit__(None, None, None)
    assert _state() == before and lookup(_Discovered).source == "auto:_TARGET_OPS"


def test_overridden_rejects_anything_but_an_entry():
    with pytest.raises(TypeError, match="_SigmoidPass.*tuple, not an Entry"):
        with overridden({_SigmoidPass: ({A.sigmoid.default}, True, True, "old tuple form")}):
            pass
    assert not lookup(_SigmoidPass).skip_sound


def test_register_is_process_wide_and_unregister_leaves_the_table_alone():
    before = dict(arm_registry.REGISTRY)
    annotations.register(CLAMP, (), skip_sound=False, copy_sound=False, why="shadow")
    try:
        assert annotations.entry(CLAMP).why == "shadow" and arm_registry.REGISTRY == before
        with overridden({CLAMP: Entry((), True, True, "inner")}):
            assert annotations.entry(CLAMP).why == "inner"  # an override wins over a registration
    finally:
        annotations.unregister(CLAMP)
    assert annotations.entry(CLAMP) is arm_registry.REGISTRY[CLAMP]


def test_the_view_family_read_off_schemas_is_the_family_of_every_aten_op():
    """arm_registry's view family lists only the aten overloads whose schema says view (every
    enable() reads the claim digests, which list its members); the members must be the ones
    the rule picks from every aten overload, materialized."""
    from fastpass.annotations import arm_registry

    every = arm_registry._aten_ops(views_only=False)
    family = arm_registry._view_ops()
    assert set(family.members()) == {op for op in every if family.rule(op)}
    assert 0 < len(family.members()) < len(every) // 5
