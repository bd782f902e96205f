"""Bridge to LangChain (`pip install 'heta-eval[langchain]'`): a user's retriever or chain,
built by a factory named by `_target_`, evaluated as a recipe (`recipe=langchain`).

Modules: `recipe` (`LangChainRecipe`: documents in LangChain's type, what the factory
returned checked), `knowledge_base` (`LangChainKnowledgeBase`: `ainvoke`, documents mapped
back to our provenance) and `examples` (offline factories: BM25 over rank_bm25, and a
retrieval chain over LangChain's echo model). LangChain is imported only when a recipe is
created.
"""

from heta_eval.bridges.langchain.knowledge_base import LangChainKnowledgeBase
from heta_eval.bridges.langchain.recipe import LangChainRecipe

__all__ = ["LangChainKnowledgeBase", "LangChainRecipe"]
