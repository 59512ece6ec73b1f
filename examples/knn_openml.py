"""Tune a k-nearest-neighbours classifier on an OpenML dataset under a wall-clock budget.

This is the KNN problem of Lee et al. (UAI 2021, Section 6): a 5-D mixed search space where
the training-and-scoring time varies by orders of magnitude (projected dimensionality,
neighbour count and metric all change it), tuned by ``CostRolloutSampler`` until a budget of
seconds is spent.

- projection_fraction in [1e-6, 1] (log): the fraction of the features kept by a random
  projection (at least one component);
- projection in {gaussian, sparse}: ``GaussianRandomProjection`` or ``SparseRandomProjection``;
- n_neighbors in 1..256 (log scale: 1 and 2 neighbours differ more than 201 and 202);
- weights in {uniform, distance};
- metric in {minkowski, cityblock, cosine, euclidean, l1, l2, manhattan}.

The data comes from OpenML (``openml.datasets.get_dataset(ID)``; default 44, spambase), which
needs the ``openml`` package and the network. When either is missing, the example says so and
falls back to scikit-learn's bundled digits data, so it always runs. ``--svmlight FILE`` reads a
local svmlight file instead, such as LIBSVM's w2a, the paper's data set.

    python examples/knn_openml.py                                   # 120 s budget, in memory
    python examples/knn_openml.py --budget 30 --storage sqlite:///knn.db
    python examples/knn_openml.py --no-openml --budget 5            # bundled data, quick look
"""

from __future__ import annotations

import argparse
import datetime
from typing import Any

import numpy as np
import optuna
import scipy.sparse
from sklearn.datasets import load_digits
from sklearn.datasets import load_svmlight_file
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.random_projection import GaussianRandomProjection
from sklearn.random_projection import SparseRandomProjection

from optuna_costbo import CostRolloutSampler


METRICS = ["minkowski", "cityblock", "cosine", "euclidean", "l1", "l2", "manhattan"]


def load_openml(dataset_id: int) -> tuple[Any, np.ndarray, str]:
    """Features, integer labels and a description of OpenML dataset ``dataset_id``.

    Raises ImportError without the ``openml`` package, and whatever ``openml`` raises when the
    server cannot be reached.
    """
    import openml
    import pandas as pd

    openml.config.connection_n_retries = 1  # fail fast when offline
    dataset = openml.datasets.get_dataset(
        dataset_id,
        download_data=True,
        download_qualities=False,
        download_features_meta_data=False,
    )
    X, y, _, _ = dataset.get_data(target=dataset.default_target_attribute)
    X = pd.get_dummies(X).astype(float).fillna(0.0).to_numpy()  # categorical -> one-hot
    labels = pd.factorize(y)[0]
    return X, labels, f"OpenML dataset {dataset_id} ({dataset.name})"


def load_data(args: argparse.Namespace) -> tuple[Any, np.ndarray, str]:
    """The dataset to tune on; scikit-learn's digits when OpenML is out of reach."""
    if args.svmlight is not None:
        X, y = load_svmlight_file(args.svmlight)
        return X, y, f"svmlight file {args.svmlight}"
    if not args.no_openml:
        try:
            return load_openml(args.openml_id)
        except ImportError:
            print("openml is not installed (pip install openml): ", end="")
        except Exception as exc:  # no network, server down, unknown id
            print(
                f"could not load OpenML dataset {args.openml_id} ({type(exc).__name__}): ", end=""
            )
        print("falling back to scikit-learn's bundled digits data.")
    X, y = load_digits(return_X_y=True)
    return X, y, "scikit-learn digits (bundled)"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--budget", type=float, default=120.0, help="seconds of trial time")
    parser.add_argument("--openml-id", type=int, default=44, help="OpenML dataset id")
    parser.add_argument("--no-openml", action="store_true", help="use the bundled data")
    parser.add_argument("--svmlight", default=None, help="a local svmlight file instead")
    parser.add_argument("--storage", default=None, help="e.g. sqlite:///knn.db; None: in memory")
    parser.add_argument("--study-name", default=None, help="None: a new, time-stamped name")
    parser.add_argument("--seed", type=int, default=0, help="the sampler's seed")
    args = parser.parse_args()

    X, y, description = load_data(args)
    print(f"dataset: {description}, {X.shape[0]} rows, {X.shape[1]} features")
    X_train, X_valid, y_train, y_valid = train_test_split(
        X, y, test_size=0.3, random_state=0, stratify=y
    )
    n_features = X.shape[1]
    sparse = scipy.sparse.issparse(X)

    def objective(trial: optuna.Trial) -> float:
        fraction = trial.suggest_float("projection_fraction", 1e-6, 1.0, log=True)
        projection = trial.suggest_categorical("projection", ["gaussian", "sparse"])
        n_neighbors = trial.suggest_int("n_neighbors", 1, 256, log=True)
        weights = trial.suggest_categorical("weights", ["uniform", "distance"])
        metric = trial.suggest_categorical("metric", METRICS)

        n_components = max(1, round(fraction * n_features))
        projector = (
            GaussianRandomProjection(n_components, random_state=0)
            if projection == "gaussian"
            else SparseRandomProjection(n_components, dense_output=True, random_state=0)
        )
        model = make_pipeline(
            StandardScaler(with_mean=not sparse),  # centring would densify sparse data
            projector,
            KNeighborsClassifier(
                n_neighbors=min(n_neighbors, X_train.shape[0]),
                weights=weights,
                metric=metric,
                n_jobs=1,
            ),
        )
        model.fit(X_train, y_train)
        return 1.0 - model.score(X_valid, y_valid)  # validation error; cost = wall-clock time

    name = args.study_name or f"knn-{datetime.datetime.now():%Y%m%d-%H%M%S}"
    sampler = CostRolloutSampler(budget=args.budget, seed=args.seed)
    study = optuna.create_study(
        study_name=name, storage=args.storage, sampler=sampler, load_if_exists=True
    )
    study.optimize(objective)  # no n_trials, no timeout: stops when the budget is spent

    ledger = sampler.ledger(study)
    if args.storage is not None:
        print(f"study {name!r} in {args.storage}")
    print(f"trials: {len(study.trials)}")
    print(f"best validation error: {study.best_value:.4f}")
    print(f"best params: {study.best_params}")
    print(f"spent/budget: {ledger.spent:.1f} s / {ledger.budget:.1f} s")


if __name__ == "__main__":
    main()
