"""Which lengthscale prior predicts better: held-out accuracy of the objective model's fits.

``optuna_costbo._numerics.fit`` fits its GP by MAP with a prior on each lengthscale ``ls``.
This script compares, on the same data, fits under

- "current": the package's prior, ``w (ls^2 + ls^-2)`` nats per dimension (Optuna's form,
  smallest at ``ls = 1``), with the package's signal and noise priors;
- "log-normal": the dimension-scaled prior it replaced, ``log ls ~ N(sqrt 2 + log(D)/2, 3)``
  (Hvarfner et al., ICML 2024), with the same signal and noise priors;
- "Optuna GP": Optuna's own GPSampler fit (``optuna._gp``, needs torch; skipped without it),
  a reference for the same model family fitted by other code.

Data: ``n`` uniform random points of the unit box and 300 held-out points, for test
functions of D = 2 to 20, the sensor-placement objective of ``benchmarks/problems/sensors.py``
(20-D) when its data is found (``--data-dir`` or ``COSTBO_DATA_DIR``), and random subsets of
the KNN configurations a ``benchmarks.paper hpo`` run evaluated (``--knn-configs``, by default
``results/hpo_knn_w2a_params.csv`` of the former harness, or the run cache
``results/runs/hpo-knn-w2a``: not uniform, real errors and log wall-clock costs; held
out: 300 other configurations). Reported per
(function, n), mean over seeds: the negative log predictive density of the held-out values
(NLPD, in units where the held-out values have standard deviation 1: lower is better), the
Spearman rank correlation of the predicted means with the values (higher is better) and the
RMSE divided by the values' standard deviation (1 = no better than predicting the mean).

    python -m benchmarks.gp_prior [--seeds 6] [--ns 10 30 60] [--out benchmarks/results]
"""

from __future__ import annotations

import os


for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
from collections.abc import Callable
from collections.abc import Iterator
import math
from pathlib import Path
import sys
import time

import numpy as np
from scipy.stats import norm
from scipy.stats import spearmanr


if __package__ in (None, ""):  # run as a script: python benchmarks/gp_prior.py
    sys.path.append(str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import package_probes as probes
from benchmarks.harness.package_probes import LENGTHSCALE_PRIOR_WEIGHT


Function = Callable[[np.ndarray], np.ndarray]  # (m, D) in [0, 1]^D -> (m,)


def synthetic(Z: np.ndarray) -> np.ndarray:
    """The paper's synthetic problem (Figure 4) on [-1, 1]^2."""
    r = np.linalg.norm(2.0 * Z - 1.0, axis=1)
    out: np.ndarray = 10.0 * r * np.sin(2.0 * np.pi * r)
    return out


_H6_A = np.array(
    [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8],
     [17, 8, 0.05, 10, 0.1, 14]]
)  # fmt: skip
_H6_P = 1e-4 * np.array(
    [[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
     [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]]
)  # fmt: skip
_H6_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])


def hartmann6(Z: np.ndarray) -> np.ndarray:
    out: np.ndarray = -np.sum(
        _H6_ALPHA * np.exp(-np.sum(_H6_A * (Z[:, None, :] - _H6_P) ** 2, axis=2)), axis=1
    )
    return out


def ackley(Z: np.ndarray) -> np.ndarray:
    x = 64.0 * Z - 32.0  # (m, D)
    out: np.ndarray = (
        -20.0 * np.exp(-0.2 * np.sqrt(np.mean(x**2, axis=1)))
        - np.exp(np.mean(np.cos(2.0 * np.pi * x), axis=1))
        + 20.0
        + math.e
    )
    return out


def log_rosenbrock(Z: np.ndarray) -> np.ndarray:
    x = 4.0 * Z - 2.0
    terms = 100.0 * (x[:, 1:] - x[:, :-1] ** 2) ** 2 + (1.0 - x[:, :-1]) ** 2
    out: np.ndarray = np.log1p(np.sum(terms, axis=1))
    return out


def styblinski_tang(Z: np.ndarray) -> np.ndarray:
    x = 10.0 * Z - 5.0
    out: np.ndarray = 0.5 * np.sum(x**4 - 16.0 * x**2 + 5.0 * x, axis=1)
    return out


def sensor_function(data_dir: str | None) -> Function | None:
    """The sensor-placement RMSE of benchmarks/problems/sensors.py on the box, or None."""
    from benchmarks.problems import sensors

    try:
        network = sensors.load_network(data_dir)
    except (FileNotFoundError, OSError, ValueError):
        return None
    problem = sensors.SensorPlacement(network)
    names = problem.names()

    def f(Z: np.ndarray) -> np.ndarray:
        return np.array(
            [problem.kriging.rmse(problem.snap(dict(zip(names, z, strict=True)))) for z in Z]
        )

    return f


def evaluated_configurations(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The KNN configurations an HPO run evaluated, encoded as the sampler encodes them:
    {"error": (X, validation errors), "log cost": (X, log seconds)}. ``path``: the run cache
    of the problem (``results/runs/hpo-knn-w2a``: every method and seed in it) or a params
    CSV of the former harness (``hpo_knn_*_params.csv``, or gzipped: ``.csv.gz``)."""
    import csv
    import gzip
    import json

    import optuna

    from benchmarks.harness import cache
    from benchmarks.harness.package_probes import SpaceBridge
    from benchmarks.problems import hpo

    trial = optuna.create_study().ask()
    for param in hpo.MODELS["knn"].params:  # only to get the search space's distributions
        param.suggest(trial)
    bridge = SpaceBridge(trial.distributions)
    rows: list[tuple[dict[str, object], float, float]] = []
    if not path.name.endswith((".csv", ".csv.gz")):  # a run cache, loose or packed
        for run_file in cache.glob(path, "*/seed*.csv"):
            run = cache.read_run(run_file)
            if run is not None and not run.error and run.params:
                rows += [
                    (params, value, cost)
                    for params, value, cost in zip(run.params, run.values, run.costs, strict=True)
                    if np.isfinite(value)
                ]
    else:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rt", newline="") as f:
            rows = [
                (json.loads(r["params"]), float(r["value"]), float(r["cost"]))
                for r in csv.DictReader(f)
            ]
    X = bridge.encode_params([r[0] for r in rows])  # (N, D)
    values = np.array([r[1] for r in rows])  # (N,)
    costs = np.array([r[2] for r in rows])  # (N,)
    return {"error": (X, values), "log cost": (X, np.log(costs))}


def log_normal_prior(log_params: np.ndarray) -> tuple[float, np.ndarray]:
    """The replaced prior: log ls ~ N(sqrt 2 + log(D)/2, 3); signal and noise as the package."""
    theta = np.asarray(log_params, dtype=float)
    D = theta.shape[0] - 2
    value, grad = CURRENT_PRIOR(theta)
    # Take the current lengthscale term out and put the log-normal one in.
    up, down = np.exp(2.0 * theta[:D]), np.exp(-2.0 * theta[:D])  # (D,), (D,)
    value -= LENGTHSCALE_PRIOR_WEIGHT * float(np.sum(up + down))
    scale = math.sqrt(3.0)
    u = (theta[:D] - math.sqrt(2.0) - 0.5 * math.log(D)) / scale  # (D,)
    return value + 0.5 * float(u @ u), np.concatenate([u / scale, grad[D:]])


CURRENT_PRIOR = probes.log_prior


def prior(kind: str) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """The negative log-prior of the fit for ``kind`` ("log-normal" or the package's)."""
    return log_normal_prior if kind == "log-normal" else CURRENT_PRIOR


def scores(mean: np.ndarray, sd: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """(NLPD in standardized units, Spearman rho, normalized RMSE) of predictions of y."""
    s = float(np.std(y))
    nlpd = float(-np.mean(norm.logpdf(y, mean, sd)) + math.log(s))
    rho = float(spearmanr(mean, y)[0])
    return nlpd, rho, float(np.sqrt(np.mean((mean - y) ** 2)) / s)


def fit_ours(
    kind: str, X: np.ndarray, y: np.ndarray, Xt: np.ndarray, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    model = probes.fit_gp(X, y, rng=np.random.default_rng(seed), prior=prior(kind))
    mean, var = model.predict(Xt)
    return mean, np.sqrt(var + model.hyper.noise_var * model.y_std**2)


def fit_optuna(X: np.ndarray, y: np.ndarray, Xt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from optuna._gp import gp as ogp
    from optuna._gp import prior as oprior
    import torch

    y_mean, y_std = float(np.mean(y)), float(np.std(y))
    model = ogp.fit_kernel_params(
        X=X,
        Y=(y - y_mean) / y_std,
        is_categorical=np.zeros(X.shape[1], dtype=bool),
        log_prior=oprior.default_log_prior,
        minimum_noise=oprior.DEFAULT_MINIMUM_NOISE_VAR,
        deterministic_objective=False,
    )
    with torch.no_grad():
        mean, var = model.posterior(torch.from_numpy(Xt))
    sd = np.sqrt(var.numpy() + float(model.noise_var)) * y_std
    return mean.numpy() * y_std + y_mean, sd


Draw = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]  # X, y, Xt, yt, seed


def uniform_draws(f: Function, D: int, n: int, seeds: int) -> Iterator[Draw]:
    """n uniform training points and 300 held-out ones of the box, per seed."""
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        X, Xt = rng.uniform(size=(n, D)), rng.uniform(size=(300, D))
        yield X, f(X), Xt, f(Xt), seed


def subset_draws(X_all: np.ndarray, v_all: np.ndarray, n: int, seeds: int) -> Iterator[Draw]:
    """n random rows for training and 300 other rows held out, per seed."""
    for seed in range(seeds):
        idx = np.random.default_rng(seed).permutation(len(X_all))
        tr, te = idx[:n], idx[n : n + 300]
        yield X_all[tr], v_all[tr], X_all[te], v_all[te], seed


def cell_means(kinds: list[str], draws: Iterator[Draw]) -> dict[str, np.ndarray]:
    """Mean (NLPD, rho, nRMSE) over the draws for each kind of fit."""
    results: dict[str, list[tuple[float, float, float]]] = {k: [] for k in kinds}
    for X, y, Xt, yt, seed in draws:
        for k in kinds:
            mean, sd = fit_optuna(X, y, Xt) if k == "Optuna GP" else fit_ours(k, X, y, Xt, seed)
            results[k].append(scores(mean, sd, yt))
    return {k: np.mean(results[k], axis=0) for k in kinds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--ns", type=int, nargs="+", default=[10, 30, 60])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument(
        "--knn-configs",
        type=Path,
        default=Path(__file__).parent / "results" / "hpo_knn_w2a_params.csv",
        help="a KNN run cache (results/runs/hpo-knn-w2a) or params CSV: fits also on random "
        "subsets of its configurations (default: the former harness's CSV)",
    )
    args = parser.parse_args()

    functions: dict[str, tuple[Function, int]] = {
        "synthetic (paper, 2-D)": (synthetic, 2),
        "Hartmann 6-D": (hartmann6, 6),
        "Ackley 5-D": (ackley, 5),
        "log Rosenbrock 10-D": (log_rosenbrock, 10),
        "Styblinski-Tang 20-D": (styblinski_tang, 20),
        "Ackley 20-D": (ackley, 20),
    }
    sensor = sensor_function(args.data_dir or os.environ.get("COSTBO_DATA_DIR"))
    if sensor is not None:
        functions["sensor placement 20-D"] = (sensor, 20)
    kinds = ["current", "log-normal"]
    try:
        import torch  # noqa: F401

        kinds.append("Optuna GP")
    except ImportError:
        print("torch not installed: no Optuna GP column", file=sys.stderr)

    start = time.time()
    header = "| function | n | " + " | ".join(f"{k}: NLPD / rho / nRMSE" for k in kinds) + " |"
    lines = [header, "|---|---|" + "---|" * len(kinds)]
    wins = {k: 0 for k in kinds}
    cells = 0

    def add_row(name: str, n: int, draws: Iterator[Draw]) -> None:
        nonlocal cells
        means = cell_means(kinds, draws)
        wins[min(kinds, key=lambda k: means[k][0])] += 1
        cells += 1
        row = " | ".join(f"{m[0]:.2f} / {m[1]:.2f} / {m[2]:.2f}" for m in means.values())
        lines.append(f"| {name} | {n} | {row} |")
        print(lines[-1], flush=True)

    for name, (f, D) in functions.items():
        for n in args.ns:
            add_row(name, n, uniform_draws(f, D, n, args.seeds))
    if args.knn_configs.exists():
        for target, (X_all, v_all) in evaluated_configurations(args.knn_configs).items():
            for n in args.ns:
                add_row(
                    f"KNN w2a configurations, {target}",
                    n,
                    subset_draws(X_all, v_all, n, args.seeds),
                )
    summary = ", ".join(f"{k} {wins[k]}" for k in kinds)
    text = "\n".join(
        [
            "# Lengthscale prior: held-out accuracy of GP fits",
            "",
            "Uniform random designs (KNN rows: random subsets of the evaluated configurations), "
            f"300 held-out points, {args.seeds} seeds per cell; mean "
            "over seeds of NLPD (standardized units, lower is better), Spearman rho (higher "
            "is better) and RMSE / sd (1 = the mean's error). Lowest NLPD per cell: "
            f"{summary} of {cells}. {time.time() - start:.0f} s.",
            "",
            *lines,
            "",
        ]
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gp_prior.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
