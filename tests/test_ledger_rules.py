"""The proof ledger's rules (fastpass/annotations/_proofs.py) on hand-made ledgers, annotations
and rules: what a damaged file is refused with, when a proof holds (claim, machinery and
versions all as proven), what a claim's digest covers (a rule's code and its helpers'), and which
sound proofs `stale_sound` names. Nothing lowered: the mutation campaign (tests/mutation/) judges
the module by these tests, tests/test_verdict_rules.py and tests/test_proof_ledger.py's fast ones."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle

import pytest
import torch

from fastpass.annotations import Entry, OpFamily, _model, _proofs, overridden

S = _proofs.ProofStatus


def against(**changes) -> _proofs.ProvenAgainst:
    return dataclasses.replace(_proofs.ProvenAgainst.now(), **changes)


class ToyPass:
    """A pass class of this module's own (importable by name: `class_named` finds it)."""


class OtherToyPass:
    pass


NAME, OTHER = _model.qualname(ToyPass), _model.qualname(OtherToyPass)
ENTRY = Entry(frozenset({"aten.toy.default"}), skip_sound=True, copy_sound=False, why="test")


def annotation(entry=ENTRY) -> _model.Annotation:
    return _model.Annotation(entry.targeted_ops(), entry.skip_sound, entry.copy_sound, "test")


# ------------------------------------------------------------------------------------- load


def write(path, document) -> None:
    path.write_text(document if isinstance(document, str) else json.dumps(document))


def good(**changes) -> dict:
    document = {"format": _proofs.LEDGER_FORMAT, "gated_at": "abc", "proven_against": against().to_json(),
                "passes": {NAME: {"verdict": "sound", "claim": "c1", "reason": "r", "proven_at": "x"},
                           OTHER: {"verdict": "unexercised", "claim": "c2"}}}
    document.update(changes)
    return document


def test_a_ledger_loads_every_field(tmp_path):
    path = tmp_path / "proofs.json"
    write(path, good())
    book = _proofs.Ledger.load(path)
    assert book.proven_against == against() and book.gated_at == "abc"
    assert book.entries == {NAME: _proofs.LedgerEntry(S.SOUND, "c1", "r", {"proven_at": "x"}),
                            OTHER: _proofs.LedgerEntry(S.UNEXERCISED, "c2", "", {})}
    assert _proofs.Ledger.load(tmp_path / "none.json") == _proofs.Ledger(None, {})
    write(path, {k: v for k, v in good().items() if k != "gated_at"})
    assert _proofs.Ledger.load(path).gated_at == ""


@pytest.mark.parametrize("document, problem", [
    ("", "the file is empty"),
    ("  \n", "the file is empty"),
    ("{", "not valid JSON, truncated or edited (Expecting property name enclosed in double quotes: line 1 column 2 "
          "(char 1))"),
    ([], "a JSON object expected, found list"),
    (good(format=2), "ledger format 2, this fastpass reads 1"),
    ({k: v for k, v in good().items() if k != "format"}, "ledger format None, this fastpass reads 1"),
    (good(proven_against=None), "'proven_against' must map machinery, executorch, torch to strings, found None"),
    (good(proven_against={"machinery": "m", "executorch": "e"}),
     "'proven_against' must map machinery, executorch, torch to strings, found {'machinery': 'm', 'executorch': 'e'}"),
    (good(proven_against={"machinery": "m", "executorch": "e", "torch": 1}),
     "'proven_against' must map machinery, executorch, torch to strings, found "
     "{'machinery': 'm', 'executorch': 'e', 'torch': 1}"),
    (good(passes=[]), "'passes' must be an object (pass -> proof), found []"),
    (good(passes={"p": "sound"}), "the entry for p needs a 'verdict' and a 'claim', found 'sound'"),
    (good(passes={"p": {"verdict": "sound"}}), "the entry for p needs a 'verdict' and a 'claim', found {'verdict': 'sound'}"),
    (good(passes={"p": {"verdict": "great", "claim": "c"}}),
     "the entry for p has verdict 'great', not one of " + ", ".join(s.value for s in S)),
])
def test_a_damaged_ledger_is_refused_naming_what_is_wrong(tmp_path, document, problem):
    path = tmp_path / "proofs.json"
    write(path, document)
    with pytest.raises(_proofs.LedgerError) as caught:
        _proofs.Ledger.load(path)
    assert caught.value.problem == problem and caught.value.path == path
    assert str(caught.value) == (f"the proof ledger {path} is damaged: {problem}; restore it from git or record one "
                                 f"with `python -m verify gate --record-gated` (trust='all' needs none)")


def test_an_unreadable_ledger_is_refused(tmp_path):
    path = tmp_path / "proofs.json"
    path.write_bytes(b"\xff\xfe{")
    with pytest.raises(_proofs.LedgerError, match=r"cannot be read \(UnicodeDecodeError: "):
        _proofs.Ledger.load(path)
    with pytest.raises(_proofs.LedgerError, match=r"cannot be read \(IsADirectoryError: "):
        _proofs.Ledger.load(tmp_path)


def test_a_ledger_error_crosses_processes_intact(tmp_path):
    error = _proofs.LedgerError(tmp_path / "p.json", "the file is empty")
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is _proofs.LedgerError and str(back) == str(error)
    assert back.path == error.path and back.problem == error.problem


# ------------------------------------------------------------------------------------ status


def test_status():
    claim = _proofs.claim_digest(annotation())
    book = _proofs.Ledger(against(), {NAME: _proofs.LedgerEntry(S.UNEXERCISED, claim)})
    assert book.status(NAME, annotation(), against()) is S.UNEXERCISED
    assert book.status(OTHER, annotation(), against()) is S.UNPROVEN
    assert _proofs.Ledger(None, dict(book.entries)).status(NAME, annotation(), against()) is S.UNPROVEN
    edited = annotation(Entry(frozenset({"aten.toy.default"}), skip_sound=True, copy_sound=True))
    assert book.status(NAME, edited, against()) is S.STALE
    assert book.status(NAME, annotation(), against(machinery="0" * 16)) is S.STALE
    assert book.status(NAME, annotation()) is S.UNEXERCISED


def test_proven_against():
    now = _proofs.ProvenAgainst("m", "1.5.1", "2.13.0")
    assert now.to_json() == {"machinery": "m", "executorch": "1.5.1", "torch": "2.13.0"}
    assert now.differences(now) == []
    other = _proofs.ProvenAgainst("n", "1.5.1", "2.14.0")
    assert now.differences(other) == ["machinery m -> n", "torch 2.13.0 -> 2.14.0"]
    assert now.differences(_proofs.ProvenAgainst("m", "1.6", "2.13.0")) == ["executorch 1.5.1 -> 1.6"]
    current = _proofs.ProvenAgainst.now()
    assert current == _proofs.ProvenAgainst(_proofs.machinery_digest(), _proofs._version("executorch"),
                                            _proofs._version("torch"))
    assert current.torch == torch.__version__
    assert _proofs._version("no-such-distribution-here") == "<not installed>"
    assert str(S.STALE) == "stale" and str(_proofs.Trust.ALL) == "all"


def test_machinery_digest_covers_fastpass_own_modules_but_its_command_line():
    digest = hashlib.sha256()
    for path in sorted(_proofs._PACKAGE_DIR.glob("*.py")):
        if path.name != "__main__.py":
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    assert _proofs.machinery_digest.__wrapped__() == digest.hexdigest()[:16] == _proofs.machinery_digest()


# ----------------------------------------------------------------------------- claim digest


def _helper(op):
    return "toy" in str(op) and {"b", "a"} is not None


def _other_helper(op):
    return "toy" in str(op) and {"b", "c"} is not None


def _rule(op):
    return _helper(op)


def _rule_with_other_helper(op):
    return _other_helper(op)


def _call_rule(op, args, kwargs, value_of):
    return len(args) > 1


def test_op_name():
    assert _proofs.op_name(torch.ops.aten.add.Tensor) == "aten.add.Tensor"
    from executorch.exir.dialects._ops import ops as exir_ops

    assert _proofs.op_name(exir_ops.edge.aten.add.Tensor) == "aten.add.Tensor"
    assert _proofs.op_name(_rule) == "_rule"
    assert _proofs.op_name("aten.toy.default") == "aten.toy.default"


def test_claimed_ops_digest_a_rule_its_call_rule_and_its_helpers():
    names = _proofs.claimed_ops(frozenset({torch.ops.aten.add.Tensor, "x"}))
    assert names == frozenset({"aten.add.Tensor", "x"})
    family = OpFamily(_rule, lambda: [torch.ops.aten.add.Tensor], "toy ops")
    claimed = _proofs.claimed_ops(family)
    [rule] = [n for n in claimed if n.startswith("rule: ")]
    assert claimed == {rule} and rule.startswith("rule: toy ops [") and len(rule) == len("rule: toy ops []") + 16
    assert _proofs.claimed_ops(OpFamily(_rule, lambda: [], "toy ops")) == claimed  # the known ops are not the rule
    helper_changed = _proofs.claimed_ops(OpFamily(_rule_with_other_helper, lambda: [], "toy ops"))
    assert helper_changed != claimed  # a helper's code is part of the rule
    with_call = _proofs.claimed_ops(OpFamily(_rule, lambda: [], "toy ops", call_rule=_call_rule))
    assert with_call != claimed
    assert _proofs.claimed_ops(OpFamily(_rule, lambda: [], "other words")) != claimed
    digest = hashlib.sha256()
    _proofs._digest_code(_rule, digest, set())
    assert rule == f"rule: toy ops [{digest.hexdigest()[:16]}]"


def test_digest_code_reads_code_constants_names_and_nested_functions():
    def digest_of(fn):
        digest = hashlib.sha256()
        _proofs._digest_code(fn, digest, set())
        return digest.hexdigest()

    def one(op):
        return op == 1

    def two(op):
        return op == 2

    def other_name(op):
        return ap == 1  # noqa: F821 - a name, never run

    def nested(op):
        return [x for x in (op,) if x == 1]

    def nested_two(op):
        return [x for x in (op,) if x == 2]

    def set_literal(op):
        return op in {"a", "b", "c"}

    assert digest_of(one) != digest_of(two) and digest_of(one) != digest_of(other_name)
    assert digest_of(nested) != digest_of(nested_two)
    # a set literal is digested as its sorted reprs: its own repr's order follows the hash seed
    literal = hashlib.sha256()
    literal.update(set_literal.__code__.co_code)
    literal.update(repr(set_literal.__code__.co_names).encode())
    for const in set_literal.__code__.co_consts:
        literal.update(repr(sorted(map(repr, const))).encode() if isinstance(const, frozenset) else repr(const).encode())
    assert any(isinstance(c, frozenset) for c in set_literal.__code__.co_consts)
    assert digest_of(set_literal) == literal.hexdigest()
    reference = hashlib.sha256()
    reference.update(one.__code__.co_code)
    reference.update(repr(one.__code__.co_names).encode())
    for const in one.__code__.co_consts:
        reference.update(repr(const).encode())
    assert digest_of(one) == reference.hexdigest()
    assert digest_of(len) == hashlib.sha256().hexdigest()  # no code: nothing digested
    seen = {one.__code__}
    digest = hashlib.sha256()
    _proofs._digest_code(one, digest, seen)
    assert digest.hexdigest() == hashlib.sha256().hexdigest()  # already seen: not again


def test_claim_digest():
    assert _proofs.claim_digest(_model.NO_ANNOTATION) == "none"
    text = json.dumps([["aten.toy.default"], True, False])
    assert _proofs.claim_digest(annotation()) == hashlib.sha256(text.encode()).hexdigest()[:16]
    reworded = _model.Annotation(annotation().targeted_ops, True, False, "another source")
    assert _proofs.claim_digest(reworded) == _proofs.claim_digest(annotation())


# -------------------------------------------------------------- what fastpass consults while on


@pytest.fixture
def book():
    """The process's ledger replaced by the test's own for the test; everything cached put back."""
    saved, statuses, stale = _proofs._LEDGER, dict(_proofs._STATUS), dict(_proofs._STALE)

    def use(ledger):
        _proofs._LEDGER = ledger
        _proofs._STATUS.clear()
        return ledger

    yield use
    _proofs._LEDGER = saved
    for cache, kept in ((_proofs._STATUS, statuses), (_proofs._STALE, stale)):
        cache.clear()
        cache.update(kept)


def test_class_named():
    assert _proofs.class_named(NAME) is ToyPass
    assert _proofs.class_named("tests.test_ledger_rules.NotThere") is None
    assert _proofs.class_named("tests.test_ledger_rules.NAME") is None  # not a class
    assert _proofs.class_named("no_such_module_at_all.Pass") is None
    assert _proofs.class_named("fastpass.annotations._proofs.Ledger") is _proofs.Ledger


def test_status_of_is_cached_per_annotation_object(book):
    with overridden({ToyPass: ENTRY}):
        book(_proofs.Ledger(against(), {NAME: _proofs.LedgerEntry(S.SOUND, _proofs.claim_digest(annotation()))}))
        assert _proofs.status_of(ToyPass) is S.SOUND
        _proofs._LEDGER = _proofs.Ledger(against(), {})  # cached: the same annotation object is not judged again
        assert _proofs.status_of(ToyPass) is S.SOUND
        with overridden({ToyPass: Entry(frozenset({"aten.toy.default"}), True, True)}):
            assert _proofs.status_of(ToyPass) is S.UNPROVEN  # a new annotation object: judged anew


def test_stale_sound_names_the_sound_proofs_that_no_longer_hold(book):
    claim = _proofs.claim_digest(annotation())
    entries = {NAME: _proofs.LedgerEntry(S.SOUND, claim), OTHER: _proofs.LedgerEntry(S.SOUND, "old claim"),
               "tests.test_ledger_rules.Gone": _proofs.LedgerEntry(S.SOUND, claim),
               "tests.test_ledger_rules.Few": _proofs.LedgerEntry(S.UNEXERCISED, "old claim")}
    with overridden({ToyPass: ENTRY, OtherToyPass: ENTRY}):
        current = book(_proofs.Ledger(against(), entries))
        assert _proofs.stale_sound() == ["tests.test_ledger_rules.Gone", OTHER]
        assert _proofs._STALE[id(current)] == (current, ["tests.test_ledger_rules.Gone", OTHER])
        _proofs._STALE[id(current)] = (current, ["cached"])
        assert _proofs.stale_sound() == ["cached"]  # worked out once per ledger
        book(_proofs.Ledger(against(torch="0.0"), entries))
        assert _proofs.stale_sound() == ["tests.test_ledger_rules.Gone", OTHER, NAME]


def test_a_missing_ledger_is_warned_about_once(tmp_path, monkeypatch):
    import warnings

    import fastpass

    monkeypatch.setattr(_proofs, "LEDGER_PATH", tmp_path / "none.json")
    monkeypatch.setattr(_proofs, "_LEDGER", None)
    monkeypatch.setattr(_proofs, "_warned_missing", False)
    monkeypatch.setattr(fastpass._patches, "_warned_stale", False)  # enable reads the ledger once per process
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            with fastpass.enabled():
                pass
    _proofs.reload(_proofs.Path(_proofs.__file__).with_name("proofs.json"))
    found = [w for w in caught if "no proof ledger" in str(w.message)]
    assert [str(w.message) for w in found] == [
        f"fastpass: no proof ledger at {tmp_path / 'none.json'}: every annotation runs stock (nothing skipped or "
        f"copied by one) until `python -m verify gate --record-gated` records one"]
    # (where it points, `stacklevel`, is not asserted: it counts frames, which the mutation
    # campaign's trampolines add to)


def test_a_ledger_present_or_with_entries_is_not_warned_about(tmp_path, monkeypatch):
    import warnings

    monkeypatch.setattr(_proofs, "_warned_missing", False)
    for ledger, path in ((_proofs.Ledger(None, {}), _proofs.LEDGER_PATH),  # an empty ledger that is there
                         (_proofs.Ledger(None, {"p": _proofs.LedgerEntry(S.SOUND, "c")}), tmp_path / "none.json"),
                         (_proofs.Ledger(against(), {}), tmp_path / "none.json")):
        monkeypatch.setattr(_proofs, "LEDGER_PATH", path)
        monkeypatch.setattr(_proofs, "_LEDGER", ledger)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _proofs.stale_sound()
        assert not [w for w in caught if "no proof ledger" in str(w.message)]
    _proofs.reload(_proofs.Path(_proofs.__file__).with_name("proofs.json"))


def test_claimed_ops_of_a_family_without_a_call_rule_attribute():
    class Family:
        rule, description = staticmethod(_rule), "bare"

        def __iter__(self):
            return iter(())

    digest = hashlib.sha256()
    _proofs._digest_code(_rule, digest, set())
    assert _proofs.claimed_ops(Family()) == {f"rule: bare [{digest.hexdigest()[:16]}]"}


def _recursive(op):
    return op and _recursive(op[1:])


def test_digest_code_follows_helpers_of_the_same_module_once(monkeypatch):
    def digest_of(fn):
        digest = hashlib.sha256()
        _proofs._digest_code(fn, digest, set())
        return digest.hexdigest()

    def own(fn):
        digest = hashlib.sha256()
        code = fn.__code__
        digest.update(code.co_code)
        digest.update(repr(code.co_names).encode())
        for const in code.co_consts:
            digest.update(repr(const).encode())
        return digest

    with_helper = own(_rule)
    helper = own(_helper)  # continues the same digest: the helper is fed after the rule
    expected = hashlib.sha256()
    for fn in (_rule, _helper):
        code = fn.__code__
        expected.update(code.co_code)
        expected.update(repr(code.co_names).encode())
        for const in code.co_consts:
            if isinstance(const, frozenset):
                expected.update(repr(sorted(map(repr, const))).encode())
            else:
                expected.update(repr(const).encode())
    assert digest_of(_rule) == expected.hexdigest() != with_helper.hexdigest() != helper.hexdigest()
    before = digest_of(_rule)
    monkeypatch.setattr(__import__(__name__, fromlist=["_helper"]), "_helper", _other_helper)
    assert digest_of(_rule) != before  # the helper's code is part of the rule
    monkeypatch.setattr(__import__(__name__, fromlist=["_helper"]), "_helper", len)
    assert digest_of(_rule) == own(_rule).hexdigest()  # not this module's: not followed
    assert digest_of(_recursive) == own(_recursive).hexdigest()  # itself once


def test_digest_code_walks_nested_code():
    def nested(op):
        return [x for x in (op,) if x == 1]

    digest = hashlib.sha256()
    _proofs._digest_code(nested, digest, set())
    expected = hashlib.sha256()
    stack = [nested.__code__]
    while stack:
        code = stack.pop()
        expected.update(code.co_code)
        expected.update(repr(code.co_names).encode())
        for const in code.co_consts:
            if hasattr(const, "co_code"):
                stack.append(const)
            else:
                expected.update(repr(const).encode())
    assert any(hasattr(c, "co_code") for c in nested.__code__.co_consts)
    assert digest.hexdigest() == expected.hexdigest()


def test_class_named_tries_every_module_prefix():
    import collections.abc

    assert _proofs.class_named("collections.abc.Mapping") is collections.abc.Mapping
    assert _proofs.class_named("collections.OrderedDict") is collections.OrderedDict
    assert _proofs.class_named("tests.test_ledger_rules.ToyPass") is ToyPass
    assert _proofs.class_named("fastpass.annotations._model.Annotation") is _model.Annotation
    assert _proofs.class_named("ToyPass") is None


def test_an_unreadable_ledger_names_its_path(tmp_path):
    with pytest.raises(_proofs.LedgerError) as caught:
        _proofs.Ledger.load(tmp_path)
    assert caught.value.path == tmp_path


def test_digest_code_of_a_callable_without_globals():
    class Rule:  # a callable with code but no module globals (what a C-made or proxy callable may be)
        __code__ = _rule.__code__

    digest = hashlib.sha256()
    _proofs._digest_code(Rule(), digest, set())
    plain = hashlib.sha256()
    plain.update(_rule.__code__.co_code)
    plain.update(repr(_rule.__code__.co_names).encode())
    for const in _rule.__code__.co_consts:
        plain.update(repr(const).encode())
    assert digest.hexdigest() == plain.hexdigest()  # its own code, no helper (none can be looked up)


@pytest.fixture
def ledger_path(tmp_path, monkeypatch):
    """fastpass reads the ledger at a path of the test's own, afresh; the checked-in one is read again after."""
    path = tmp_path / "proofs.json"
    monkeypatch.setattr(_proofs, "LEDGER_PATH", path)
    monkeypatch.setattr(_proofs, "_LEDGER", None)
    monkeypatch.setattr(_proofs, "_UNREADABLE", None)
    monkeypatch.setattr(_proofs, "_STATUS", {})
    yield path
    monkeypatch.undo()
    _proofs.reload()


def _sound_ledger() -> dict:
    return {"format": _proofs.LEDGER_FORMAT, "gated_at": "t", "proven_against": against().to_json(),
            "passes": {NAME: {"verdict": "sound", "claim": _proofs.claim_digest(annotation())}}}


def test_status_of_reads_the_ledger_once_and_an_unreadable_one_proves_nothing(ledger_path):
    write(ledger_path, _sound_ledger())
    with overridden({ToyPass: ENTRY}):
        assert _proofs.status_of(ToyPass) is S.SOUND  # read on first use
    write(ledger_path, "{")
    _proofs._LEDGER, _proofs._STATUS = None, {}
    with pytest.raises(_proofs.LedgerError):
        _proofs.ledger()
    assert isinstance(_proofs._UNREADABLE, _proofs.LedgerError)
    write(ledger_path, _sound_ledger())  # mended, but not read again per pass: the next enable reads it
    with overridden({ToyPass: ENTRY}):
        assert _proofs.status_of(ToyPass) is S.UNPROVEN
    assert _proofs.ledger().entries  # read again when asked for
    assert _proofs._UNREADABLE is None


def test_a_failed_reload_leaves_no_ledger_behind(ledger_path, tmp_path):
    write(ledger_path, _sound_ledger())
    _proofs.reload(ledger_path)
    assert _proofs._UNREADABLE is None
    bad = tmp_path / "bad.json"
    write(bad, "{")
    with pytest.raises(_proofs.LedgerError):
        _proofs.reload(bad)
    assert _proofs._LEDGER is None
    with overridden({ToyPass: ENTRY}):
        assert _proofs.status_of(ToyPass) is S.SOUND  # LEDGER_PATH read afresh: it was never unreadable


def test_a_missing_ledger_is_warned_about_once_per_process(tmp_path, monkeypatch):
    import warnings

    monkeypatch.setattr(_proofs, "LEDGER_PATH", tmp_path / "none.json")
    monkeypatch.setattr(_proofs, "_LEDGER", _proofs.Ledger(None, {}))
    monkeypatch.setattr(_proofs, "_warned_missing", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _proofs.stale_sound()
        _proofs.stale_sound()
    assert len([w for w in caught if "no proof ledger" in str(w.message)]) == 1
    assert _proofs._warned_missing is True
    _proofs.reload(_proofs.Path(_proofs.__file__).with_name("proofs.json"))


def test_class_named_imports_the_module_its_name_begins_with(tmp_path, monkeypatch):
    """A class in a module no one imported yet, nested in another class: the name's longest
    importable prefix is the module, and the rest are attributes."""
    import random
    import sys

    package = f"fastpass_test_pkg_{random.randrange(10**9)}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / "mod.py").write_text("class Outer:\n    class Inner:\n        pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = _proofs.class_named(f"{package}.mod.Outer.Inner")
    assert found is not None and found.__qualname__ == "Outer.Inner" and found.__module__ == f"{package}.mod"
    assert _proofs.class_named(f"{package}.mod.Outer.Missing") is None
    for name in [n for n in sys.modules if n.startswith(package)]:
        del sys.modules[name]


def test_the_missing_ledger_warning_points_at_the_caller_of_enable(tmp_path, monkeypatch):
    """stale_sound <- _patches._warn_if_stale <- _patches.install <- fastpass.enable <- its caller:
    five frames up, the line that turned fastpass on (as _warn_if_stale's own warning, four up).
    The argument is recorded rather than the frame read: the campaign's trampolines add frames."""
    import types

    import fastpass

    calls = []
    monkeypatch.setattr(_proofs, "warnings", types.SimpleNamespace(warn=lambda *a, **k: calls.append((a, k))))
    monkeypatch.setattr(_proofs, "LEDGER_PATH", tmp_path / "none.json")
    monkeypatch.setattr(_proofs, "_LEDGER", None)
    monkeypatch.setattr(_proofs, "_warned_missing", False)
    monkeypatch.setattr(fastpass._patches, "_warned_stale", False)
    fastpass.enable()
    fastpass.disable()
    _proofs.reload(_proofs.Path(_proofs.__file__).with_name("proofs.json"))
    [(args, kwargs)] = calls
    assert kwargs == {"stacklevel": 5} and "no proof ledger" in args[0]
