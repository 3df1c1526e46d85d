"""Stop signals of a run: SIGINT, SIGTERM and SIGHUP end the step loop cleanly.

``timeout``, systemd, Slurm, Kubernetes and Ray stop a process with SIGTERM; a closed
terminal sends SIGHUP; Ctrl-C sends SIGINT. Inside :func:`stop_signals_raise` the first of
them raises :class:`RunInterrupted` (a ``KeyboardInterrupt``) in the main thread, so the
run's ``finally`` blocks close the recording (``complete = False``, every step kept) and the
command exits with ``128 + signal number`` (130, 143, 129). Further signals while the run
closes are ignored (logged), so a second Ctrl-C cannot tear the recording.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator

__all__ = ["RunInterrupted", "STOP_SIGNALS", "signals_deferred", "stop_signals_raise"]

_LOG = logging.getLogger(__name__)

STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class RunInterrupted(KeyboardInterrupt):
    """A stop signal arrived during a run.

    Attributes:
        signal_number: the signal.
        signal_name: its name (``"SIGTERM"``).
        exit_code: ``128 + signal_number``, the shell convention.
    """

    def __init__(self, signal_number: int) -> None:
        self.signal_number = int(signal_number)
        self.signal_name = signal.Signals(signal_number).name
        self.exit_code = 128 + self.signal_number
        super().__init__(f"interrupted by {self.signal_name}")


@contextlib.contextmanager
def stop_signals_raise() -> Iterator[None]:
    """Within the block, the first stop signal raises :class:`RunInterrupted`.

    Outside the main thread (where Python cannot install handlers) the block runs with
    the process's handlers unchanged; a signal the process ignores (``nohup``) stays
    ignored.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def handler(number: int, _frame: object) -> None:
        if received:
            _LOG.warning("%s ignored: the run is closing", signal.Signals(number).name)
            return
        received.append(number)
        if _deferring:
            _deferred.append(number)  # raised when the deferring block ends
            return
        raise RunInterrupted(number)

    previous = {}
    for number in STOP_SIGNALS:
        if signal.getsignal(number) is signal.SIG_IGN:
            continue  # e.g. SIGHUP under nohup, SIGINT of a background job: stays ignored
        previous[number] = signal.signal(number, handler)
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


_deferring: list[bool] = []
_deferred: list[int] = []


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Within the block (closing a recording), a stop signal is held until the block ends.

    Only effective inside :func:`stop_signals_raise`; then the held signal raises
    :class:`RunInterrupted` when the block ends (unless another exception is on its way).
    """
    _deferring.append(True)
    try:
        yield
    finally:
        _deferring.pop()
    if not _deferring and _deferred:
        raise RunInterrupted(_deferred.pop())
