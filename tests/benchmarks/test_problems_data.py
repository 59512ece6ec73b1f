"""The data loaders of benchmarks/problems/data.py: OpenML first (with its cache, never
written), the LIBSVM files offline through COSTBO_DATA_DIR / --data-dir.

Tests that need the offline data skip (with the reason) when it is absent (conftest.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.problems import data


def test_libsvm_fallback_loads_a1a(need_data: Callable[..., Path]) -> None:
    root = need_data("libsvm/a1a")
    X, y, where = data.load_xy("a1a", source="libsvm", data_dir=root)
    assert X.shape == (1605, 123)
    assert X.dtype == np.float64
    assert set(np.unique(X)) <= {0.0, 1.0}
    assert np.bincount(y).tolist() == [1210, 395]  # -1 -> 0, +1 -> 1
    assert "a1a" in where
    # the folder holding the files works as well as its parent
    X2, _, _ = data.load_xy("a1a", source="libsvm", data_dir=root / "libsvm")
    np.testing.assert_array_equal(X, X2)


def test_auto_falls_back_to_libsvm_via_env(
    monkeypatch: pytest.MonkeyPatch, need_data: Callable[..., Path]
) -> None:
    root = need_data("libsvm/a1a")
    monkeypatch.setenv("COSTBO_DATA_DIR", str(root))

    def offline(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("no route to openml.org")

    monkeypatch.setattr(data, "load_openml", offline)
    ds = data.load_dataset("a1a", split_seed=3)
    assert "LIBSVM" in ds.source
    assert len(ds.y_train) + len(ds.y_valid) == 1605
    # stratified: both parts keep the class balance (395 / 1605 = 0.246)
    assert abs(np.mean(ds.y_valid) - 395 / 1605) < 0.01
    again = data.load_dataset("a1a", split_seed=3)
    np.testing.assert_array_equal(ds.X_valid, again.X_valid)  # reproducible


def test_missing_dataset_gives_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("COSTBO_DATA_DIR", raising=False)
    monkeypatch.delenv("COSTBO_OPENML_IDS", raising=False)
    with pytest.raises(data.DataUnavailableError, match="COSTBO_DATA_DIR"):
        data.load_xy("w2a", source="libsvm")
    with pytest.raises(data.DataUnavailableError) as info:
        data.load_xy("w2a", source="libsvm", data_dir=tmp_path)
    message = str(info.value)
    assert str(tmp_path) in message and "--data-dir" in message and "openml" in message
    with pytest.raises(ValueError, match="w2a=123"):
        data.parse_openml_ids("w2a:123")
    assert data.parse_openml_ids("w2a=1, a1a=2") == {"w2a": 1, "a1a": 2}


DESCRIPTION = """\
<oml:data_set_description xmlns:oml="http://openml.org/openml">
  <oml:id>{id}</oml:id>
  <oml:name>tiny-{id}</oml:name>
  <oml:version>1</oml:version>
  <oml:format>{format}</oml:format>
  <oml:url>https://invalid.invalid/data/{id}.arff</oml:url>{parquet}
  <oml:default_target_attribute>class</oml:default_target_attribute>
  <oml:status>active</oml:status>
</oml:data_set_description>
"""


def _fake_openml_cache(
    root: Path,
    dataset_id: int,
    kind: str,
    data_xy: tuple[np.ndarray, list[str]] | None = None,
) -> tuple[np.ndarray, list[str]]:
    """An openml cache holding one dataset as openml stores it: description.xml plus
    dataset.arff (``kind`` "dense" or "sparse") or dataset_<ID>.pq ("parquet"); ``data_xy``
    (X (n, d), labels "neg"/"pos") or a small random one."""
    if data_xy is None:
        rng = np.random.default_rng(dataset_id)
        X = (rng.random((20, 4)) < 0.4).astype(float)
        labels = ["neg" if row.sum() < 2 else "pos" for row in X]
    else:
        X, labels = data_xy
    d = X.shape[1]
    folder = root / "org" / "openml" / "www" / "datasets" / str(dataset_id)
    folder.mkdir(parents=True)
    parquet = ""
    if kind == "parquet":
        parquet = f"\n  <oml:parquet_url>https://invalid.invalid/{dataset_id}.pq</oml:parquet_url>"
    fmt = "Sparse_ARFF" if kind == "sparse" else "ARFF"
    (folder / "description.xml").write_text(
        DESCRIPTION.format(id=dataset_id, format=fmt, parquet=parquet)
    )
    if kind == "parquet":
        import pandas as pd

        frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(d)])
        frame["class"] = pd.Categorical(labels, categories=["neg", "pos"])
        frame.to_parquet(folder / f"dataset_{dataset_id}.pq")
        return X, labels
    lines = ["@RELATION tiny", *(f"@ATTRIBUTE f{j} NUMERIC" for j in range(d))]
    lines += ["@ATTRIBUTE class {neg,pos}", "@DATA"]
    for row, label in zip(X, labels, strict=True):
        if kind == "sparse":
            cells = [f"{j} {v:g}" for j, v in enumerate(row) if v]
            cells.append(f"{d} {label}")
            lines.append("{" + ",".join(cells) + "}")
        else:
            lines.append(",".join([*(f"{v:g}" for v in row), label]))
    (folder / "dataset.arff").write_text("\n".join(lines) + "\n")
    return X, labels


def _snapshot(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*")}


@pytest.mark.parametrize("kind", ["dense", "sparse", "parquet"])
def test_openml_cache_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    import openml

    cache = tmp_path / "data" / "openml"
    dataset_id = 990001 + ["dense", "sparse", "parquet"].index(kind)
    X, labels = _fake_openml_cache(cache, dataset_id, kind)
    before = _snapshot(cache)
    for p in cache.rglob("*"):  # read-only, as shared/ is in CI
        p.chmod(0o555 if p.is_dir() else 0o444)
    configured = openml.config.get_config_as_dict()["cachedir"]
    monkeypatch.setenv("COSTBO_OPENML_IDS", f"tiny={dataset_id}")
    monkeypatch.delenv("COSTBO_OPENML_CACHE", raising=False)
    try:
        # found as <data dir>/openml, with the id from COSTBO_OPENML_IDS; the description's
        # URLs cannot resolve, so this passes only if nothing is downloaded
        got_X, got_y, where = data.load_xy("tiny", source="openml", data_dir=tmp_path / "data")
    finally:
        for p in cache.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
    assert f"OpenML dataset {dataset_id}" in where
    np.testing.assert_array_equal(got_X, X)
    expected = np.array([1 if label == "pos" else 0 for label in labels])
    np.testing.assert_array_equal(got_y, expected)
    assert _snapshot(cache) == before  # openml wrote into a temporary copy only
    assert openml.config.get_config_as_dict()["cachedir"] == configured


def test_openml_failure_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COSTBO_DATA_DIR", raising=False)
    empty = tmp_path / "cache"
    empty.mkdir()
    # an id that is not in the (empty) cache: openml tries the server, which the test
    # points at an address that cannot resolve, so the error comes back at once
    import openml

    monkeypatch.setattr(openml.config, "server", "https://invalid.invalid/api/v1/xml")
    with pytest.raises(data.DataUnavailableError, match=r"OpenML \(id 990009\)"):
        data.load_xy("tiny", source="openml", openml_id=990009, openml_cache=empty)


def test_the_openml_path_reads_a1a_from_an_openml_cache_built_from_the_libsvm_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, need_data: Callable[..., Path]
) -> None:
    """The real loader path, offline: a1a (the shared LIBSVM file, 1605 x 123) written as
    OpenML stores a sparse ARFF dataset, then read by ``openml.datasets.get_dataset`` through
    ``source="openml"``: the same matrix and labels as the LIBSVM loader gives."""
    import openml  # noqa: F401  (in the test extra: the loader's real dependency)

    root = need_data("libsvm/a1a")
    X, y, _ = data.load_xy("a1a", source="libsvm", data_dir=root)
    labels = ["pos" if v == 1 else "neg" for v in y]
    cache = tmp_path / "openml"
    dataset_id = 990123
    _fake_openml_cache(cache, dataset_id, "sparse", (X, labels))
    monkeypatch.delenv("COSTBO_DATA_DIR", raising=False)
    got_X, got_y, where = data.load_xy(
        "a1a", source="openml", openml_id=dataset_id, openml_cache=cache
    )
    assert f"OpenML dataset {dataset_id}" in where
    assert got_X.shape == (1605, 123)
    np.testing.assert_array_equal(got_X, X)
    np.testing.assert_array_equal(got_y, y)
