"""Sweeps: a Hydra multirun as one MLflow parent run with its jobs as children.

`checks` validates every job before the first starts (`ValidateSweepJobs`); `callback` opens
the parent run, lets each job find it and summarises the sweep at its end
(`MlflowSweepCallback`); `ids` (the sweep's id and the files its jobs read), `config` (the
parent's name, params and tags), `parent` (its MLflow calls), `end`, `summary` and `report`
(the summary logged and printed).
"""
