"""Search indexes over chunks and the fusion of their rankings.

`base` holds the protocols every index follows (Hits, SearchIndex, IndexBuilder, Fusion) and
the base classes with their defaults (BaseSearchIndex, BaseIndexBuilder); `bm25`
the sparse index; `dense` the embedding index, with its `encoders` and `embedding_cache`;
`fusion` the hybrid query modes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from heta_eval.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from heta_eval.kb.index.base import (
        BaseIndexBuilder,
        BaseSearchIndex,
        Fusion,
        Hits,
        IndexBuilder,
        SearchIndex,
    )
    from heta_eval.kb.index.bm25 import BM25Index
    from heta_eval.kb.index.dense import DenseIndex
    from heta_eval.kb.index.embedding_cache import EmbeddingCache
    from heta_eval.kb.index.encoders import (
        Encoder,
        OpenAIEmbeddingEncoder,
        SentenceTransformerEncoder,
    )
    from heta_eval.kb.index.fusion import ReciprocalRankFusion, WeightedScoreFusion

# Names are imported on first use (PEP 562): resolving the BM25 index does not load numpy
# and the dense modules.
_MODULES = {
    "heta_eval.kb.index.base": (
        "BaseIndexBuilder",
        "BaseSearchIndex",
        "Fusion",
        "Hits",
        "IndexBuilder",
        "SearchIndex",
    ),
    "heta_eval.kb.index.bm25": ("BM25Index",),
    "heta_eval.kb.index.dense": ("DenseIndex",),
    "heta_eval.kb.index.embedding_cache": ("EmbeddingCache",),
    "heta_eval.kb.index.encoders": (
        "Encoder",
        "OpenAIEmbeddingEncoder",
        "SentenceTransformerEncoder",
    ),
    "heta_eval.kb.index.fusion": ("ReciprocalRankFusion", "WeightedScoreFusion"),
}
__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())

__all__ = [
    "BM25Index",
    "BaseIndexBuilder",
    "BaseSearchIndex",
    "DenseIndex",
    "EmbeddingCache",
    "Encoder",
    "Fusion",
    "Hits",
    "IndexBuilder",
    "OpenAIEmbeddingEncoder",
    "ReciprocalRankFusion",
    "SearchIndex",
    "SentenceTransformerEncoder",
    "WeightedScoreFusion",
]
