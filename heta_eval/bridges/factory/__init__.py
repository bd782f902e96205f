"""What every framework bridge shares: a recipe whose knowledge base a user's factory builds
(`recipe.FactoryRecipe`), the knowledge base that queries the factory's product
(`knowledge_base.FactoryKnowledgeBase`), the benchmark's documents handed over and the
framework's results mapped back with our provenance (`sources`), and the optional extras a
bridge needs (`extras`). No framework is imported here.
"""

from heta_eval.bridges.factory.extras import MissingExtraError, require
from heta_eval.bridges.factory.knowledge_base import BuildFacts, FactoryKnowledgeBase, Found
from heta_eval.bridges.factory.recipe import FactoryRecipe
from heta_eval.bridges.factory.sources import (
    LostProvenanceError,
    RetrievedItem,
    SourceText,
    provenance_keys,
)

__all__ = [
    "BuildFacts",
    "FactoryKnowledgeBase",
    "FactoryRecipe",
    "Found",
    "LostProvenanceError",
    "MissingExtraError",
    "RetrievedItem",
    "SourceText",
    "provenance_keys",
    "require",
]
