"""fastpass.patching: one patch mechanism for fastpass and the harness's observers.

The mechanism's own guarantees on toy owners (restore puts back the very same objects, an
inherited attribute is deleted again, a closure cell is restored, all-or-nothing install,
nesting refused, features select rows), then "off = stock byte for byte" for each of the four
real tables: after install and restore every patched slot holds the very object it held before.
Also: the tables the docstrings and fastpass/README.md show are the rows' own.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from fastpass.patching import NOT_OWN, PatchPoint, Patches, Slot, current_value, markdown_table

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------ the mechanism


class _Base:
    def greet(self) -> str:
        return "base"


class _Owner(_Base):
    def name(self) -> str:
        return "stock"


def _tagging(tag: str):
    def wrap(original):
        def replacement(self):
            return f"{tag}({original(self)})"

        return replacement

    return wrap


def test_restore_puts_back_the_very_same_objects():
    before = vars(_Owner)["name"]
    patches = Patches("toy", "restore it")
    patches.install([PatchPoint(_Owner, "name", (), wrap=_tagging("w"), why="test")])
    assert patches.active and _Owner().name() == "w(stock)"  # the replacement wraps the original
    patches.restore()
    assert not patches.active and vars(_Owner)["name"] is before and _Owner().name() == "stock"


def test_inherited_attribute_is_deleted_on_restore_and_refused_unless_allowed():
    patches = Patches("toy", "restore it")
    with pytest.raises(RuntimeError, match=r"patch point .*_Owner\.greet not found"):
        patches.install([PatchPoint(_Owner, "greet", (), wrap=_tagging("w"), why="test")])
    assert not patches.active and "greet" not in vars(_Owner)
    patches.install([PatchPoint(_Owner, "greet", (), wrap=_tagging("w"), why="test", inherited=True)])
    assert _Owner().greet() == "w(base)"
    patches.restore()
    assert "greet" not in vars(_Owner) and current_value(
        PatchPoint(_Owner, "greet", (), wrap=_tagging("w"), why="test")) is NOT_OWN


def _make_closure():
    def func(x):
        return x + 1

    def wrapper(x):
        return func(x)

    return wrapper


def test_closure_cell_is_patched_for_every_binding_and_restored():
    wrapper = _make_closure()
    binding = wrapper  # a copy made "at import time"
    original = wrapper.__closure__[0].cell_contents
    point = PatchPoint.closure_cell(wrapper, "func", (), wrap=lambda f: (lambda x: 10 * f(x)), why="test")
    assert point.slot is Slot.CLOSURE_CELL
    patches = Patches("toy", "restore it")
    patches.install([point])
    assert binding(1) == 20
    patches.restore()
    assert wrapper.__closure__[0].cell_contents is original and binding(1) == 2
    with pytest.raises(RuntimeError, match="not found"):
        patches.install([PatchPoint.closure_cell(wrapper, "nope", (), wrap=lambda f: f, why="test")])


def test_install_is_all_or_nothing_and_refuses_nesting():
    before = vars(_Owner)["name"]
    patches = Patches("toy", "call toy.restore()")

    def broken(original):
        raise ValueError("cannot build")

    with pytest.raises(ValueError, match="cannot build"):
        patches.install([PatchPoint(_Owner, "name", (), wrap=_tagging("w"), why="test"),
                         PatchPoint(_Owner, "greet", (), wrap=broken, why="test", inherited=True)])
    assert not patches.active and vars(_Owner)["name"] is before and "greet" not in vars(_Owner)
    patches.install([PatchPoint(_Owner, "name", (), wrap=_tagging("w"), why="test")])
    try:
        with pytest.raises(RuntimeError, match=r"toy is already enabled .*call toy.restore\(\) first"):
            patches.install([PatchPoint(_Owner, "name", (), wrap=_tagging("v"), why="test")])
        assert _Owner().name() == "w(stock)"  # the refused install changed nothing
    finally:
        patches.restore()
    assert vars(_Owner)["name"] is before


def test_features_select_rows_and_are_the_state():
    rows = [PatchPoint(_Owner, "name", ("a", "b"), wrap=_tagging("ab"), why="test"),
            PatchPoint(_Owner, "greet", (), wrap=_tagging("always"), why="test", inherited=True)]
    patches = Patches("toy", "restore it")
    patches.install(rows, {"c"})
    assert [p.attribute for p in patches.installed_points()] == ["greet"] and patches.features == {"c"}
    patches.restore()
    assert patches.features == frozenset()
    patches.install(rows, {"b"})
    assert _Owner().name() == "ab(stock)" and _Owner().greet() == "always(base)"
    patches.restore()
    assert _Owner().name() == "stock" and "greet" not in vars(_Owner)


# ---------------------------------------------------- the four tables: off = stock, byte for byte


def _fastpass_rows():
    from fastpass import _patches

    return _patches.patch_table()


def _observe_rows():
    from verify.lowering import observe

    return observe.patch_points(observe._Observer(False))


def _infer_rows():
    from verify.gate import infer

    return infer.patch_points(None, {})


def _intercept_module():
    from verify.crosscheck import intercept

    return intercept


def _snapshot(rows):
    return [(p.where, current_value(p)) for p in rows]


def _assert_identical(before, after):
    assert len(before) == len(after)
    for (where, old), (_, new) in zip(before, after):
        assert new is old, f"{where} was not restored to the very same object"


def _fastpass_scope():
    import fastpass

    return fastpass.enabled()


def _observe_scope():
    from verify.lowering.observe import observe_lowering

    return observe_lowering(snapshots=False, parts=True)  # the bench's: every row, the timers too


def _infer_scope():
    from verify.gate.infer import watch

    return watch(object())


@contextlib.contextmanager
def _intercept_scope():
    intercept = _intercept_module()
    intercept.install(lambda entry, original, args, kwargs: original(*args, **kwargs))
    try:
        yield
    finally:
        intercept.uninstall()


@pytest.mark.usefixtures("fastpass_disabled")
@pytest.mark.parametrize("rows, scope", [
    (_fastpass_rows, _fastpass_scope),  # all features: every row is installed
    (_observe_rows, _observe_scope),
    (_infer_rows, _infer_scope),
    (lambda: _intercept_module().patch_points(None), _intercept_scope),
], ids=["fastpass", "observe", "infer", "intercept"])
def test_restore_leaves_every_slot_identical_and_nesting_is_refused(rows, scope):
    """Off = stock: every row is installed inside the scope, and after it every patched slot holds
    the very object it held before; a second scope inside the first is refused."""
    rows = rows()
    before = _snapshot(rows)
    with scope():
        still = [where for p, (where, old) in zip(rows, before) if current_value(p) is old]
        assert not still, f"not installed: {still}"
        with pytest.raises(RuntimeError, match="already enabled"):
            with scope():
                pass
    _assert_identical(before, _snapshot(rows))


# ------------------------------------------------------------- the documented tables are the rows


@pytest.mark.parametrize("rows, document, feature_column", [
    (_fastpass_rows, "fastpass/README.md", True),
    (_observe_rows, "verify/lowering/observe.py", True),
    (_infer_rows, "verify/gate/infer.py", False),
    (lambda: _intercept_module().patch_points(None), "verify/crosscheck/intercept.py", False),
], ids=["fastpass", "observe", "infer", "intercept"])
def test_documented_table_is_the_rows(rows, document, feature_column):
    table = markdown_table(rows(), feature_column=feature_column)
    assert table in (ROOT / document).read_text(), (
        f"{document}'s patch table differs from its rows; regenerate it with "
        f"fastpass.patching.markdown_table:\n{table}")
