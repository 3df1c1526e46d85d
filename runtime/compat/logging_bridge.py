"""Isaac Sim logger names for simrt's log records.

simrt logs to ``runtime.*`` loggers. Scripts and tests written for Isaac Sim listen on the
reference's logger names (recorded in the specs: ``usd.schema.isaac``,
``usd.schema.isaac.robot_schema``, ``usd.schema.isaac.robot_schema.utils`` in
robot-schema spec; ``isaacsim.robot.poser.robot_poser`` in kinematics spec). The sensor and
surface-gripper names below are the reference extensions' module names (the specs name no
Python logger for them; the reference logs those through Kit's carb logging).

Arrangement: one handler on the ``runtime`` logger re-emits each record, renamed, to the
handlers of the Isaac logger chosen by the longest matching ``runtime.*`` prefix, and of that
logger's ancestors up to (not including) the root logger, honouring levels and
``propagate``. The root logger is skipped because the original ``runtime.*`` record already
reaches it, so a root handler (or pytest's ``caplog``) sees each record once, under its
``runtime.*`` name; ``logging.getLogger("usd.schema.isaac").addHandler(h)`` or
``unittest``'s ``assertLogs("usd.schema.isaac.robot_schema.utils")`` see it under the Isaac
name. Installed by importing ``runtime.compat.isaac`` (idempotent); removed by
:func:`uninstall`.

Messages arrive formatted, as Isaac's code passes them (f-strings): the re-emitted record's
``msg`` is the final text and ``args`` is empty. Compat modules expose Isaac's module-level
``logger`` attribute (:func:`expose_logger`); when a test replaces it
(``mock.patch("runtime.compat.isaac.poser.logger")``) or patches one of its level methods
(``mock.patch.object(poser.logger, "warning")``), the bridge calls that replacement with the
formatted message -- ``mock.warning.call_args[0][0]`` is the text Isaac's code would log.
"""

from __future__ import annotations

import copy
import logging
import types
from typing import Any

__all__ = [
    "ISAAC_LOGGER_NAMES",
    "expose_logger",
    "install",
    "installed",
    "isaac_logger_name",
    "uninstall",
]

ISAAC_LOGGER_NAMES: dict[str, str] = {
    "runtime.schema": "usd.schema.isaac",
    "runtime.schema.authoring": "usd.schema.isaac.robot_schema",
    "runtime.schema.utils": "usd.schema.isaac.robot_schema.utils",
    "runtime.schema.populate": "usd.schema.isaac.robot_schema.utils",
    "runtime.schema.migration": "usd.schema.isaac.robot_schema.utils",
    "runtime.schema.dof": "usd.schema.isaac.robot_schema.utils",
    "runtime.kinematics": "usd.schema.isaac.robot_schema.kinematic_chain",
    "runtime.kinematics.ik": "usd.schema.isaac.robot_schema.lm_ik",
    "runtime.kinematics.poser": "isaacsim.robot.poser.robot_poser",
    "runtime.kinematics.named_poses": "isaacsim.robot.poser.robot_poser",
    "runtime.sensors": "isaacsim.sensors.experimental.physics",
    "runtime.engine.surface_gripper": "isaacsim.robot.surface_gripper",
}
"""``runtime.*`` logger prefix -> Isaac logger name (longest prefix wins)."""


def isaac_logger_name(name: str) -> str | None:
    """The Isaac logger name for a ``runtime.*`` logger name, or None when unmapped."""
    best = ""
    for prefix in ISAAC_LOGGER_NAMES:
        if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > len(best):
            best = prefix
    return ISAAC_LOGGER_NAMES[best] if best else None


_EXPOSED: dict[str, list[types.ModuleType]] = {}
_METHODS = {
    logging.DEBUG: "debug",
    logging.INFO: "info",
    logging.WARNING: "warning",
    logging.ERROR: "error",
    logging.CRITICAL: "critical",
}


def expose_logger(module: types.ModuleType, isaac_name: str) -> logging.Logger:
    """Give ``module`` Isaac's module-level ``logger`` (the logger named ``isaac_name``).

    Records bridged to ``isaac_name`` reach a replacement of ``module.logger`` (or of one of
    its level methods) as one call with the formatted message.

    Returns:
        The logger set as ``module.logger``.
    """
    logger = logging.getLogger(isaac_name)
    module.logger = logger  # type: ignore[attr-defined]
    owners = _EXPOSED.setdefault(isaac_name, [])
    if module not in owners:
        owners.append(module)
    return logger


def _replaced_method(target_name: str, levelno: int) -> Any:
    """The patched level method of an exposed ``logger`` attribute for this record, or None."""
    name = _METHODS.get(levelno)
    if name is None:
        return None
    real = logging.getLogger(target_name)
    for module in _EXPOSED.get(target_name, ()):
        current = getattr(module, "logger", real)
        if current is not real:
            return getattr(current, name, None)
        if name in vars(real):  # mock.patch.object(module.logger, "warning")
            return vars(real)[name]
    return None


class _IsaacBridge(logging.Handler):
    """Re-emits ``runtime.*`` records to the mapped Isaac logger's handlers (root excluded)."""

    def emit(self, record: logging.LogRecord) -> None:
        target_name = isaac_logger_name(record.name)
        if target_name is None:
            return
        message = record.getMessage()
        replaced = _replaced_method(target_name, record.levelno)
        if replaced is not None:
            replaced(message)
            return
        logger: logging.Logger | None = logging.getLogger(target_name)
        if not logger.isEnabledFor(record.levelno):  # type: ignore[union-attr]
            return
        renamed = copy.copy(record)
        renamed.name = target_name
        renamed.msg = message
        renamed.args = None
        root = logging.getLogger()
        while logger is not None and logger is not root:
            for handler in logger.handlers:
                if renamed.levelno >= handler.level:
                    handler.handle(renamed)
            if not logger.propagate:
                break
            logger = logger.parent  # type: ignore[assignment]


_BRIDGE = _IsaacBridge(level=logging.NOTSET)


def install() -> None:
    """Attach the bridge to the ``runtime`` logger (no-op when attached)."""
    runtime_logger = logging.getLogger("runtime")
    if _BRIDGE not in runtime_logger.handlers:
        runtime_logger.addHandler(_BRIDGE)


def uninstall() -> None:
    """Detach the bridge."""
    logging.getLogger("runtime").removeHandler(_BRIDGE)


def installed() -> bool:
    """True while the bridge is attached."""
    return _BRIDGE in logging.getLogger("runtime").handlers
