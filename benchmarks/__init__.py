"""Benchmarks of optuna-costbo: the harness (``harness/``), the problems (``problems/``), the
suite (``suite/``) and the experiment scripts; see ``benchmarks/README.md``."""
