"""The paper's evaluation: its grids (``benchmarks/grids/``) and docs/results.md from results.

The grids are planned by the sweep machinery (``python -m autotm_core sweep --grid
FILE``); this package only turns a grid and its results file into the Markdown
page and figures. ``benchmarks/paper_eval.py`` runs both.
"""
