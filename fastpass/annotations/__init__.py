"""Which ops a pass targets, and what that knowledge is sound for.

Two separate facts are recorded per pass class (looked up by qualified name):

* ``skip_sound``: if none of ``targeted_ops`` occurs in the graph (or nested
  GraphModule submodules), running the pass is exactly a plain retrace by its
  base class (no rewrite, no ``call()`` side effects, no state).
* ``copy_sound``: when the pass runs, every node whose op is *not* targeted is
  emitted by the base ``call_operator`` with its own args/meta, i.e. its output
  is just the dispatch of its op.  The pass does not look at users or other
  nodes to decide, keeps no cross-node state, and its ``call()`` (if any) does
  not change the graph before/after the retrace in a way that makes the
  recorded per-node values stale.

``lookup(pass_or_cls)`` returns an :class:`Annotation`; sources, in priority
order: the registry :class:`Entry` in effect (``overridden`` contexts, then
``register``-ed entries, then the checked-in ``arm_registry``), then
auto-discovery from class attributes (``_discover``).  Upstream
``ArmOpTargetedPass.target_ops`` is only ever treated as skip-sound.

A temporary entry (the gate isolating one pass, a test's deliberately wrong
claim) is ``with overridden({PassClass: Entry(...)}): ...``: it restores what
was there on exit and never writes to the checked-in table.
"""

from __future__ import annotations

from ._model import LITERAL, NO_ANNOTATION, UPSTREAM, Annotation, Entry, OpFamily, qualname
from ._lookup import OverrideOrderError, entries, entry, lookup, overridden, register, registered_names, unregister
from ._proofs import (
    LEDGER_PATH, Ledger, LedgerError, ProofStatus, ProvenAgainst, Trust, claim_digest, claimed_ops, op_name, status_of,
)

__all__ = ["Annotation", "Entry", "LEDGER_PATH", "LITERAL", "Ledger", "LedgerError",
           "NO_ANNOTATION", "OpFamily", "OverrideOrderError",
           "ProofStatus", "ProvenAgainst", "Trust", "UPSTREAM", "claim_digest", "claimed_ops", "entries", "entry",
           "lookup", "op_name", "overridden", "qualname", "register", "registered_names", "status_of", "unregister"]
