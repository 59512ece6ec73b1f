"""The PostgreSQL server of the tests: its URL, and a throwaway cluster that a test may stop.

``.ci/run`` starts Debian's cluster and exports ``COSTBO_TEST_POSTGRES_URL``. A fault test that
stops the server does it to a cluster of its own, created beside that one with Debian's tools
(as root, as CI runs) and dropped afterwards: the other PostgreSQL tests, which pytest-xdist
may be running at the same moment, keep their server. A test that cannot skips with the
reason, unless ``COSTBO_REQUIRE_POSTGRES=1`` (set by ``.ci/run`` once its server is up): then
it fails, so that CI cannot lose the PostgreSQL tests silently.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import os
import shutil
import socket
import subprocess
import time
from typing import NoReturn
import uuid

import pytest


POSTGRES_ENV = "COSTBO_TEST_POSTGRES_URL"
REQUIRE_ENV = "COSTBO_REQUIRE_POSTGRES"


def _skip(reason: str) -> NoReturn:
    """Skip, or fail where PostgreSQL is required (CI with a server set up)."""
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1: PostgreSQL tests must run)")
    pytest.skip(reason)


def reachable(url: str) -> str | None:
    """None if ``url`` answers ``SELECT 1``, else why not."""
    try:
        import sqlalchemy

        engine = sqlalchemy.create_engine(url)
        try:
            with engine.connect() as conn:
                conn.execute(sqlalchemy.text("SELECT 1"))
        finally:
            engine.dispose()
    except Exception as exc:  # ImportError of the driver, refused connection, bad login
        return repr(exc)
    return None


def url_or_skip() -> str:
    """The test server's URL; skips the test if it is not set or not reachable."""
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        _skip(f"PostgreSQL test skipped: set {POSTGRES_ENV} (.ci/run does) to run it")
    why = reachable(url)
    if why is not None:
        _skip(
            f"PostgreSQL test skipped: {POSTGRES_ENV} is set but unreachable ({why}); "
            "is the server running and psycopg2-binary installed?"
        )
    return url


@contextlib.contextmanager
def throwaway_cluster() -> Iterator[tuple[tuple[str, str], str]]:
    """A new PostgreSQL cluster, started, with user and database ``costbo``: yields
    ((version, name), url) and drops the cluster afterwards. Skips the test if PostgreSQL
    is not set up (no ``COSTBO_TEST_POSTGRES_URL``), if Debian's cluster tools are missing, or
    without root."""
    if not os.environ.get(POSTGRES_ENV):
        _skip(
            f"PostgreSQL fault test skipped: set {POSTGRES_ENV} (.ci/run sets up PostgreSQL) "
            "to run it"
        )
    tools = ("pg_createcluster", "pg_ctlcluster", "pg_dropcluster")
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing or not os.path.isdir("/usr/lib/postgresql"):
        _skip(f"PostgreSQL fault test skipped: Debian's cluster tools missing {missing}")
    if os.geteuid() != 0:
        _skip("PostgreSQL fault test skipped: creating and stopping a cluster needs root")
    version = sorted(
        os.listdir("/usr/lib/postgresql"), key=lambda v: [int(p) for p in v.split(".")]
    )[-1]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cluster = (version, f"costbo_fault_{uuid.uuid4().hex[:8]}")
    url = f"postgresql+psycopg2://costbo:costbo@127.0.0.1:{port}/costbo_test"
    # NOTE: no fsync: the cluster lives for one test, and initdb is its slowest step.
    _run(["pg_createcluster", *cluster, "--port", str(port), "-o", "fsync=off", "--", "-N"])
    try:
        _run(["pg_ctlcluster", *cluster, "start"])
        for sql in (
            "CREATE USER costbo WITH PASSWORD 'costbo'",
            "CREATE DATABASE costbo_test OWNER costbo",
        ):
            _run(["su", "postgres", "-c", f'psql -p {port} -qc "{sql}"'])
        yield cluster, url
    finally:
        subprocess.run(
            ["pg_dropcluster", "--stop", *cluster], capture_output=True, check=False, timeout=120
        )


def _run(command: list[str]) -> None:
    out = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {out.stderr.strip()}")


def stop(cluster: tuple[str, str]) -> None:
    """Stop the cluster (fast shutdown: open connections are cut, as in a crash or failover)."""
    _run(["pg_ctlcluster", "--mode", "fast", *cluster, "stop"])


def start(cluster: tuple[str, str], url: str, timeout: float = 60.0) -> None:
    """Start the cluster and wait until ``url`` answers."""
    _run(["pg_ctlcluster", *cluster, "start"])
    deadline = time.monotonic() + timeout
    while reachable(url) is not None:
        assert time.monotonic() < deadline, "the PostgreSQL server did not come back"
        time.sleep(0.2)
