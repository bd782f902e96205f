"""Bridge to LlamaIndex (`pip install 'heta-eval[llamaindex]'`): a user's retriever or query
engine, built by a factory named by `_target_`, evaluated as a recipe (`recipe=llamaindex`).

Modules: `recipe` (`LlamaIndexRecipe`: documents in LlamaIndex's type, what the factory
returned checked), `knowledge_base` (`LlamaIndexKnowledgeBase`: `aretrieve`/`aquery`,
nodes mapped back to our provenance) and `examples` (offline factories: a keyword table,
a query engine over LlamaIndex's MockLLM, BM25 when llama-index-retrievers-bm25 is
installed). LlamaIndex is imported only when a recipe is created.
"""

from heta_eval.bridges.llamaindex.knowledge_base import LlamaIndexKnowledgeBase
from heta_eval.bridges.llamaindex.recipe import LlamaIndexRecipe

__all__ = ["LlamaIndexKnowledgeBase", "LlamaIndexRecipe"]
