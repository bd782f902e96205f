"""An evaluator of one's own: reciprocal rank of the first result that holds the answer."""

from examples.custom_evaluator.evaluator import AnswerReciprocalRank

__all__ = ["AnswerReciprocalRank"]
