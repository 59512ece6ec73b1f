"""Per-process state that a copy of the sampler (pickled to a worker, deep-copied) starts anew."""

from __future__ import annotations

from typing import Any


class FreshWhenCopied:
    """Pickled as nothing: a copy is ``__init__()`` anew (its locks, threads and records)."""

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]
