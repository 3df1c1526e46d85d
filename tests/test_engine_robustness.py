"""Engine robustness: missing optional pieces fail loudly instead of changing the physics."""

from __future__ import annotations

import importlib
import sys

import pytest

from runtime.engine import MujocoEngine
from runtime.errors import SimrtError
from tests.helpers.engine_stages import tet_stage


def test_mesh_hull_without_scipy_raises_naming_the_prim(monkeypatch):
    # the real tetrahedron builds a MuJoCo mesh geom (not its bounding box)
    engine = MujocoEngine(tet_stage(), dt=0.002)
    assert engine.model.nmesh == 1
    # scipy.spatial unimportable: trimesh's convex hull cannot run -> explicit error, not a
    # silent bounding-box replacement
    monkeypatch.setitem(sys.modules, "scipy.spatial", None)
    with pytest.raises(SimrtError, match=r"/World/b/tet.*scipy"):
        MujocoEngine(tet_stage(), dt=0.002)


def test_broken_dof_module_import_is_not_hidden(monkeypatch):
    import runtime.engine._dof_order as dof_order

    monkeypatch.setitem(sys.modules, "runtime.schema.dof", None)
    try:
        with pytest.raises(ImportError):
            importlib.reload(dof_order)
    finally:
        monkeypatch.undo()
        importlib.reload(dof_order)
    assert dof_order.build_dof_table.__module__ == "runtime.schema.dof"
