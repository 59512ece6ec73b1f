"""Noisy synthetic problems (issue 51): suite problems observed with additive Gaussian noise.

Every problem of the suite has a deterministic objective; real validation scores are not.
The group ``noisy`` takes four of the suite's synthetic problems (:data:`BASES`: two
adversarial, one of them the Hartmann-6 trap, the size-like HPO-shaped space, and a cheap
control) and observes each at two noise levels (:data:`LEVELS`): value = f(x) + sd e,
e ~ N(0, 1) drawn per trial from the run's seed and the trial's number
(:func:`benchmarks.harness.problem.noise_rng`), with

    sd = level x (median of f over uniform random points - f*),

the gap a random search closes, so that the levels mean the same on every base: at 0.05 the
noise is small against the spread of random values but about the size of the last
improvements of a good run; at 0.15 it hides most differences among the good points a run
ends with. The cost, the budget, f* and the trial cap are the base's; the noise-free value
(``Problem.true_value``) is the base's f, by which the reports score the incumbents
(``study.best_trial`` and the recommendation).

``python -m benchmarks.problems.noisy`` prints the problems with their sd and recomputes the
gaps (:func:`median_gap`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from benchmarks.harness.problem import AdditiveNoise
from benchmarks.harness.problem import Problem
from benchmarks.problems.synthetic import SUITE


GROUP = "noisy"
LEVELS = (0.05, 0.15)
"""Noise sd as a fraction of the gap between the median random value and f*."""

# NOTE(gaps): median_gap(SUITE[name]) (20,000 uniform points of the encoded box, seed 0),
# rounded to 4 digits and written here so that the definitions (and the fingerprints) do not
# depend on numpy's generator; tests/benchmarks/test_noisy_problems.py recomputes them.
BASES: dict[str, float] = {
    "branin-expensive": 35.39,
    "hartmann6-expensive": 3.221,
    "size-expensive": 0.3854,
    "hartmann3-cheap": 3.315,
}
"""Base problem -> median random value minus f*."""


def median_gap(problem: Problem, n: int = 20000, seed: int = 0) -> float:
    """Median of the (noise-free) value over ``n`` uniform points of the encoded box, minus
    f*."""
    rng = np.random.default_rng(seed)
    values = [problem.true_value(problem.decode(u)) for u in rng.random((n, problem.encoded_dim))]
    f_star = problem.f_star if problem.f_star is not None else 0.0
    return float(np.median(values)) - f_star


def level_tag(level: float) -> str:
    """``0.05`` -> ``"noise05"``."""
    return f"noise{round(level * 100):02d}"


def noisy_variant(base: Problem, level: float, gap: float) -> Problem:
    """``base`` observed with Gaussian noise of sd ``level * gap``, named
    ``<base>-noise<level in %>``, in the group ``noisy``."""
    sd = float(f"{level * gap:.4g}")
    return dataclasses.replace(
        base,
        name=f"{base.name}-{level_tag(level)}",
        group=GROUP,
        noisy_evaluator=AdditiveNoise(base.evaluator, sd),
        settings={**base.settings, "noise": f"gaussian sd={sd!r}"},
        description=f"{base.description}; observed with Gaussian noise, sd {sd:.4g} "
        f"({level:g} x the median random gap {gap:.4g})",
    )


def noisy_problems() -> dict[str, Problem]:
    """The group ``noisy``: every base of :data:`BASES` at every level of :data:`LEVELS`."""
    out = {}
    for name, gap in BASES.items():
        for level in LEVELS:
            problem = noisy_variant(SUITE[name], level, gap)
            out[problem.name] = problem
    return out


if __name__ == "__main__":
    for name, gap in BASES.items():
        print(f"{name:<22} gap {gap:.4g} (recomputed {median_gap(SUITE[name]):.4g})")
    for p in noisy_problems().values():
        print(f"{p.name:<32} {p.settings['noise']}")
