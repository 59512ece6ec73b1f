"""Optuna's log lines written above an open progress bar instead of breaking into it (as
Optuna's own progress bar does), Optuna's handler put back when the bar closes."""

from __future__ import annotations

import contextlib
import logging
from typing import IO
from typing import Any

import optuna


__all__ = ["BarLogRoute"]


class BarLogRoute:
    """Routes Optuna's default handler through ``tqdm.write`` while ``bar`` is open.

    Args:
        bar: The open tqdm bar.
        tqdm: Its class (``tqdm.tqdm`` or ``tqdm.auto.tqdm``), whose ``write`` is used.
    """

    def __init__(self, bar: Any, tqdm: Any) -> None:
        self.line_open = True
        """Whether the bar's last frame awaits a newline (set by the bar when it draws)."""
        self._handlers: tuple[logging.Handler, logging.Handler] | None = None
        root = logging.getLogger("optuna")
        default = getattr(optuna.logging, "_default_handler", None)
        # Not attached: disabled by the user, or Optuna's own bar has already rerouted it.
        if not isinstance(default, logging.StreamHandler) or default not in root.handlers:
            return
        handler = _BarLogHandler(self, bar, tqdm, default.stream)
        handler.setLevel(default.level)
        handler.setFormatter(default.formatter)
        root.addHandler(handler)
        root.removeHandler(default)
        self._handlers = (handler, default)

    def close(self) -> None:
        """Put Optuna's handler back (idempotent)."""
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
    """Writes Optuna's log records to their stream without breaking into an open bar.

    On a terminal, ``tqdm.write`` clears the bar, writes the line and redraws the bar. A file
    (a log, CI) keeps every frame, so a redraw would repeat a stale state there: the bar's line
    is ended with a newline instead, and the next update draws the new state.
    """

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
