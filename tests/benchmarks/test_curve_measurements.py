"""``benchmarks/curve_measurements.py``: its studies are what it says, and it reports both."""

from __future__ import annotations

import numpy as np

from benchmarks import curve_measurements


def test_a_study_has_twelve_complete_and_twelve_stopped_curves() -> None:
    complete, stopped, truth = curve_measurements.study("one shape", 0)
    assert len(complete) == 12 and len(stopped) == 12 and truth.shape == (12,)
    assert all(2 <= len(c[0]) <= 11 for c in stopped)
    # the curves of one shape differ only by their final values and noise
    gaps = np.array([c[1] - c[1][-1] for c in complete])  # (12, 20)
    assert np.ptp(gaps[:, 0]) < 0.1


def test_the_table_has_a_row_per_family_and_the_routes_beat_the_last_report() -> None:
    text = curve_measurements.table(3)
    rows = [line for line in text.splitlines() if line.startswith("| one") or "varied" in line]
    assert len(rows) == 2
    for seed in range(3):
        got = curve_measurements.errors("varied", seed)
        assert got["curves"] < got["last report"] and got["impute"] < got["last report"]
