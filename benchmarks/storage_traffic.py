"""Storage traffic of one worker, what one storage server carries, and suggestion time.

Three tables (Markdown, printed; ``--out FILE`` also writes them), the numbers behind the
capacity section of ``docs/parallel.md``:

1. **traffic**: one worker runs ``--trials`` trials of a cheap objective (3 floats, a reported
   cost) with ``CostRolloutSampler`` on a study that already holds ``--finished`` finished
   trials and ``r`` trials that stay RUNNING (other workers' trials, as ``r`` of ``W`` workers
   would keep running), on SQLite, PostgreSQL, Optuna's gRPC proxy in front of PostgreSQL
   (a proxy process on 127.0.0.1) and optuna-integration's DaskStorage (a Dask scheduler
   process on 127.0.0.1, the study in its memory; ``--no-dask`` to skip). The storage the study
   sees is wrapped in a counting proxy: storage API calls per trial (all, by the sampler, and
   those made while it suggests), their wall time and the worker's CPU time in them, and below
   them the wire: SQL statements (SQLAlchemy events on the engine), or RPCs and their protobuf
   bytes (a gRPC client interceptor), or for Dask the pickled size of the replies. Suggestion
   time: the sampler's ``infer_relative_search_space``, ``sample_relative`` and
   ``sample_independent`` of one trial.
2. **capacity**: ``C`` client processes replay, as fast as they can, the storage calls of one
   measured trial (new trial, its reads and writes, no sampler computation) against
   PostgreSQL, directly and through one gRPC proxy process, with ``r`` RUNNING trials in the
   study. Reported: trials per second, and the server CPU seconds per trial (PostgreSQL: the
   cluster's processes, read from ``/proc``; the proxy: its process), which say how many trials
   per second one server core carries whatever the clients' machine.
3. **suggest**: seconds of one suggestion against ``n`` finished and ``r`` running trials
   (InMemoryStorage; the running trials are pending points the sampler conditions on).
4. **reads**: the sampler's storage time, ledger time and the rest per trial, on studies
   pre-filled with ``--reads-trials`` finished trials (1k and 10k), SQLite and PostgreSQL,
   ``--reads-workers`` worker processes; the sampler held in its start-up design (the
   model's time is measured apart, on a ``--model-trials`` study). Run on the package of git
   ``--baseline-ref`` (old, extracted with ``git archive``) and on this checkout (new) side
   by side, each worker a subprocess with that package first on its path.

One module per section under ``benchmarks/storage/`` (``traffic.py``, ``capacity.py``,
``suggest.py``, ``reads.py``; the counters in ``instruments.py``, the studies and servers in
``studies.py``); this module is their command line, ``python -m benchmarks storage``.

PostgreSQL as ``.ci/run`` sets it up (Debian's server, user and password ``costbo``)::

    python -m benchmarks storage \\
        --postgres-url postgresql+psycopg2://costbo:costbo@127.0.0.1/costbo_test

Without ``--postgres-url`` (or ``COSTBO_TEST_POSTGRES_URL``) only SQLite, Dask and the
suggestion times are measured. Wall times depend on the machine's load (the header line gives
the load average); CPU times much less. The capacity loop sends traffic only to the given
server and a proxy on 127.0.0.1, and stops after ``--seconds`` per point.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
import datetime
import json
import os
from pathlib import Path
import platform
import tempfile
import time
from typing import Any
import warnings

import optuna

from benchmarks.storage import capacity
from benchmarks.storage import reads
from benchmarks.storage import suggest
from benchmarks.storage import traffic
import optuna_costbo


optuna.logging.set_verbosity(optuna.logging.ERROR)
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--postgres-url", default=os.environ.get("COSTBO_TEST_POSTGRES_URL"))
    parser.add_argument("--finished", type=int, default=100, help="finished trials in the study")
    parser.add_argument("--running", type=int, nargs="+", default=[0, 16, 128])
    parser.add_argument("--trials", type=int, default=8, help="measured trials per point")
    parser.add_argument("--acquisition", default="rollout")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--capacity-running", type=int, nargs="+", default=[16, 128, 512])
    parser.add_argument("--seconds", type=float, default=8.0, help="per capacity point")
    parser.add_argument("--suggest-finished", type=int, nargs="+", default=[100, 300])
    parser.add_argument("--suggest-running", type=int, nargs="+", default=[0, 100, 1000])
    parser.add_argument("--suggest-repeats", type=int, default=3)
    parser.add_argument("--reads-trials", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--reads-workers", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--reads-per-worker", type=int, default=6, help="measured trials")
    parser.add_argument("--baseline-ref", default="main", help="git ref of the old path")
    parser.add_argument("--model-trials", type=int, default=1000)
    parser.add_argument("--model-repeats", type=int, default=3)
    parser.add_argument(
        "--skip", nargs="*", default=[], choices=["traffic", "capacity", "suggest", "reads"]
    )
    parser.add_argument("--reads-worker", help=argparse.SUPPRESS)
    parser.add_argument("--no-dask", action="store_true", help="skip the DaskStorage route")
    parser.add_argument("--out", type=Path, help="also write the tables to this file")
    args = parser.parse_args(argv)
    if args.reads_worker:
        print(json.dumps(reads.reads_worker(json.loads(args.reads_worker))), flush=True)
        return

    t_start = time.monotonic()
    lines: list[str] = []

    def emit(new: list[str]) -> None:
        print("\n".join(new), flush=True)
        lines.extend(new)

    emit(
        [
            "# Storage traffic and suggestion time",
            "",
            f"{datetime.date.today()}: {os.cpu_count()} cores, load average "
            f"{os.getloadavg()[0]:.1f} at the start; optuna {optuna.__version__}, "
            f"optuna_costbo {optuna_costbo.__version__}, Python {platform.python_version()}.",
            "",
        ]
    )
    tmp = Path(tempfile.mkdtemp(prefix="storage_traffic-"))
    backends = [("sqlite", f"sqlite:///{tmp / 'traffic.db'}")]
    if args.postgres_url:
        backends += [("postgresql", args.postgres_url), ("grpc", args.postgres_url)]
    if not args.no_dask:
        backends.append(("dask", ""))
    if not args.postgres_url:
        emit(["(no --postgres-url: PostgreSQL, the gRPC proxy and the capacity loop skipped)", ""])
    traces: dict[int, tuple[Any, int]] = {}

    if "traffic" not in args.skip:
        emit(traffic.section(args, backends, traces))
    if "capacity" not in args.skip and args.postgres_url:
        emit(capacity.section(args, traces))
    if "suggest" not in args.skip:
        emit(suggest.section(args))
    if "reads" not in args.skip:
        emit(reads.measure_reads(args, tmp))

    emit([f"Total {(time.monotonic() - t_start) / 60:.1f} min."])
    if args.out is not None:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":  # the former way, python -m benchmarks.storage_traffic
    from benchmarks import _preamble

    _preamble.forward("storage")
