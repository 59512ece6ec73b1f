"""Benchmark problems that need third-party packages or offline data (benchmark-only code).

- :mod:`benchmarks.problems.yahpo`: YAHPO Gym surrogate benchmarks (real tuning landscapes,
  multi-fidelity); see ``README_yahpo.md`` beside this file.
"""
