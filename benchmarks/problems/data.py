"""Datasets for the HPO benchmarks of Lee et al. (UAI 2021): OpenML first, LIBSVM files offline.

The paper trains on "the OpenML w2a dataset" (and a1a for its supplementary table). Two sources,
tried in this order by :func:`load_xy` with ``source="auto"``:

1. **OpenML** through the ``openml`` package: ``openml.datasets.get_dataset(ID)``, which reads
   its cache (``<root>/org/openml/www/datasets/<ID>/`` with ``description.xml`` plus
   ``dataset.arff`` or ``dataset_<ID>.pq``) and downloads only what is missing. The ids are
   configurable (``openml_id=``, ``--openml-id NAME=ID``, or the environment variable
   ``COSTBO_OPENML_IDS="w2a=ID,a1a=ID"``); no id is built in, because none could be verified
   (see ``shared/data/libsvm/SOURCES.md``), so without one the dataset is looked up by *name*,
   which needs the network. A cache root given to this module (``openml_cache=``,
   ``COSTBO_OPENML_CACHE``, or ``<data dir>/openml`` when it exists) is never written to: the
   dataset's folder is copied to a temporary directory first, because ``openml`` writes into
   its cache (a pickle of the parsed data, a log file). Without a cache root, openml's own
   configured cache is used as openml would. openml 0.15.1 with pandas 3 crashes on a sparse
   ARFF whose target is nominal (``pd.factorize`` gets a list); that case is read here with
   liac-arff (openml's own ARFF reader) instead.
2. **LIBSVM files** (svmlight text): ``a1a``, ``a1a.t``, ``w2a.reconstructed``, ``w2a.t``,
   ``w8a`` in a data directory given by ``data_dir=`` / ``--data-dir`` or the environment
   variable ``COSTBO_DATA_DIR`` (either the folder holding the files or its parent holding
   ``libsvm/``; never a hard-wired path). They are read with
   ``sklearn.datasets.load_svmlight_file(path, n_features=123)`` for a1a and ``300`` for the
   w files. "w2a" means ``w2a.reconstructed``: w2a's exact rows in another order, which a
   seeded random split does not see (``libsvm/SOURCES.md``).

When neither works, :class:`DataUnavailableError` says what was tried and what to set.

Features come back as a dense float64 array (w2a is 3470 x 300: 8 MB; trees and KNN on dense
input avoid sparse-only code paths, so the timings measure the models, not the format), labels
as int64 codes 0..k-1 in sorted order of the original labels (LIBSVM's -1/+1 -> 0/1).
:func:`train_valid_split` makes the seeded, stratified train/validation split.

    python -m benchmarks.problems.data w2a --data-dir ../shared/data   # where it came from
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from collections.abc import Sequence
import contextlib
from dataclasses import dataclass
import os
from pathlib import Path
import shutil
import tempfile
from typing import Any

import numpy as np


DATA_DIR_ENV = "COSTBO_DATA_DIR"
OPENML_IDS_ENV = "COSTBO_OPENML_IDS"
OPENML_CACHE_ENV = "COSTBO_OPENML_CACHE"
SOURCES = ("auto", "openml", "libsvm")


@dataclass(frozen=True)
class LibsvmSpec:
    """Where a dataset lives among the LIBSVM files, and its declared feature count."""

    file: str
    n_features: int


# Dataset name -> LIBSVM file. OpenML ids: none known (see the module docstring).
LIBSVM_FILES: dict[str, LibsvmSpec] = {
    "w2a": LibsvmSpec("w2a.reconstructed", 300),
    "w2a.t": LibsvmSpec("w2a.t", 300),
    "w8a": LibsvmSpec("w8a", 300),
    "a1a": LibsvmSpec("a1a", 123),
    "a1a.t": LibsvmSpec("a1a.t", 123),
}
DEFAULT_OPENML_IDS: dict[str, int] = {}


class DataUnavailableError(RuntimeError):
    """Neither OpenML nor the offline LIBSVM files could provide the dataset."""


@dataclass
class Dataset:
    """A train/validation split of one dataset, ready for the HPO objectives."""

    name: str
    source: str  # where it came from, for the reports
    X_train: np.ndarray  # (n_train, n_features) float64
    y_train: np.ndarray  # (n_train,) int64
    X_valid: np.ndarray  # (n_valid, n_features) float64
    y_valid: np.ndarray  # (n_valid,) int64

    @property
    def n_features(self) -> int:
        return int(self.X_train.shape[1])

    def describe(self) -> str:
        counts = np.bincount(np.concatenate([self.y_train, self.y_valid]))
        return (
            f"{self.name} from {self.source}: {len(self.y_train)} train + {len(self.y_valid)} "
            f"validation rows, {self.n_features} features, class counts {counts.tolist()}"
        )


# -- configuration -----------------------------------------------------------------------


def resolve_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The offline data directory: ``data_dir`` if given, else ``$COSTBO_DATA_DIR``, else None."""
    if data_dir is not None and str(data_dir) != "":
        return Path(data_dir).expanduser()
    env = os.environ.get(DATA_DIR_ENV, "")
    return Path(env).expanduser() if env else None


def parse_openml_ids(text: str | None) -> dict[str, int]:
    """``"w2a=123,a1a=456"`` -> ``{"w2a": 123, "a1a": 456}`` (a clear ValueError otherwise)."""
    ids: dict[str, int] = {}
    for item in (text or "").replace(";", ",").split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip().isdigit():
            raise ValueError(f"OpenML ids must look like 'w2a=123,a1a=456'; got {item!r}")
        ids[name.strip()] = int(value)
    return ids


def openml_id_for(name: str, openml_id: int | None = None) -> int | None:
    """The OpenML id to use for ``name``: the argument, then ``$COSTBO_OPENML_IDS``, then the
    built-in table (empty); None means look the name up (network)."""
    if openml_id is not None:
        return int(openml_id)
    env = parse_openml_ids(os.environ.get(OPENML_IDS_ENV))
    if name in env:
        return env[name]
    return DEFAULT_OPENML_IDS.get(name)


def _openml_cache_root(
    openml_cache: str | os.PathLike[str] | None, data_dir: Path | None
) -> Path | None:
    if openml_cache is not None and str(openml_cache) != "":
        return Path(openml_cache).expanduser()
    env = os.environ.get(OPENML_CACHE_ENV, "")
    if env:
        return Path(env).expanduser()
    if data_dir is not None and (data_dir / "openml").is_dir():
        return data_dir / "openml"
    return None


# -- LIBSVM ------------------------------------------------------------------------------


def libsvm_path(name: str, data_dir: Path) -> Path | None:
    """The LIBSVM file of ``name`` under ``data_dir`` or ``data_dir/libsvm``, if present."""
    spec = LIBSVM_FILES.get(name)
    if spec is None:
        return None
    for folder in (data_dir, data_dir / "libsvm"):
        if (folder / spec.file).is_file():
            return folder / spec.file
    return None


def load_libsvm(name: str, data_dir: Path) -> tuple[np.ndarray, np.ndarray, str]:
    """Dense features, 0..k-1 labels and a description, from the LIBSVM file of ``name``."""
    from sklearn.datasets import load_svmlight_file

    path = libsvm_path(name, data_dir)
    if path is None:
        known = ", ".join(sorted(LIBSVM_FILES))
        raise FileNotFoundError(
            f"no LIBSVM file for {name!r} in {data_dir} or {data_dir / 'libsvm'} "
            f"(known datasets: {known})"
        )
    X, y = load_svmlight_file(str(path), n_features=LIBSVM_FILES[name].n_features)
    return _dense(X), _codes(np.asarray(y)), f"LIBSVM file {path}"


# -- OpenML ------------------------------------------------------------------------------


@contextlib.contextmanager
def _openml_root(cache_root: Path | None, dataset_id: int | None) -> Iterator[None]:
    """Point openml at a private copy of ``cache_root`` (or leave its configuration alone)."""
    import openml

    if cache_root is None:
        yield
        return
    previous = openml.config.get_config_as_dict()["cachedir"]
    with tempfile.TemporaryDirectory(prefix="costbo-openml-") as tmp:
        relative = Path("org", "openml", "www", "datasets")
        if dataset_id is not None and (cache_root / relative / str(dataset_id)).is_dir():
            # NOTE: copy only this dataset; copies lose write-protection bits on purpose,
            # since openml writes its parsed-data pickle next to the ARFF file.
            shutil.copytree(
                cache_root / relative / str(dataset_id),
                Path(tmp) / relative / str(dataset_id),
                copy_function=shutil.copyfile,
            )
        openml.config.set_root_cache_directory(tmp)
        try:
            yield
        finally:
            openml.config.set_root_cache_directory(previous)


def load_openml(
    name: str, dataset_id: int | None, cache_root: Path | None
) -> tuple[np.ndarray, np.ndarray, str]:
    """Dense features, 0..k-1 labels and a description from OpenML (``dataset_id`` or, if
    None, the dataset's name). Raises ImportError without openml, and whatever openml raises
    (no network, unknown id, ...)."""
    import openml

    openml.config.connection_n_retries = 1  # fail fast offline
    with _openml_root(cache_root, dataset_id):
        dataset = openml.datasets.get_dataset(
            dataset_id if dataset_id is not None else name,
            download_data=True,
            download_qualities=False,
            download_features_meta_data=False,
        )
        target = dataset.default_target_attribute
        if not target:
            raise ValueError(f"OpenML dataset {dataset.dataset_id} has no default target")
        try:
            X, y, _, _ = dataset.get_data(target=target)
            X, labels = _frame_to_arrays(X, y)
        except TypeError:
            if str(dataset.format).lower() != "sparse_arff" or dataset.data_file is None:
                raise
            # NOTE: openml 0.15.1 + pandas 3: sparse ARFF with a nominal target fails in
            # pd.factorize(list); read the same cached ARFF with liac-arff ourselves.
            X, labels = _read_sparse_arff(Path(dataset.data_file), target)
    where = f"cache {cache_root}" if cache_root is not None else "openml's cache/server"
    return X, labels, f"OpenML dataset {dataset.dataset_id} ({dataset.name}, {where})"


def _frame_to_arrays(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    import pandas as pd
    import scipy.sparse

    if scipy.sparse.issparse(X):
        features = _dense(X)
    else:
        frame = pd.DataFrame(X)
        if hasattr(frame, "sparse") and any(isinstance(dt, pd.SparseDtype) for dt in frame.dtypes):
            features = _dense(frame.sparse.to_coo())
        else:
            frame = pd.get_dummies(frame)  # categorical features -> one-hot
            features = frame.astype(float).fillna(0.0).to_numpy(dtype=np.float64)
    return features, _codes(np.asarray(pd.Series(y).astype(str)))


def _read_sparse_arff(path: Path, target: str) -> tuple[np.ndarray, np.ndarray]:
    import arff  # liac-arff, a dependency of openml

    with open(path, encoding="utf8") as fh:
        data = arff.load(fh, encode_nominal=True, return_type=arff.COO)
    names = [a[0] for a in data["attributes"]]
    values, rows, cols = (np.asarray(v) for v in data["data"])
    n_rows = int(rows.max()) + 1 if len(rows) else 0
    dense = np.zeros((n_rows, len(names)))  # (n, n_attributes)
    dense[rows.astype(int), cols.astype(int)] = values.astype(float)
    k = names.index(target)
    keep = [j for j in range(len(names)) if j != k]
    return dense[:, keep], _codes(dense[:, k])


# -- loading -----------------------------------------------------------------------------


def load_xy(
    name: str,
    *,
    source: str = "auto",
    data_dir: str | os.PathLike[str] | None = None,
    openml_id: int | None = None,
    openml_cache: str | os.PathLike[str] | None = None,
) -> tuple[np.ndarray, np.ndarray, str]:
    """Features ``(n, d)`` float64, labels ``(n,)`` int64 and where they came from.

    Args:
        name: ``"w2a"``, ``"a1a"``, ... (the LIBSVM names; ``w2a`` is ``w2a.reconstructed``).
        source: ``"auto"`` (OpenML, then the LIBSVM files), ``"openml"`` or ``"libsvm"``.
        data_dir: Folder with the LIBSVM files (or its parent with ``libsvm/``); default
            ``$COSTBO_DATA_DIR``.
        openml_id: OpenML dataset id; default ``$COSTBO_OPENML_IDS``, else a name lookup.
        openml_cache: An openml cache root to read (copied first, never written); default
            ``$COSTBO_OPENML_CACHE``, else ``<data_dir>/openml`` if it exists, else openml's
            own cache.

    Raises:
        DataUnavailableError: no source could provide the dataset; the message lists what
            was tried and what to set.
    """
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    folder = resolve_data_dir(data_dir)
    tried: list[str] = []
    if source in ("auto", "openml"):
        dataset_id = openml_id_for(name, openml_id)
        cache_root = _openml_cache_root(openml_cache, folder)
        what = f"id {dataset_id}" if dataset_id is not None else f"name {name!r}"
        try:
            return load_openml(name, dataset_id, cache_root)
        except ImportError:
            tried.append("OpenML: the openml package is not installed (pip install openml)")
        except Exception as exc:  # offline, unknown id, bad cache, ...
            tried.append(f"OpenML ({what}): {type(exc).__name__}: {_first_line(exc)}")
    if source in ("auto", "libsvm"):
        if folder is None:
            tried.append(f"LIBSVM files: no data directory (${DATA_DIR_ENV} or --data-dir)")
        elif name not in LIBSVM_FILES:
            tried.append(f"LIBSVM files: {name!r} is not one of {sorted(LIBSVM_FILES)}")
        else:
            try:
                return load_libsvm(name, folder)
            except FileNotFoundError as exc:
                tried.append(f"LIBSVM files: {exc}")
    raise DataUnavailableError(
        f"dataset {name!r} is not available. Tried:\n  - "
        + "\n  - ".join(tried)
        + f"\nSet {DATA_DIR_ENV} (or pass --data-dir) to the folder holding the LIBSVM files "
        f"or its parent with libsvm/ (e.g. shared/data), or install openml and give the "
        f"OpenML id with --openml-id {name}=ID / {OPENML_IDS_ENV}={name}=ID (with network "
        f"access or a cached copy in ${OPENML_CACHE_ENV})."
    )


def train_valid_split(
    X: np.ndarray, y: np.ndarray, *, valid_fraction: float = 0.3, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Seeded, stratified split: ``X_train, X_valid, y_train, y_valid``."""
    from sklearn.model_selection import train_test_split

    parts = train_test_split(
        X, y, test_size=valid_fraction, random_state=seed, stratify=y, shuffle=True
    )
    X_train, X_valid, y_train, y_valid = parts
    return X_train, X_valid, y_train, y_valid


def load_dataset(
    name: str,
    *,
    source: str = "auto",
    data_dir: str | os.PathLike[str] | None = None,
    openml_id: int | None = None,
    openml_cache: str | os.PathLike[str] | None = None,
    valid_fraction: float = 0.3,
    split_seed: int = 0,
) -> Dataset:
    """:func:`load_xy` then :func:`train_valid_split` (the same split for every method)."""
    X, y, where = load_xy(
        name, source=source, data_dir=data_dir, openml_id=openml_id, openml_cache=openml_cache
    )
    X_train, X_valid, y_train, y_valid = train_valid_split(
        X, y, valid_fraction=valid_fraction, seed=split_seed
    )
    split = f"stratified {1 - valid_fraction:.0%}/{valid_fraction:.0%} split, seed {split_seed}"
    source_text = f"{where}; {split}"
    return Dataset(name, source_text, X_train, y_train, X_valid, y_valid)


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """The command-line flags shared by the HPO scripts."""
    parser.add_argument(
        "--data-dir",
        default=None,
        help=f"folder with the LIBSVM files or its parent (default: ${DATA_DIR_ENV})",
    )
    parser.add_argument(
        "--source", choices=SOURCES, default="auto", help="auto: OpenML, then LIBSVM files"
    )
    parser.add_argument(
        "--openml-id",
        default=None,
        help=f"NAME=ID[,NAME=ID] OpenML ids (default: ${OPENML_IDS_ENV}; else name lookup)",
    )
    parser.add_argument(
        "--openml-cache",
        default=None,
        help=f"openml cache root to read, copied first (default: ${OPENML_CACHE_ENV})",
    )
    parser.add_argument("--split-seed", type=int, default=0, help="train/validation split seed")
    parser.add_argument(
        "--valid-fraction", type=float, default=0.3, help="validation share (default 0.3)"
    )


def dataset_from_args(name: str, args: argparse.Namespace) -> Dataset:
    ids = parse_openml_ids(args.openml_id)
    return load_dataset(
        name,
        source=args.source,
        data_dir=args.data_dir,
        openml_id=ids.get(name),
        openml_cache=args.openml_cache,
        valid_fraction=args.valid_fraction,
        split_seed=args.split_seed,
    )


# -- helpers -----------------------------------------------------------------------------


def _dense(X: Any) -> np.ndarray:
    return np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)


def _codes(y: np.ndarray) -> np.ndarray:
    """Labels as 0..k-1 in sorted order of the distinct values."""
    _, codes = np.unique(np.asarray(y), return_inverse=True)
    return codes.astype(np.int64).ravel()


def _first_line(exc: BaseException, n: int = 200) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return text if len(text) <= n else text[: n - 3] + "..."


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="w2a, a1a, w8a, ...")
    add_data_arguments(parser)
    args = parser.parse_args(argv)
    try:
        print(dataset_from_args(args.name, args).describe())
    except DataUnavailableError as exc:
        raise SystemExit(str(exc)) from None


if __name__ == "__main__":
    main()
