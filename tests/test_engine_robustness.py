"""Engine robustness: missing optional pieces fail loudly instead of changing the physics."""

from __future__ import annotations

import importlib
import sys

import pytest
from pxr import Gf, UsdGeom, UsdPhysics, Vt
from test_engine_builder import body, ground, new_stage

from runtime.engine import MujocoEngine
from runtime.errors import SimrtError


def _tet_stage():
    stage = new_stage()
    ground(stage)
    body(stage, "/World/b", pos=(0, 0, 0.5), mass=1.0, inertia=(0.01, 0.01, 0.01), shape=None)
    mesh = UsdGeom.Mesh.Define(stage, "/World/b/tet")
    pts = [(-0.1, -0.1, -0.1), (0.1, -0.1, -0.1), (0.0, 0.1, -0.1), (0.0, 0.0, 0.1)]
    mesh.CreatePointsAttr(Vt.Vec3fArray([Gf.Vec3f(*p) for p in pts]))
    mesh.CreateFaceVertexCountsAttr([3, 3, 3, 3])
    mesh.CreateFaceVertexIndicesAttr([0, 2, 1, 0, 1, 3, 1, 2, 3, 2, 0, 3])
    UsdPhysics.CollisionAPI.Apply(mesh.GetPrim())
    UsdPhysics.MeshCollisionAPI.Apply(mesh.GetPrim()).CreateApproximationAttr("convexHull")
    return stage


def test_mesh_hull_without_scipy_raises_naming_the_prim(monkeypatch):
    # the real tetrahedron builds a MuJoCo mesh geom (not its bounding box)
    engine = MujocoEngine(_tet_stage(), dt=0.002)
    assert engine.model.nmesh == 1
    # scipy.spatial unimportable: trimesh's convex hull cannot run -> explicit error, not a
    # silent bounding-box replacement
    monkeypatch.setitem(sys.modules, "scipy.spatial", None)
    with pytest.raises(SimrtError, match=r"/World/b/tet.*scipy"):
        MujocoEngine(_tet_stage(), dt=0.002)


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
