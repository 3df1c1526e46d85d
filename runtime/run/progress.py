"""The run's progress bar (stderr)."""

from __future__ import annotations

import logging
import threading
import time as _time
from typing import TextIO

LOGGER = logging.getLogger("runtime.run")

__all__ = ["Progress"]


# ---------------------------------------------------------------------------- progress


class Progress:
    """Plain-text progress bar on a stream (stderr by default), rate-limited.

    Args:
        total: number of steps of the run.
        stream: text stream; None disables output.
        min_interval: seconds between redraws.
    """

    def __init__(self, total: int, stream: TextIO | None, min_interval: float = 0.25) -> None:
        self.total = max(int(total), 0)
        self.stream = stream
        self.min_interval = min_interval
        self._start = _time.perf_counter()
        self._last = -1e9
        self._tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self._last_decile = -1
        self._base = 0  # steps done before the rate clock started (the first step)
        self._notice: threading.Timer | None = None

    def first_step_begins(self, after: float = 1.0) -> None:
        """Announce the first step's one-off work if it takes longer than ``after`` seconds.

        The first step loads the Numba kernels from the cache, or compiles them when the
        cache is empty (tens of seconds): the user is told instead of watching a stalled
        bar with a meaningless ETA.
        """
        if self.stream is None:
            return
        stream = self.stream

        def say() -> None:
            stream.write("compiling kernels (first run only; cached for later runs) ...\n")
            stream.flush()

        self._notice = threading.Timer(after, say)
        self._notice.daemon = True
        self._notice.start()

    def first_step_done(self) -> None:
        """Stop the announcement; rates and ETA count from here (first step excluded)."""
        if self._notice is not None:
            self._notice.cancel()
            self._notice = None
        self._start = _time.perf_counter()
        self._base = 1

    def _line(self, done: int) -> str:
        elapsed = _time.perf_counter() - self._start
        rate = (done - self._base) / elapsed if elapsed > 0 and done > self._base else 0.0
        frac = done / self.total if self.total else 1.0
        width = 30
        filled = int(round(width * frac))
        # (no rate yet, right after the first step: no numbers rather than nonsense ones)
        speed = f"{rate:8.0f} steps/s" if rate > 0 else f"{'-':>8s} steps/s"
        eta = f"{(self.total - done) / rate:6.1f} s" if rate > 0 else f"{'-':>6s}  "
        return (
            f"[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} steps "
            f"{100 * frac:5.1f}%  {speed}  ETA {eta}"
        )

    def update(self, done: int) -> None:
        """Redraw for ``done`` completed steps (cheap when nothing is drawn)."""
        if self.stream is None:
            return
        now = _time.perf_counter()
        if self._tty:
            if now - self._last < self.min_interval and done < self.total:
                return
            self._last = now
            self.stream.write("\r" + self._line(done))
            self.stream.flush()
        else:  # logs / pipes: one line per 10 %
            decile = int(10 * done / self.total) if self.total else 10
            if decile > self._last_decile:
                self._last_decile = decile
                self.stream.write(self._line(done) + "\n")
                self.stream.flush()

    def close(self, done: int) -> None:
        """Final redraw and newline."""
        if self._notice is not None:
            self._notice.cancel()
        if self.stream is None:
            return
        if self._tty:
            self.stream.write("\r" + self._line(done) + "\n")
            self.stream.flush()
        else:
            self.update(done)
