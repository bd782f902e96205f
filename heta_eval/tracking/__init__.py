"""Trackers record runs; MLflow is imported only when a tracked run starts."""

from heta_eval.protocols import Tracker
from heta_eval.tracking.mlflow_tracker import MlflowTracker
from heta_eval.tracking.naming import flat_params, metric_name
from heta_eval.tracking.null import NullTracker

__all__ = ["MlflowTracker", "NullTracker", "Tracker", "flat_params", "metric_name"]
