"""Bridges that let heta_eval's runner evaluate other engines' recipes and users' own
pipelines unchanged: the Heta Framework (`heta`), and a LangChain, LlamaIndex or Haystack
pipeline built by a user's factory (`langchain`, `llamaindex`, `haystack`, sharing
`factory`).

Each bridge imports its engine lazily, so `import heta_eval` never needs it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from heta_eval.bridges.haystack import HaystackRecipe
    from heta_eval.bridges.heta import HetaKnowledgeBase, HetaRecipe
    from heta_eval.bridges.langchain import LangChainRecipe
    from heta_eval.bridges.llamaindex import LlamaIndexRecipe

_MODULES = {
    "HetaKnowledgeBase": "heta",
    "HetaRecipe": "heta",
    "LangChainRecipe": "langchain",
    "LlamaIndexRecipe": "llamaindex",
    "HaystackRecipe": "haystack",
}
__all__ = [
    "HaystackRecipe",
    "HetaKnowledgeBase",
    "HetaRecipe",
    "LangChainRecipe",
    "LlamaIndexRecipe",
]


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return getattr(importlib.import_module(f"{__name__}.{_MODULES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
