"""Watch a cost-budgeted study in optuna-dashboard: a walk-through.

Runs a small study on SQLite with ``CostRolloutSampler``, then prints the command that opens it
in optuna-dashboard and what to look at there:

- the trials table (on the "Smart Selection" page, called "Trials (Selection)" in earlier
  optuna-dashboard releases) has a "UserAttribute cost" column: each trial's cost (here its
  wall-clock seconds, less the sampler's own time), stored by the sampler as a numeric trial
  user attr, so the dashboard can sort by it and plot it;
- the study's user attributes hold the ledger: ``cost_budget``, ``cost_spent`` and
  ``cost_remaining``, updated after every trial;
- the study page shows a "Best value vs cumulative cost" chart, which the sampler keeps
  current by itself whenever optuna-dashboard and plotly are installed and the storage is not
  in memory.

Start the dashboard while the study runs (from another terminal) to see the chart move, or
afterwards. ``--serve`` starts it from this script once the study is done.

    pip install "optuna-costbo[dashboard]"
    python examples/dashboard.py                       # 10 s budget, study in dashboard.db
    optuna-dashboard sqlite:///dashboard.db            # then open http://127.0.0.1:8080/
    python examples/dashboard.py --budget 5 --serve    # run, then serve on port 8080
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import time

import optuna

from optuna_costbo import CostRolloutSampler


def objective(trial: optuna.Trial) -> float:
    """A stand-in for training: bigger models cost more seconds and, up to a point, do better."""
    width = trial.suggest_int("width", 8, 512, log=True)
    lr = trial.suggest_float("learning_rate", 1e-4, 1e-1, log=True)
    optimizer = trial.suggest_categorical("optimizer", ["sgd", "adam"])
    time.sleep(0.02 + 0.3 * width / 512)  # the cost: up to 0.32 s for the widest model
    loss = (0.4 if optimizer == "sgd" else 0.3) + 0.05 * (
        (lr - 0.01) ** 2 / 1e-4 + 10.0 / width**0.5
    )
    return loss


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--budget", type=float, default=10.0, help="seconds of trial time")
    parser.add_argument("--storage", default="sqlite:///dashboard.db", help="Optuna storage URL")
    parser.add_argument("--study-name", default=None, help="None: a new, time-stamped name")
    parser.add_argument("--serve", action="store_true", help="start optuna-dashboard at the end")
    parser.add_argument("--port", type=int, default=8080, help="optuna-dashboard's port")
    args = parser.parse_args()
    if not args.storage.startswith(("sqlite:", "postgresql", "mysql")):
        parser.error("the dashboard reads an RDB storage URL such as sqlite:///dashboard.db")

    has_dashboard = all(
        importlib.util.find_spec(m) is not None for m in ("optuna_dashboard", "plotly")
    )
    if not has_dashboard:
        print(
            "optuna-dashboard or plotly is not installed: the study runs, but no chart is saved "
            '(pip install "optuna-costbo[dashboard]").'
        )

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    name = args.study_name or f"dashboard-{datetime.datetime.now():%Y%m%d-%H%M%S}"
    sampler = CostRolloutSampler(budget=args.budget, seed=0)
    study = optuna.create_study(
        study_name=name, storage=args.storage, sampler=sampler, load_if_exists=True
    )
    print(f"running study {name!r} in {args.storage} until {args.budget:g} s are spent ...")
    study.optimize(objective)

    ledger = sampler.ledger(study)
    print(f"trials: {len(study.trials)}, best value {study.best_value:.4f}")
    print(f"spent/budget: {ledger.spent:.2f} s / {ledger.budget:.2f} s")
    print()
    print("Open it in optuna-dashboard:")
    print()
    print(f"    optuna-dashboard {args.storage}")
    print()
    print(f"then http://127.0.0.1:{args.port}/ and the study {name!r}. What to look at:")
    print(
        "  - Smart Selection page ('Trials (Selection)' in earlier releases), the table at the "
        "bottom: the 'UserAttribute cost' column, each trial's cost in seconds; sort by it."
    )
    print(
        "  - Study user attributes: cost_budget, cost_spent and cost_remaining "
        f"(now {study.user_attrs.get('cost_budget')}, {study.user_attrs.get('cost_spent'):.3g}, "
        f"{study.user_attrs.get('cost_remaining'):.3g})."
    )
    if has_dashboard:
        print(
            "  - The 'Best value vs cumulative cost' chart on the study page: best value so "
            "far against the summed cost, with the budget as a dashed line."
        )
    print(
        "  - Optuna's own plots can use 'cost' as a target: e.g. the slice plot of cost shows "
        "which parameters make a trial expensive."
    )
    if args.serve:
        if not has_dashboard:
            raise SystemExit(
                '--serve needs optuna-dashboard: pip install "optuna-costbo[dashboard]"'
            )
        from optuna_dashboard import run_server

        print(f"\nserving on http://127.0.0.1:{args.port}/ (Ctrl-C to stop)")
        run_server(args.storage, host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
