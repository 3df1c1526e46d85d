"""Stop signals held back while a chunk is written in the caller's thread.

A store without a writer thread (``StoreWriter(background=False)``) compresses and writes
its chunks in the step loop's thread. A stop signal (SIGINT / SIGTERM / SIGHUP) arriving
in the middle would interrupt the write, where a writer thread would have finished it.
:func:`stop_signals_held` replaces the Python handlers of those signals for the duration
of the write with one that only notes the signal, then puts the previous handlers back and
raises the first noted signal again, so that its own handler (the run's clean stop, Python's
``KeyboardInterrupt``, or the default action) acts once every handed-over row is on disk.

Blocking the signals with ``pthread_sigmask`` would not do: a process-directed signal is
delivered to any thread that does not block it, and Python then runs its handler in the
main thread at once.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["stop_signals_held"]

_STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextlib.contextmanager
def stop_signals_held() -> Iterator[None]:
    """Within the block, stop signals are noted, and raised again when the block ends.

    Outside the main thread (where Python runs no handlers and cannot install any) the block
    runs unchanged; a signal the process ignores stays ignored.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []

    def note(number: int, _frame: object) -> None:
        noted.append(number)

    previous = {}
    try:
        for number in _STOP_SIGNALS:
            handler = signal.getsignal(number)
            if handler is signal.SIG_IGN or handler is None:
                continue  # ignored (nohup), or installed outside Python: left alone
            previous[number] = signal.signal(number, note)
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if noted:
            signal.raise_signal(noted[0])  # its own handler now
