"""The read side of tracking: runs and cases as pandas DataFrames for notebooks (`load_runs`
in `runs_frame`, `load_cases` in `cases_frame`), `heta-eval-runs`' table (`runs_table`) and a
suite sweep's table read back from its parent run (`suite_frame`).

It reads what the write side (`heta_eval.tracking`) logged and imports from it (stores, tags,
the suite table's records); it never imports `heta_eval.run`.
"""
