"""Screenshot optuna-dashboard on a study run by CostRolloutSampler (docs/img/dashboard.png).

Runs a small study with wall-clock costs on a SQLite file in a temporary directory, starts
optuna-dashboard on it (a subprocess on a free local port), waits for the server, and takes a
screenshot of the study page with headless Chromium. The dashboard is a JavaScript app, so
Chromium is given a virtual-time budget to render it before the screenshot is taken. Everything
it starts is stopped and removed at the end.

    apt-get install -y chromium                      # Debian's package
    pip install ".[dashboard]"
    python scripts/dashboard_screenshot.py           # writes docs/img/dashboard.png
    python scripts/dashboard_screenshot.py --page trials --out /tmp/trials.png

Look at the picture before committing it: a blank or half-drawn page means the render budget
(``--virtual-time-budget``, in milliseconds) was too short.
"""

from __future__ import annotations

import argparse
from pathlib import Path
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import optuna

from optuna_costbo import CostRolloutSampler


REPO = Path(__file__).resolve().parent.parent
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
SERVER = (
    "import sys; from optuna_dashboard import run_server; "
    "run_server(sys.argv[1], host='127.0.0.1', port=int(sys.argv[2]))"
)


def objective(trial: optuna.Trial) -> float:
    """A stand-in for training: wider models cost more seconds and do somewhat better."""
    width = trial.suggest_int("width", 8, 512, log=True)
    lr = trial.suggest_float("learning_rate", 1e-4, 1e-1, log=True)
    optimizer = trial.suggest_categorical("optimizer", ["sgd", "adam"])
    time.sleep(0.02 + 0.3 * width / 512)
    return (0.4 if optimizer == "sgd" else 0.3) + 0.05 * (
        (lr - 0.01) ** 2 / 1e-4 + 10.0 / width**0.5
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"optuna-dashboard did not answer at {url} within {timeout} s")
        time.sleep(0.25)


def find_chromium(given: str | None) -> str:
    for name in [given] if given else ["chromium", "chromium-browser", "google-chrome"]:
        path = shutil.which(name) if name else None
        if path:
            return path
    raise SystemExit("no Chromium found: apt-get install -y chromium (or pass --chromium PATH)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img" / "dashboard.png")
    parser.add_argument("--budget", type=float, default=6.0, help="seconds of trial time")
    parser.add_argument("--page", default="", help="study sub-page, e.g. 'trials' or 'analytics'")
    parser.add_argument("--chromium", default=None, help="path of the Chromium binary")
    # NOTE: 2100 px tall so that the study page shows the cost chart and the study user attrs,
    # which sit below the fold of a 1000 px window; headless Chromium captures the window only.
    parser.add_argument("--window-size", default="1400,2100")
    parser.add_argument("--virtual-time-budget", type=int, default=10000, help="milliseconds")
    args = parser.parse_args()
    chromium = find_chromium(args.chromium)

    with tempfile.TemporaryDirectory(prefix="costbo-dashboard-") as tmp:
        storage = f"sqlite:///{Path(tmp) / 'study.db'}"
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = CostRolloutSampler(budget=args.budget, seed=0)  # SQLite: the chart is kept
        study = optuna.create_study(
            study_name="cost-budget-demo", storage=storage, sampler=sampler
        )
        study.optimize(objective)
        ledger = sampler.ledger(study)
        print(f"study: {len(study.trials)} trials, spent {ledger.spent:.2f} of {ledger.budget} s")

        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER, storage, str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_for(f"{base}/api/studies", timeout=60.0)
            url = f"{base}/dashboard/studies/{study._study_id}"
            if args.page:
                url += f"/{args.page}"
            args.out.parent.mkdir(parents=True, exist_ok=True)
            profile = Path(tmp) / "chromium-profile"
            command = [
                chromium,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                f"--virtual-time-budget={args.virtual_time_budget}",
                f"--screenshot={args.out.resolve()}",
                f"--window-size={args.window_size}",
                url,
            ]
            subprocess.run(command, check=True, timeout=180, capture_output=True)
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    print(f"wrote {args.out} from {url}")


if __name__ == "__main__":
    main()
