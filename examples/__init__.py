"""Worked examples: a benchmark adapter, a chunker and an evaluator of one's own.

Their Hydra configs are in `examples/conf`; add them to the search path to use them:
`heta-eval 'hydra.searchpath=[file://examples/conf]' benchmark=rivers ...`.
"""
