"""The run lifecycle (the `runner` config group): one path from a config to a tracked report.

`lifecycle` (lock, identity, reuse or resume, artifacts, tracking; `evaluate()`), `assembly`
(a composed config → validated components), `identity`, `data_digest` (what makes two runs the
same), `state` and `journal` (what a run keeps to resume and to be reused), `runner` and
`units` (building, querying and scoring units of a benchmark), `artifacts` (the files of a run),
`failures` (the failure gate), `settings` (the runner group's record), `plan` (dry runs).
The runner never owns scoring policy or knowledge-base internals.
"""
