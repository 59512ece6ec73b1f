"""Benchmark problems, each a ``benchmarks.harness.problem.Problem``: ``synthetic`` (the suite's
test functions and the paper's synthetic problem), ``hpo`` (live scikit-learn problems) with
``data`` (the dataset loaders), ``sensors`` (sensor placement with a moving cost), and
``yahpo`` (YAHPO Gym surrogates of OpenML runs: real tuning landscapes, multi-fidelity; needs
yahpo-gym and its data, see ``README_yahpo.md`` beside this file)."""
