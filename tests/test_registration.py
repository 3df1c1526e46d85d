import subprocess
import sys

import pytest
from pxr import Usd

from runtime.errors import RegistrationError
from runtime.schema import _register


def test_api_schemas_apply_and_report():
    stage = Usd.Stage.CreateInMemory()
    prim = stage.DefinePrim("/R", "Xform")
    for name in (
        "IsaacRobotAPI",
        "IsaacLinkAPI",
        "IsaacJointAPI",
        "IsaacSiteAPI",
        "IsaacAttachmentPointAPI",
    ):
        assert prim.ApplyAPI(name)
        assert prim.HasAPI(name)


def test_deprecated_reference_point_api_is_defined():
    """Issue fix: old assets authoring the deprecated API answer HasAPI.

    See docs/guides/inspect-and-schema.md#registration.
    """
    stage = Usd.Stage.CreateInMemory()
    prim = stage.DefinePrim("/R", "Xform")
    prim.AddAppliedSchema("IsaacReferencePointAPI")
    assert prim.HasAPI("IsaacReferencePointAPI")
    assert "IsaacReferencePointAPI" in prim.GetPrimTypeInfo().GetAppliedAPISchemas()
    assert prim.GetAttribute("isaac:forwardAxis").Get() == "X"


def test_registration_after_registry_built_raises_clear_error():
    code = (
        "from pxr import Usd, UsdPhysics\n"
        "s = Usd.Stage.CreateInMemory(); p = s.DefinePrim('/X', 'Xform')\n"
        "UsdPhysics.RigidBodyAPI.Apply(p)\n"
        "import runtime.schema\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "RegistrationError" in proc.stderr
    assert "before the first USD stage" in proc.stderr
    assert "PXR_PLUGINPATH_NAME" in proc.stderr


def test_register_skips_known_plugin(tmp_path, monkeypatch):
    (tmp_path / "plugInfo.json").write_text('# comment\n{"Plugins": [{"Name": "RobotSchema"}]}\n')
    calls = []
    monkeypatch.setattr(_register.Plug.Registry, "RegisterPlugins", lambda self, p: calls.append(p))
    assert _register.register_plugin_dir(tmp_path) is False
    assert calls == []


def test_error_type_is_exported():
    assert issubclass(RegistrationError, RuntimeError)


def test_import_runtime_is_light():
    code = (
        "import sys, runtime\n"
        "bad = [m for m in sys.modules if m == 'pxr' or m.startswith('pxr.') or m == 'trimesh'"
        " or m == 'numba']\n"
        "print(bad)\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("name", ["IsaacContactSensor", "IsaacImuSensor", "IsaacRaycastSensor"])
def test_sensor_types_are_base_sensors(name):
    stage = Usd.Stage.CreateInMemory()
    prim = stage.DefinePrim("/S", name)
    assert prim.IsA("IsaacBaseSensor")
    assert prim.GetAttribute("enabled").Get() is True


def test_pxr_pluginpath_name_registers_before_python_imports(tmp_path):
    """README: PXR_PLUGINPATH_NAME works as well, even with a stage created before import."""
    import os

    paths = os.pathsep.join(str(d) for d in _register.RESOURCE_DIRS)
    code = (
        "from pxr import Usd\n"
        "s = Usd.Stage.CreateInMemory(); p = s.DefinePrim('/R', 'Xform')\n"
        "assert p.ApplyAPI('IsaacRobotAPI') and p.HasAPI('IsaacRobotAPI')\n"
        "assert s.DefinePrim('/C', 'IsaacContactSensor').IsA('IsaacBaseSensor')\n"
        "import runtime.schema\n"
        "print('ok')\n"
    )
    env = dict(os.environ, PXR_PLUGINPATH_NAME=paths)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_register_new_plugin_calls_registry_once(tmp_path, monkeypatch):
    """Scenario 2: an unknown plugin name is registered by directory.

    See docs/guides/inspect-and-schema.md.
    """
    (tmp_path / "plugInfo.json").write_text('# comment\n{"Plugins": [{"Name": "NewPlugin"}]}\n')
    calls = []

    def fake(self, path):
        calls.append(path)
        return ["NewPlugin"]

    monkeypatch.setattr(_register.Plug.Registry, "RegisterPlugins", fake)
    assert _register.register_plugin_dir(tmp_path) is True
    assert calls == [str(tmp_path)]
    assert _register.plugin_names(tmp_path / "plugInfo.json") == ["NewPlugin"]
