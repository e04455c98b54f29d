"""Models for the harness: the built-in real models, and random graphs (generators.random)."""

from generators.models import MODELS, ModelFactory

__all__ = ["MODELS", "ModelFactory"]
