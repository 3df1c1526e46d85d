"""The legacy RangeSensorSchema (typed ``Lidar`` / ``Generic`` prims) is a registered codeless
schema: typed prims resolve their fallbacks through USD itself (no simrt reader involved),
``IsA`` follows the schema inheritance, and authored values win over fallbacks.

The fallback values are the RangeSensorSchema declarations (base ``RangeSensor``:
enabled 1, drawPoints 0, drawLines 0, minRange 0.4, maxRange 100; ``Generic``:
samplingRate 60, streaming 1; ``Lidar``: horizontalFov 360, verticalFov 30,
horizontalResolution 0.4, verticalResolution 4, rotationRate 20, highLod 0, yawOffset 0,
enableSemantics 0).
"""

from __future__ import annotations

import pytest
from pxr import Sdf, Usd, UsdGeom  # noqa: E402

import runtime.schema  # noqa: F401  (registers the schemas)

BASE = {
    "enabled": True,
    "drawPoints": False,
    "drawLines": False,
    "minRange": 0.4,
    "maxRange": 100.0,
}
LIDAR = {
    "horizontalFov": 360.0,
    "verticalFov": 30.0,
    "horizontalResolution": 0.4,
    "verticalResolution": 4.0,
    "rotationRate": 20.0,
    "highLod": False,
    "yawOffset": 0.0,
    "enableSemantics": False,
}
GENERIC = {"samplingRate": 60, "streaming": True}


@pytest.mark.parametrize(("type_name", "expected"), [("Lidar", LIDAR), ("Generic", GENERIC)])
def test_fallbacks_from_a_typed_prim(type_name, expected):
    stage = Usd.Stage.CreateInMemory()
    prim = stage.DefinePrim(f"/World/{type_name}", type_name)
    assert prim.IsA(UsdGeom.Xformable)
    for name, value in {**BASE, **expected}.items():
        attr = prim.GetAttribute(name)
        assert attr.IsValid(), name
        assert not attr.HasAuthoredValue(), name
        assert attr.Get() == pytest.approx(value), name
    # fallbacks live in the schema, not in the layer
    assert "enabled" not in stage.GetRootLayer().ExportToString()


def test_types_inheritance_and_authored_values():
    registry = Usd.SchemaRegistry
    base = registry.GetTypeFromSchemaTypeName("RangeSensor")
    for name in ("Lidar", "Generic"):
        t = registry.GetTypeFromSchemaTypeName(name)
        assert t and t.IsA(base)
        assert Usd.SchemaRegistry().FindConcretePrimDefinition(name) is not None
    assert Usd.SchemaRegistry().FindConcretePrimDefinition("RangeSensor") is None  # abstract
    layer = Sdf.Layer.CreateAnonymous(".usda")
    layer.ImportFromString(
        '#usda 1.0\ndef Lidar "lidar"\n{\n    float rotationRate = 0\n    bool highLod = 1\n}\n'
    )
    stage = Usd.Stage.Open(layer)
    prim = stage.GetPrimAtPath("/lidar")
    assert prim.IsA(base)
    assert prim.GetAttribute("rotationRate").Get() == 0.0
    assert prim.GetAttribute("highLod").Get() is True
    assert prim.GetAttribute("maxRange").Get() == pytest.approx(100.0)
