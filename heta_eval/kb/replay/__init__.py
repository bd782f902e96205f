"""Replay: score rankings and answers produced elsewhere (a TREC run, predictions JSON Lines)
as a recipe like any other; and export a run's recorded answers as predictions."""

from heta_eval.kb.replay.files import ReplayInputError
from heta_eval.kb.replay.recipe import ReplayRecipe

__all__ = ["ReplayInputError", "ReplayRecipe"]
