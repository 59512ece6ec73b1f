"""Optuna's log lines written above an open progress bar, as Optuna's own bar does."""

from __future__ import annotations

import contextlib
import logging
from typing import IO
from typing import Any

import optuna


class BarLogRoute:
    """Routes Optuna's default handler through ``tqdm.write`` (``tqdm``: the bar's class)."""

    def __init__(self, bar: Any, tqdm: Any) -> None:
        self.line_open = True  # the bar's last frame awaits a newline
        self._handlers: tuple[logging.Handler, logging.Handler] | None = None
        root = logging.getLogger("optuna")
        default = getattr(optuna.logging, "_default_handler", None)
        # not attached: disabled by the user, or rerouted by Optuna's own bar
        if not isinstance(default, logging.StreamHandler) or default not in root.handlers:
            return
        handler = _BarLogHandler(self, bar, tqdm, default.stream)
        handler.setLevel(default.level)
        handler.setFormatter(default.formatter)
        root.addHandler(handler)
        root.removeHandler(default)
        self._handlers = (handler, default)

    def close(self) -> None:
        self.line_open = False
        if self._handlers is None:
            return
        handler, default = self._handlers
        self._handlers = None
        root = logging.getLogger("optuna")
        if handler in root.handlers:
            root.removeHandler(handler)
            root.addHandler(default)


class _BarLogHandler(logging.Handler):
    """Writes Optuna's records with ``tqdm.write``; to a file (which keeps every frame) after
    a newline ending the bar's line instead, the next update drawing the bar again."""

    def __init__(self, route: BarLogRoute, bar: Any, tqdm: Any, stream: IO[str]) -> None:
        super().__init__()
        self._route = route
        self._same_stream = getattr(bar, "fp", None) == stream
        self._tqdm = tqdm
        self._stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self.format(record)
            if self._same_stream and not _isatty(self._stream):
                prefix = "\n" if self._route.line_open else ""
                self._route.line_open = False
                self._stream.write(f"{prefix}{message}\n")
                self.flush()
            else:
                self._tqdm.write(message, file=self._stream)
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)

    def flush(self) -> None:
        with self.lock or contextlib.nullcontext():
            if hasattr(self._stream, "flush"):
                self._stream.flush()


def _isatty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False
