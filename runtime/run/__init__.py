"""Running scenes: configuration, the step loop, stop signals and the summary."""

from runtime.run.interrupts import RunInterrupted, signals_deferred, stop_signals_raise

__all__ = ["RunInterrupted", "signals_deferred", "stop_signals_raise"]
