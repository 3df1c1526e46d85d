"""Dotted import paths under a compat module that is not a package.

``runtime.compat.isaac`` is a single module, but Isaac scripts import from its submodules
(``robot_schema.math``, ``robot_schema.kinematic_chain``, ...). Like ``os.path``, such a
submodule is registered in ``sys.modules`` under the dotted name, so both
``from runtime.compat.isaac.math import quat_mul`` and attribute access work once the parent
module has been imported (the import statement imports the parent first).
"""

from __future__ import annotations

import sys
import types
from typing import Any

__all__ = ["register_submodule"]


def register_submodule(
    parent: str, name: str, source: types.ModuleType | None = None, **names: Any
) -> types.ModuleType:
    """Register ``<parent>.<name>`` in ``sys.modules``.

    Args:
        parent: dotted name of the parent module (already imported).
        name: the submodule's last name component.
        source: an existing module to register under the dotted name (None: create one).
        **names: attributes of a created module (its ``__all__`` lists them, sorted).

    Returns:
        The registered module (also set as attribute ``name`` of the parent by the caller).
    """
    full = f"{parent}.{name}"
    if source is None:
        source = types.ModuleType(full, f"Isaac import path ``{full}`` (names re-exported).")
        for key, value in names.items():
            setattr(source, key, value)
        source.__all__ = sorted(names)  # type: ignore[attr-defined]
    sys.modules[full] = source
    return source
