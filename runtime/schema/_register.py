"""Registration of the codeless Isaac Robot and Sensor schemas with usd-core.

USD builds its schema registry once per process, the first time a stage is created or a
schema is queried. Plugins registered after that are listed by ``Plug`` but their types
stay unknown, so registration must happen before any stage exists. ``runtime.schema``
calls :func:`register_schemas` on import; when the check after registration shows the
registry was already built, a :class:`~runtime.errors.RegistrationError` tells the user
how to fix the import order.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from pxr import Plug, Usd

from runtime.errors import RegistrationError

__all__ = ["RESOURCE_DIRS", "plugin_names", "register_plugin_dir", "register_schemas"]

_LOG = logging.getLogger("runtime.schema")

_RESOURCES = Path(__file__).resolve().parent / "resources"

RESOURCE_DIRS: tuple[Path, ...] = (
    _RESOURCES / "robot_schema",
    _RESOURCES / "sensor_schema",
    _RESOURCES / "range_sensor_schema",
)
"""Directories holding ``plugInfo.json`` + ``generatedSchema.usda``, one per schema plugin
(the legacy ``RangeSensorSchema`` -- typed ``Lidar`` / ``Generic`` prims -- is the third)."""

# One schema of each plugin that must be known once registration succeeded.
_PROBE_SCHEMAS = ("IsaacRobotAPI", "IsaacNamedPose", "IsaacContactSensor", "Lidar")

_FIX = (
    "The Isaac schemas must be registered before the first USD stage of the process is "
    "created. Import runtime.schema (or anything under runtime that reads USD) before "
    "creating or opening any Usd.Stage, or set the environment variable "
    "PXR_PLUGINPATH_NAME={paths} before Python starts."
)


def plugin_names(plug_info: Path) -> list[str]:
    """Return the plugin names declared in a ``plugInfo.json``.

    USD's reader accepts ``#`` comment lines; ``json`` does not, so they are dropped first.

    Args:
        plug_info: path of the ``plugInfo.json`` file.

    Returns:
        The ``Name`` of every entry of ``Plugins`` (may be empty).
    """
    lines = plug_info.read_text(encoding="utf-8").splitlines()
    data = json.loads("\n".join(line for line in lines if not line.strip().startswith("#")))
    return [str(p["Name"]) for p in data.get("Plugins", []) if "Name" in p]


def register_plugin_dir(directory: str | os.PathLike[str]) -> bool:
    """Register the resource plugin in ``directory`` unless a plugin of that name exists.

    Isaac Sim's own copy of a schema uses the same plugin and type names; registering both
    would produce duplicate-type errors, so an already registered name is left alone.

    Args:
        directory: folder holding ``plugInfo.json`` and ``generatedSchema.usda`` (a
            ``str`` or a path object).

    Returns:
        True when ``Plug.Registry().RegisterPlugins`` was called.
    """
    directory = Path(directory)
    plug_info = directory / "plugInfo.json"
    if not plug_info.is_file():
        return False
    try:
        names = plugin_names(plug_info)
    except (OSError, ValueError, KeyError, TypeError):
        names = []
    known = {plugin.name for plugin in Plug.Registry().GetAllPlugins()}
    if names and all(name in known for name in names):
        return False
    if not Plug.Registry().RegisterPlugins(str(directory)):
        _LOG.error("No plugins found at path %s", directory)
    return True


def register_schemas() -> None:
    """Register every simrt schema plugin and check that USD knows the types.

    Raises:
        RegistrationError: the schema registry was built before registration (a stage was
            created earlier in the process), so the Isaac types would stay unknown.
    """
    for directory in RESOURCE_DIRS:
        register_plugin_dir(directory)
    registry = Usd.SchemaRegistry()
    missing = [
        name
        for name in _PROBE_SCHEMAS
        if registry.FindConcretePrimDefinition(name) is None
        and registry.FindAppliedAPIPrimDefinition(name) is None
    ]
    if missing:
        paths = ":".join(str(d) for d in RESOURCE_DIRS)
        raise RegistrationError(
            f"USD does not know the schema(s) {', '.join(missing)}. " + _FIX.format(paths=paths)
        )
