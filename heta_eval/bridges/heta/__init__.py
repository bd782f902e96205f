"""Bridge to the Heta Framework (`pip install heta-framework`): its recipes, run unchanged.

`HetaRecipe` is a `RecipeLike` whose stores, parsers, models and steps are `_target_` specs
of Heta's own classes (`heta_framework.kb.ParseDocuments`, `...InMemoryTextIndexStore`, ...).
Each build instantiates them afresh, copies the raw documents from heta_eval's object store
into Heta's object store under the *same* raw keys (`raw/benchmarks/{b}/{split}/{doc}/{name}`),
runs Heta's `KnowledgeBase.create` and wraps the result in a `HetaKnowledgeBase`, whose
`query` calls Heta's `kb.query` and converts the answer into heta_eval's `QueryResponse`.

Modules: `components` (the specs instantiated into Heta's component groups, the installed
version), `tokenizer` (tiktoken encodings from local copies, so that a build stays offline),
`recipe` (`HetaRecipe`: validation, manifest, the build) and `knowledge_base`
(`HetaKnowledgeBase`: Heta's results converted, with provenance). heta-framework itself is
imported only when a recipe is created or built.
"""

from heta_eval.bridges.heta.components import HetaNotInstalledError
from heta_eval.bridges.heta.knowledge_base import HetaKnowledgeBase, document_id_from_raw_key
from heta_eval.bridges.heta.recipe import HetaRecipe

__all__ = ["HetaKnowledgeBase", "HetaNotInstalledError", "HetaRecipe", "document_id_from_raw_key"]
