"""BoTorch references: plain, textbook cost-aware BO written with BoTorch's defaults.

An ask-and-tell policy over the problem's unit-box encoding (floats and ints one column each,
categoricals one-hot; ints rounded and one-hot blocks argmaxed on decode, and the models see
the decoded points re-encoded):

- start-up: the first 2(d+1) points of a scrambled Sobol sequence (seeded), d = number of
  parameters (the same rule as ``CostRolloutSampler``'s default);
- model: ``SingleTaskGP`` on the observed values (BoTorch's defaults: Matern-5/2 ARD with
  its dimension-scaled priors, inferred noise, ``Standardize`` outcome transform), fitted by
  ``fit_gpytorch_mll``; for the cost-aware variants a second ``SingleTaskGP`` on log(cost);
- acquisitions (all minimizing):
  - ``logei``: ``LogExpectedImprovement`` (cost-blind);
  - ``logeipu``: log EI - log c(x), c(x) = exp(posterior mean of log cost): EI per unit cost;
  - ``eicool``: log EI - alpha log c(x), alpha = remaining budget / budget (EI-cool: cost-aware
    early, plain EI at the end);
- maximization: ``optimize_acqf`` with ``num_restarts=10, raw_samples=512`` and otherwise
  BoTorch's defaults, over the relaxed box; the result is decoded (rounded / argmaxed).

torch and botorch are benchmark-only dependencies.
"""

from __future__ import annotations

from typing import Any

import numpy as np


VARIANTS = ("logei", "logeipu", "eicool")
NUM_RESTARTS = 10
RAW_SAMPLES = 512


def _torch() -> Any:
    import torch

    torch.set_num_threads(1)
    return torch


def sobol_startup(dim: int, n: int, seed: int) -> np.ndarray:
    """The first ``n`` points of a scrambled Sobol sequence in [0, 1]^dim, shape (n, dim)."""
    torch = _torch()
    engine = torch.quasirandom.SobolEngine(dim, scramble=True, seed=seed)
    return engine.draw(n, dtype=torch.double).numpy()


def _fit(train_x: Any, train_y: Any) -> Any:
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from gpytorch.mlls import ExactMarginalLogLikelihood

    model = SingleTaskGP(train_x, train_y)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    try:
        fit_gpytorch_mll(mll)
    except Exception:
        pass
    return model


def propose(
    variant: str,
    x: np.ndarray,
    y: np.ndarray,
    costs: np.ndarray,
    *,
    remaining: float,
    budget: float,
    seed: int,
) -> np.ndarray:
    """The next point of the unit box (encoded, not yet decoded), shape (D,).

    Args:
        variant: One of :data:`VARIANTS`.
        x: Evaluated points, encoded, shape (n, D).
        y: Their objective values (minimized), shape (n,); finite.
        costs: Their costs, shape (n,); positive.
        remaining: Budget left (budget minus spent).
        budget: Total budget.
        seed: Seeds torch's generator for this proposal (raw samples of ``optimize_acqf``).
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    torch = _torch()
    from botorch.acquisition import AcquisitionFunction
    from botorch.acquisition import LogExpectedImprovement
    from botorch.optim import optimize_acqf

    torch.manual_seed(seed)
    train_x = torch.as_tensor(x, dtype=torch.double)  # (n, D)
    train_y = torch.as_tensor(y, dtype=torch.double).unsqueeze(-1)  # (n, 1)
    model = _fit(train_x, train_y)
    logei = LogExpectedImprovement(model, best_f=train_y.min(), maximize=False)
    acqf: Any = logei
    if variant != "logei":
        log_c = torch.as_tensor(np.log(costs), dtype=torch.double).unsqueeze(-1)  # (n, 1)
        cost_model = _fit(train_x, log_c)
        alpha = 1.0 if variant == "logeipu" else max(remaining, 0.0) / budget

        class _CostWeighted(AcquisitionFunction):  # type: ignore[misc]
            """log EI(x) - alpha * E[log c(x)] (q = 1)."""

            def __init__(self) -> None:
                super().__init__(model)
                self.logei = logei
                self.cost_model = cost_model

            def forward(self, X: Any) -> Any:  # X: (b, 1, D) -> (b,)
                mean_log_c = self.cost_model.posterior(X).mean.squeeze(-1).squeeze(-1)
                return self.logei(X) - alpha * mean_log_c

        acqf = _CostWeighted()
    dim = x.shape[1]
    bounds = torch.stack(
        [torch.zeros(dim, dtype=torch.double), torch.ones(dim, dtype=torch.double)]
    )
    cand, _ = optimize_acqf(
        acqf, bounds=bounds, q=1, num_restarts=NUM_RESTARTS, raw_samples=RAW_SAMPLES
    )
    out = cand.detach().numpy().reshape(-1)
    if not np.all(np.isfinite(out)):  # never seen; a random point rather than a crash
        out = np.random.default_rng(seed).random(dim)
    return np.clip(out, 0.0, 1.0)


def check_available() -> str | None:
    """None if torch and botorch import, else why not."""
    try:
        import botorch  # noqa: F401
        import torch  # noqa: F401
    except ImportError as exc:
        return f"{exc} (pip install torch==2.13.0 botorch)"
    return None


__all__ = ["VARIANTS", "check_available", "propose", "sobol_startup"]
