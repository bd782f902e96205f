"""Dense encoding on Ray Data: the texts as a dataset, encoded by a pool of encoder actors.

`DenseIndex(ray={...})` sends the chunk texts of a build through `map_batches` with a
pool of `actors` actors, each holding one copy of the encoder (the model loaded once per
actor) and reserving `num_cpus` CPUs and `num_gpus` GPUs; the vectors come back in the
texts' order. The embedding cache is the one the local path uses (same key: encoder
identity and texts), so a matrix encoded on Ray is found by a local build and vice versa.

Ray is imported only here, and only when a dense index is configured with `ray`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import Field

from heta_eval.kb.index.encoders import Encoder
from heta_eval.records._base import Record

log = logging.getLogger(__name__)


class RayEncoding(Record):
    """How a dense index encodes its documents on Ray Data (`DenseIndex(ray=...)`)."""

    actors: int = Field(default=2, ge=1, description="encoder actors in the pool")
    num_cpus: float = Field(default=1, gt=0, description="CPUs reserved per actor")
    num_gpus: float = Field(default=0, ge=0, description="GPUs reserved per actor")
    batch_size: int = Field(default=256, ge=1, description="texts per Ray Data batch")
    address: str | None = Field(
        default=None,
        description="null: the Ray cluster this process is connected to, else a private "
        "local one; `auto` or `ray://host:10001` for a running cluster",
    )


class _EncoderActor:
    """One actor of the pool: encodes the batches it is given with its own encoder."""

    def __init__(self, encoder: Encoder, batch_size: int) -> None:
        self.encoder = encoder
        self.batch_size = batch_size

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        vectors = self.encoder.encode_documents(list(batch["text"]), self.batch_size)
        return {"position": batch["position"], "vector": np.asarray(vectors, dtype=np.float32)}


def encode_on_ray(
    encoder: Encoder, texts: Sequence[str], settings: RayEncoding, model_batch_size: int
) -> np.ndarray:
    """Document embeddings of `texts`, row i for texts[i], computed by Ray Data actors."""
    try:
        import ray
    except ImportError as exc:
        raise ImportError(
            f"DenseIndex(ray=...) encodes on Ray Data, which is not installed ({exc}); "
            "install it with pip install 'heta-eval[ray]', or set the index's ray: null"
        ) from exc

    started = False
    if not ray.is_initialized():
        ray.init(address=settings.address, include_dashboard=False, log_to_driver=False)
        started = True
    try:
        import ray.data

        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        dataset = ray.data.from_items(
            [{"position": i, "text": text} for i, text in enumerate(texts)]
        )
        encoded = dataset.map_batches(
            _EncoderActor,
            fn_constructor_args=(encoder, model_batch_size),
            batch_size=settings.batch_size,
            batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=settings.actors),
            num_cpus=settings.num_cpus,
            num_gpus=settings.num_gpus,
        )
        matrix: np.ndarray | None = None
        filled = 0
        # Batches arrive in any order; each carries the positions of its texts.
        for batch in encoded.iter_batches(batch_format="numpy", batch_size=None):
            vectors = batch["vector"]
            if matrix is None:
                matrix = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            matrix[batch["position"]] = vectors
            filled += len(vectors)
        if matrix is None or filled != len(texts):
            raise RuntimeError(f"Ray Data returned {filled} embeddings for {len(texts)} texts")
        log.info("dense: %d texts encoded on Ray Data by %d actors", len(texts), settings.actors)
        return matrix
    finally:
        if started:
            ray.shutdown()


def ray_settings(value: Any) -> RayEncoding | None:
    """`DenseIndex`'s `ray` argument as settings (None: encode in this process)."""
    if value is None or value is False:
        return None
    if isinstance(value, RayEncoding):
        return value
    return RayEncoding.model_validate(dict(value))
