"""Bridges that let heta_eval's runner evaluate recipes of other engines unchanged.

Each bridge imports its engine lazily, so `import heta_eval` never needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from heta_eval.bridges import heta

if TYPE_CHECKING:
    from heta_eval.bridges.heta import HetaKnowledgeBase, HetaRecipe

__all__ = ["HetaKnowledgeBase", "HetaRecipe"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(heta, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
