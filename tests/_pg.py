"""The PostgreSQL server of the tests: its URL, and stopping and starting it (fault tests).

``.ci/run`` starts Debian's cluster and exports ``COSTBO_TEST_POSTGRES_URL``. The fault tests
control the cluster that listens on that URL's port, with ``pg_ctlcluster`` (as root, as CI
runs); a test that cannot skips with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest


POSTGRES_ENV = "COSTBO_TEST_POSTGRES_URL"


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
        pytest.skip(f"PostgreSQL test skipped: set {POSTGRES_ENV} (.ci/run does) to run it")
    why = reachable(url)
    if why is not None:
        pytest.skip(
            f"PostgreSQL test skipped: {POSTGRES_ENV} is set but unreachable ({why}); "
            "is the server running and psycopg2-binary installed?"
        )
    return url


def cluster_or_skip(url: str) -> tuple[str, str]:
    """(version, name) of the local Debian cluster serving ``url``; skips if there is none
    this process may stop and start."""
    import sqlalchemy

    parsed = sqlalchemy.engine.make_url(url)
    if parsed.host not in (None, "", "localhost", "127.0.0.1", "::1"):
        pytest.skip(f"fault test skipped: the server {parsed.host} is not on this machine")
    if shutil.which("pg_lsclusters") is None or shutil.which("pg_ctlcluster") is None:
        pytest.skip("fault test skipped: pg_lsclusters/pg_ctlcluster not found (Debian's tools)")
    if os.geteuid() != 0:
        pytest.skip("fault test skipped: stopping the server needs root (as CI runs)")
    port = str(parsed.port or 5432)
    out = subprocess.run(["pg_lsclusters", "-h"], capture_output=True, text=True, check=False)
    for line in out.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[2] == port and fields[3].startswith("online"):
            return fields[0], fields[1]
    pytest.skip(f"fault test skipped: no online local cluster listens on port {port}")


def stop(cluster: tuple[str, str]) -> None:
    """Stop the cluster (fast shutdown: open connections are cut, as in a crash or failover)."""
    subprocess.run(
        ["pg_ctlcluster", "--mode", "fast", *cluster, "stop"],
        check=True,
        capture_output=True,
        timeout=60,
    )


def start(cluster: tuple[str, str], url: str, timeout: float = 60.0) -> None:
    """Start the cluster and wait until ``url`` answers."""
    subprocess.run(
        ["pg_ctlcluster", *cluster, "start"], check=True, capture_output=True, timeout=60
    )
    deadline = time.monotonic() + timeout
    while reachable(url) is not None:
        assert time.monotonic() < deadline, "the PostgreSQL server did not come back"
        time.sleep(0.2)
