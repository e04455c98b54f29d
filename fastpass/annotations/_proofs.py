"""The proof ledger: which annotations the gate has proven, and against what.

Why a ledger: all of fastpass's skip and copy speed rests on the per-pass annotations, and an
annotation is trustworthy only once the gate (``python -m verify gate``) has found fastpass acting
in that pass on enough graphs with identical results. That proof is a fact about one claim
(the ops, skip-sound, copy-sound), one version of fastpass's own skip/copy machinery and one
executorch/torch pair; change any of them and the proof no longer says anything. So the ledger
(``proofs.json`` beside this file, written by ``python -m verify gate --record-gated`` after a
passing whole-registry run) keeps, per pass, the gate's verdict, its evidence, and digests of
what was proven: the claim (``claim_digest``) and the machinery (``machinery_digest``), with the
executorch and torch versions. ``status`` compares them with what is in effect now: a proof whose
claim, machinery or versions differ is ``stale``.

``fastpass.enabled(trust="proven")`` (the default) uses an annotation only when its status is
``sound``: everything else runs stock (upstream's own skip still applies).
"""

from __future__ import annotations

import enum
import functools
import hashlib
import importlib.metadata
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, FrozenSet, Mapping, Optional

from ._model import NO_ANNOTATION, Annotation, qualname

LEDGER_PATH = Path(__file__).with_name("proofs.json")
LEDGER_FORMAT = 1
# What the machinery digest covers: fastpass's own modules, not the annotations (a change there
# is judged per claim by claim_digest) and not documentation.
_PACKAGE_DIR = Path(__file__).resolve().parent.parent
_NOT_MACHINERY = frozenset({"__main__.py"})


class LedgerError(ValueError):
    """The proof ledger cannot be read: which file, and what is wrong with it, in one line.

    Why one error of fastpass's own: a JSONDecodeError or KeyError from deep in the read names
    neither the file to restore nor the way out, and under the default trust fastpass cannot
    know which annotations are proven without it."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"the proof ledger {path} is damaged: {problem}; restore it from git or record one with "
                         f"`python -m verify gate --record-gated` (trust='all' needs none)")
        self.path, self.problem = path, problem

    def __reduce__(self) -> tuple:
        return LedgerError, (self.path, self.problem)  # a worker's error crosses processes intact


class ProofStatus(str, enum.Enum):
    """An annotation's standing: what the gate found for its pass (``python -m verify gate``, one
    verdict per annotated pass), and the same word in the ledger, read as fastpass sees it now.

    One enum for both uses: the ledger records the gate's verdict as it is, so a verdict and a
    status are the same value and never converted. Two members are the ledger's own readings and
    never a gate verdict: ``STALE`` (a proof whose claim, machinery or versions changed since) and
    ``UNPROVEN`` (no entry at all). Both are neither unsound nor failing (``fails``): nothing was
    found wrong, only nothing holds (``unproven``)."""

    SOUND = "sound"  # proven: fastpass acted in the pass on enough graphs, always identical
    UNEXERCISED = "unexercised"  # no divergence, but the gate saw fastpass act too little (the reason: what was missing)
    UNTESTED = "untested"  # no pipeline invokes it and it cannot run standalone
    INERT = "inert"  # fastpass cannot act in it: its code never retraces, or upstream skips every call (reason)
    UNREACHABLE = "unreachable"  # no graph of the generators presents what it acts on (reason given)
    UNSOUND_SKIP = "unsound-skip"  # skipping the pass changed the result (the gate saved a reproducer)
    UNSOUND_COPY = "unsound-copy"  # copying nodes of the pass changed the result (the gate saved a reproducer)
    ERROR = "error"  # the gate could not decide (harness failure, unattributed divergence)
    STALE = "stale"  # ledger only: proven once, but its claim, the machinery or executorch/torch changed since
    UNPROVEN = "unproven"  # ledger only: no ledger entry at all

    def __str__(self) -> str:
        return self.value

    @classmethod
    def unsound(cls, feature: Any) -> "ProofStatus":
        """The verdict for a divergence caused by `feature`: a fastpass feature named ``skip`` or
        ``copy`` (verify's ``Feature`` members are such names); any other is a ValueError."""
        try:
            return _UNSOUND[feature]
        except (KeyError, TypeError):
            raise ValueError(f"{feature!r} is not a feature an annotation claims sound (skip, copy)") from None

    @property
    def is_unsound(self) -> bool:
        return self in (ProofStatus.UNSOUND_SKIP, ProofStatus.UNSOUND_COPY)

    @property
    def unproven(self) -> bool:
        """Neither sound nor a failure: no divergence, but nothing proven either (the reason says
        why; a stale proof or a missing entry holds nothing either)."""
        return self in (ProofStatus.UNEXERCISED, ProofStatus.UNTESTED, ProofStatus.INERT, ProofStatus.UNREACHABLE,
                        ProofStatus.STALE, ProofStatus.UNPROVEN)

    @property
    def ledger_only(self) -> bool:
        """A reading of the ledger (``stale``, ``unproven``), never a verdict the gate gives."""
        return self in (ProofStatus.STALE, ProofStatus.UNPROVEN)

    @property
    def fails(self) -> bool:
        """Does this verdict fail CI (and block recording the gated revision)? Unsound or an error;
        never a ledger-only reading (the gate does not give them)."""
        return self.is_unsound or self is ProofStatus.ERROR


_UNSOUND = {"skip": ProofStatus.UNSOUND_SKIP, "copy": ProofStatus.UNSOUND_COPY}  # a str Enum member keys as its value


class Trust(str, enum.Enum):
    """Which annotations ``fastpass.enabled`` uses."""

    PROVEN = "proven"  # only those whose ledger status is sound (the default)
    ALL = "all"  # every annotation in effect, proven or not (the gate, which proves them, needs this)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class ProvenAgainst:
    """What a ledger's proofs hold for: fastpass's machinery and the executorch/torch versions."""

    machinery: str
    executorch: str
    torch: str

    @classmethod
    def now(cls) -> "ProvenAgainst":
        """What this process runs (read once per process: it does not change under a lowering)."""
        return _now()

    def to_json(self) -> Dict[str, str]:
        return {"machinery": self.machinery, "executorch": self.executorch, "torch": self.torch}

    def differences(self, other: "ProvenAgainst") -> list:
        """What differs, in words (empty: nothing)."""
        return [f"{name} {getattr(self, name)} -> {getattr(other, name)}"
                for name in ("machinery", "executorch", "torch") if getattr(self, name) != getattr(other, name)]


@dataclass(frozen=True)
class LedgerEntry:
    """One pass's proof: the gate's verdict and what it was proven for."""

    verdict: ProofStatus
    claim: str  # claim_digest of the annotation the gate proved
    reason: str = ""
    record: Mapping[str, Any] = field(default_factory=dict)  # evidence, stages, settings: for readers


@dataclass(frozen=True)
class Ledger:
    FORMAT = LEDGER_FORMAT  # what `load` reads and verify's writer writes

    proven_against: Optional[ProvenAgainst]
    entries: Mapping[str, LedgerEntry]
    gated_at: str = ""  # the commit the proving run was recorded at

    @classmethod
    def load(cls, path: Optional[Path] = None) -> "Ledger":
        """The ledger at `path` (default: ``LEDGER_PATH`` as it is now); an empty one if there is none
        (then nothing is proven). A file that is there but unreadable is a `LedgerError`."""
        path = LEDGER_PATH if path is None else path
        try:
            text = path.read_text()
        except FileNotFoundError:
            return cls(None, {})
        except (OSError, UnicodeDecodeError) as exc:
            raise LedgerError(path, f"cannot be read ({exc.__class__.__name__}: {exc})") from None
        if not text.strip():
            raise LedgerError(path, "the file is empty")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LedgerError(path, f"not valid JSON, truncated or edited ({exc})") from None
        return cls._parse(path, data)

    @classmethod
    def _parse(cls, path: Path, data: Any) -> "Ledger":
        """The ledger `data` (parsed JSON) describes, each thing it lacks a `LedgerError`."""
        if not isinstance(data, dict):
            raise LedgerError(path, f"a JSON object expected, found {type(data).__name__}")
        if data.get("format") != LEDGER_FORMAT:
            raise LedgerError(path, f"ledger format {data.get('format')!r}, this fastpass reads {LEDGER_FORMAT}")
        against = data.get("proven_against")
        keys = ("machinery", "executorch", "torch")
        if not isinstance(against, dict) or sorted(against) != sorted(keys) \
                or not all(isinstance(against[k], str) for k in keys):
            raise LedgerError(path, f"'proven_against' must map {', '.join(keys)} to strings, found {against!r:.80}")
        passes = data.get("passes")
        if not isinstance(passes, dict):
            raise LedgerError(path, f"'passes' must be an object (pass -> proof), found {passes!r:.80}")
        entries = {}
        for name, e in passes.items():
            if not isinstance(e, dict) or not isinstance(e.get("claim"), str):
                raise LedgerError(path, f"the entry for {name} needs a 'verdict' and a 'claim', found {e!r:.80}")
            try:
                verdict = ProofStatus(e.get("verdict"))
            except ValueError:
                raise LedgerError(path, f"the entry for {name} has verdict {e.get('verdict')!r}, not one of "
                                        f"{', '.join(s.value for s in ProofStatus)}") from None
            entries[name] = LedgerEntry(verdict, e["claim"], str(e.get("reason", "")),
                                        {k: v for k, v in e.items() if k not in ("verdict", "claim", "reason")})
        return cls(ProvenAgainst(**against), entries, str(data.get("gated_at", "")))

    def status(self, name: str, annotation: Annotation, now: Optional[ProvenAgainst] = None) -> ProofStatus:
        """The standing of `annotation` (the one in effect for pass `name`) against this ledger."""
        found = self.entries.get(name)
        if found is None or self.proven_against is None:
            return ProofStatus.UNPROVEN
        now = now or ProvenAgainst.now()
        if self.proven_against != now or found.claim != claim_digest(annotation):
            return ProofStatus.STALE
        return found.verdict


@functools.lru_cache(maxsize=1)
def _now() -> ProvenAgainst:
    return ProvenAgainst(machinery_digest(), _version("executorch"), _version("torch"))


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "<not installed>"


@functools.lru_cache(maxsize=1)
def machinery_digest() -> str:
    """sha256 over fastpass's own modules (``fastpass/*.py``, names and bytes): what makes a claim
    sound or not. Read once per process: the files do not change under a running lowering.
    ``__main__.py`` (the ``python -m fastpass`` command line) is left out: it starts a script
    with fastpass on and copies or skips nothing itself."""
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE_DIR.glob("*.py")):
        if path.name in _NOT_MACHINERY:
            continue
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def op_name(op: Any) -> str:
    """`aten.add.Tensor` for aten and edge overloads alike; str(op) otherwise."""
    import torch

    try:
        from executorch.exir.dialects.edge._ops import EdgeOpOverload

        if isinstance(op, EdgeOpOverload):
            op = op._op
    except ImportError:  # pragma: no cover
        pass
    if isinstance(op, torch._ops.OpOverload):
        return str(op)  # aten.add.Tensor
    return getattr(op, "__name__", None) or str(op)


def claimed_ops(ops: Any) -> FrozenSet[str]:
    """The op names an annotation claims; a rule-based family (`OpFamily`) also claims its rules,
    by description and by a digest of their code (so editing a rule re-gates its pass, which
    the names alone would not: a pure call rule names no op)."""
    names = frozenset(op_name(op) for op in ops)
    rule = getattr(ops, "rule", None)
    if rule is None:
        return names
    digest = hashlib.sha256()
    for fn in (rule, getattr(ops, "call_rule", None)):
        if fn is not None:
            _digest_code(fn, digest, set())
    return names | {f"rule: {ops.description} [{digest.hexdigest()[:16]}]"}


def _digest_code(fn: Any, digest: Any, seen: set) -> None:
    """Feed `fn`'s bytecode, constants and names into `digest`, and those of every function of its
    own module it calls by global name (a rule's helpers are part of the rule)."""
    code = getattr(fn, "__code__", None)
    if code is None or code in seen:
        return
    seen.add(code)
    stack, names = [code], []
    while stack:
        c = stack.pop()
        digest.update(c.co_code)
        digest.update(repr(c.co_names).encode())
        names.extend(c.co_names)
        for const in c.co_consts:
            if hasattr(const, "co_code"):
                stack.append(const)  # a nested function or comprehension
            elif isinstance(const, frozenset):  # a set literal: its repr order follows the hash seed
                digest.update(repr(sorted(map(repr, const))).encode())
            else:
                digest.update(repr(const).encode())
    module_globals = getattr(fn, "__globals__", {})
    for name in names:
        helper = module_globals.get(name)
        if getattr(helper, "__module__", None) == fn.__module__:
            _digest_code(helper, digest, seen)


def claim_digest(annotation: Annotation) -> str:
    """A digest of what `annotation` claims (its op names and rules, skip-sound, copy-sound): what
    the gate proves, and so what a proof stays valid for. `source` and an entry's `why` are not
    part of it: rewording a reason proves nothing anew."""
    if annotation is NO_ANNOTATION:
        return "none"
    text = json.dumps([sorted(claimed_ops(annotation.targeted_ops)), annotation.skip_sound, annotation.copy_sound])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# --- what fastpass consults while enabled -------------------------------------------------------

_LEDGER: Optional[Ledger] = None
_UNREADABLE: Optional[LedgerError] = None  # why the last read of the ledger failed (None: it did not)
_STATUS: Dict[int, tuple] = {}  # id(annotation) -> (annotation, status): lookup's answers are cached objects
_warned_missing = False


def ledger() -> Ledger:
    """The ledger at ``LEDGER_PATH``, read once per process (``reload()`` reads it again). A damaged
    one raises `LedgerError` on every call, read afresh each time: nothing is cached from it."""
    global _LEDGER, _UNREADABLE
    if _LEDGER is None:
        try:
            book = Ledger.load()
        except LedgerError as exc:
            _UNREADABLE = exc
            raise
        _LEDGER, _UNREADABLE = book, None
        _STATUS.clear()
    return _LEDGER


def reload(path: Optional[Path] = None) -> Ledger:
    """Read the ledger again (after the gate recorded one, or from another file)."""
    global _LEDGER, _UNREADABLE
    _LEDGER = None
    _STATUS.clear()
    _LEDGER = Ledger.load(path)
    _UNREADABLE = None
    return _LEDGER


def status_of(cls: type) -> ProofStatus:
    """The ledger status of the annotation in effect for pass class `cls` (class-level, as the gate
    proves it). Cached per annotation object: ``lookup`` hands out the same object until an entry
    changes (``overridden``, ``register``), and a changed entry is a new object, judged anew.

    An unreadable ledger proves nothing: ``unproven``. Only ``trust="all"`` gets here with one
    (the default trust refuses it at ``enable``), and that trust needs no ledger."""
    from ._lookup import lookup

    annotation = lookup(cls)
    known = _STATUS.get(id(annotation))
    if known is not None and known[0] is annotation:
        return known[1]
    if _LEDGER is None and _UNREADABLE is not None:
        return ProofStatus.UNPROVEN  # not re-read per pass: the next enable(trust="proven") reads it again
    try:
        book = ledger()
    except LedgerError:
        return ProofStatus.UNPROVEN
    status = book.status(qualname(cls), annotation)
    _STATUS[id(annotation)] = (annotation, status)
    return status


def class_named(name: str) -> Optional[type]:
    """The class with qualified name `name` (module path, then the class's own qualname), imported;
    None if it cannot be imported."""
    import importlib

    parts = name.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            value: Any = importlib.import_module(".".join(parts[:split]))
        except Exception:  # noqa: BLE001 - not a module (yet): try a shorter prefix
            continue
        for attribute in parts[split:]:
            value = getattr(value, attribute, None)
        return value if isinstance(value, type) else None
    return None


_STALE: Dict[int, tuple] = {}  # id(ledger) -> (ledger, names)


def stale_sound() -> list:
    """The passes the ledger proves sound whose proof no longer holds (their claim, the machinery
    or the versions changed): what ``enable`` warns about, and what stays stock until a gate run
    proves them again. Worked out once per ledger and process. A damaged ledger raises
    `LedgerError`; a missing one warns once that every annotation runs stock (nothing is proven)."""
    global _warned_missing
    book = ledger()
    if book.proven_against is None and not book.entries and not _warned_missing and not LEDGER_PATH.exists():
        _warned_missing = True
        warnings.warn(f"fastpass: no proof ledger at {LEDGER_PATH}: every annotation runs stock (nothing skipped "
                      f"or copied by one) until `python -m verify gate --record-gated` records one",
                      stacklevel=5)
    known = _STALE.get(id(book))
    if known is not None and known[0] is book:
        return known[1]
    from ._lookup import lookup

    now = ProvenAgainst.now()
    names = []
    for name, entry in sorted(book.entries.items()):
        if entry.verdict is not ProofStatus.SOUND:
            continue
        cls = class_named(name)
        if cls is None or book.status(name, lookup(cls), now) is not ProofStatus.SOUND:
            names.append(name)
    _STALE[id(book)] = (book, names)
    return names
