"""Models for the harness: the built-in real models, and random graphs (generators.random)."""

from generators.models import MODELS, ModelFactory

__all__ = ["MODELS", "ModelFactory"]

# Random graphs (see generators.random): re-exported for convenience.  Not `models` (the
# strategy): that name would shadow the generators.models submodule.
from generators.random import (  # noqa: E402
    GeneratorBug,
    GraphSpec,
    check_buildable,
    graphs,
    ops_in_vocabulary,
)

__all__ += ["GeneratorBug", "GraphSpec", "check_buildable", "graphs", "ops_in_vocabulary"]
