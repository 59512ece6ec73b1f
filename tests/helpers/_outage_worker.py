"""A worker of ``tests/helpers/_worker_main.py`` whose RDB storage waits out database outages.

Run as ``python tests/helpers/_outage_worker.py '<json config>'``: the config of
``_worker_main.run_worker``, whose storage spec may also say ``"outage_timeout"`` (seconds; the
storage is then ``optuna_costbo.storage.RetryingRDBStorage``) and ``"grace_period"`` (with
``"heartbeat": true``).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
import subprocess
import sys
from typing import Any

import _parallel_checks as pc
import _worker_main
import optuna


SCRIPT = str(Path(__file__).resolve())


def make_storage(spec: dict[str, Any]) -> optuna.storages.BaseStorage:
    if spec.get("outage_timeout") is None:
        return pc.make_storage(spec)
    from optuna_costbo.storage import RetryingRDBStorage

    heartbeat: dict[str, Any] = {}
    if spec.get("heartbeat"):
        heartbeat = {"heartbeat_interval": 1, "grace_period": int(spec.get("grace_period", 2))}
    return RetryingRDBStorage(
        spec["url"], outage_timeout=float(spec["outage_timeout"]), **heartbeat
    )


def start(config: dict[str, Any], log: Path) -> subprocess.Popen[bytes]:
    """Start one such worker (stdout and stderr to ``log``, appended: restarts share it)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [pc.REPO_ROOT, str(Path(SCRIPT).parent), env.get("PYTHONPATH", "")]
    )
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    with open(log, "ab") as fh:
        return subprocess.Popen(
            [sys.executable, SCRIPT, json.dumps(config)],
            stdout=fh,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=pc.REPO_ROOT,
        )


if __name__ == "__main__":
    # The worker runs at optuna's ERROR verbosity; the outage warnings (under optuna.costbo,
    # governed by optuna.logging) are what the test reads, so their logger keeps WARNING.
    logging.getLogger("optuna.costbo.storage").setLevel(logging.WARNING)
    _worker_main.make_storage = make_storage  # type: ignore[assignment]
    _worker_main.run_worker(json.loads(sys.argv[1]))
