"""Bridge to Haystack (`pip install 'heta-eval[haystack]'`): a user's pipeline, built by a
factory named by `_target_`, evaluated as a recipe (`recipe=haystack`).

Modules: `recipe` (`HaystackRecipe`: documents in Haystack's type, the pipeline checked for
a component that gives the results), `knowledge_base` (`HaystackKnowledgeBase`:
`run_async`, documents mapped back to our provenance, the answer read from the pipeline's
outputs) and `examples` (offline factories: InMemoryBM25Retriever, and the same with
Haystack's echoing MockChatGenerator). Haystack is imported only when a recipe is created.
"""

from heta_eval.bridges.haystack.knowledge_base import HaystackKnowledgeBase
from heta_eval.bridges.haystack.recipe import HaystackRecipe

__all__ = ["HaystackKnowledgeBase", "HaystackRecipe"]
