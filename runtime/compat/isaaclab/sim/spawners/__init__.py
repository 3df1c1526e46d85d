"""``isaaclab.sim.spawners``: spawner cfgs and spawn functions over :mod:`runtime.physics`.

Each cfg carries ``func``; ``cfg.func(prim_path, cfg, translation=None, orientation=None)``
spawns it (Isaac Lab's calling convention; ``stage=`` optional, else
:func:`runtime.compat.set_current_stage`'s stage). Orientations are (w, x, y, z).

* :class:`UsdFileCfg` -> :func:`spawn_from_usd`: an ``Xform`` at ``prim_path`` referencing
  ``usd_path`` (translate / orient / scale ops when given), then the property slots through
  :func:`runtime.physics.apply_asset_physics` (rigid -> collision -> mass -> articulation ->
  joint drive, with the MuJoCo gravity-compensation auto-enable), i.e. exactly what
  ``runtime.physics`` authors for the same cfgs.
* Shape cfgs (``CuboidCfg``, ``SphereCfg``, ``CapsuleCfg``, ``CylinderCfg``, ``ConeCfg``) and
  mesh cfgs (``MeshCuboidCfg``, ``MeshSphereCfg``, ...) -> :func:`runtime.physics.spawn_shape`
  (UsdGeom primitive or triangle mesh under ``<prim_path>/geometry/mesh``).

Slots simrt cannot author (``fixed_tendons_props``, ``deformable_props``, visual materials)
raise ``ValueError`` when set instead of being dropped silently.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from runtime.compat._stage import resolve_stage
from runtime.physics.cfg import (
    ArticulationRootBaseCfg,
    CollisionBaseCfg,
    JointDriveBaseCfg,
    MassPropertiesCfg,
    RigidBodyBaseCfg,
    RigidBodyMaterialBaseCfg,
)

__all__ = [
    "CapsuleCfg",
    "ConeCfg",
    "CuboidCfg",
    "CylinderCfg",
    "FileCfg",
    "MeshCapsuleCfg",
    "MeshCfg",
    "MeshConeCfg",
    "MeshCuboidCfg",
    "MeshCylinderCfg",
    "MeshSphereCfg",
    "RigidObjectSpawnerCfg",
    "ShapeCfg",
    "SpawnerCfg",
    "SphereCfg",
    "UsdFileCfg",
    "spawn_capsule",
    "spawn_cone",
    "spawn_cuboid",
    "spawn_cylinder",
    "spawn_from_usd",
    "spawn_mesh_capsule",
    "spawn_mesh_cone",
    "spawn_mesh_cuboid",
    "spawn_mesh_cylinder",
    "spawn_mesh_sphere",
    "spawn_sphere",
]

_LOG = logging.getLogger("runtime.physics.spawn")

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]


def _unsupported(cfg: Any, names: Sequence[str]) -> None:
    for name in names:
        if getattr(cfg, name, None) is not None:
            raise ValueError(
                f"{type(cfg).__name__}.{name} is not supported by simrt (only physics property "
                "cfgs are authored); leave it None"
            )


def _place(prim: Any, translation: Vec3 | None, orientation: Quat | None, scale: Any) -> None:
    from pxr import Gf, UsdGeom

    xform = UsdGeom.Xformable(prim)
    if translation is not None:
        xform.AddTranslateOp().Set(Gf.Vec3d(*map(float, translation)))
    if orientation is not None:
        w, x, y, z = map(float, orientation)
        norm = (w * w + x * x + y * y + z * z) ** 0.5
        if not norm > 0.0:
            raise ValueError(f"orientation {orientation} is not a quaternion (w, x, y, z)")
        xform.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(
            Gf.Quatd(w / norm, Gf.Vec3d(x / norm, y / norm, z / norm))
        )
    if scale is not None:
        xform.AddScaleOp().Set(Gf.Vec3d(*map(float, scale)))


# ------------------------------------------------------------------------------ cfg classes


@dataclass(kw_only=True)
class SpawnerCfg:
    """Base of every spawner cfg.

    Attributes:
        func: the spawn function ``func(prim_path, cfg, translation, orientation, *, stage)``.
        visible: author ``visibility = invisible`` when False.
        semantic_tags: not authored by simrt (must stay None).
        copy_from_source: kept for signature parity (simrt always references the source).
    """

    func: Callable[..., Any] | None = None
    visible: bool = True
    semantic_tags: list[tuple[str, str]] | None = None
    copy_from_source: bool = True


@dataclass(kw_only=True)
class RigidObjectSpawnerCfg(SpawnerCfg):
    """Spawner with rigid-body property slots.

    Attributes:
        mass_props: mass cfg.
        rigid_props: rigid-body cfg (any subclass: PhysX, Newton, MuJoCo).
        collision_props: collision cfg.
        activate_contact_sensors: PhysX contact reporting; simrt's contact sensors need no
            activation, so this only logs.
    """

    mass_props: MassPropertiesCfg | None = None
    rigid_props: RigidBodyBaseCfg | None = None
    collision_props: CollisionBaseCfg | None = None
    activate_contact_sensors: bool = False


@dataclass(kw_only=True)
class FileCfg(RigidObjectSpawnerCfg):
    """Spawner of an asset file.

    Attributes:
        scale: scale of the asset root, or None.
        articulation_props: articulation-root cfg.
        fixed_tendons_props: not supported (must stay None).
        joint_drive_props: joint-drive cfg (any subclass).
        deformable_props: not supported (must stay None).
        visual_material_path: kept for signature parity.
        visual_material: not supported (must stay None).
    """

    scale: Vec3 | None = None
    articulation_props: ArticulationRootBaseCfg | None = None
    fixed_tendons_props: Any = None
    joint_drive_props: JointDriveBaseCfg | None = None
    deformable_props: Any = None
    visual_material_path: str = "material"
    visual_material: Any = None


def spawn_from_usd(
    prim_path: str,
    cfg: UsdFileCfg,
    translation: Vec3 | None = None,
    orientation: Quat | None = None,
    *,
    stage: Any = None,
) -> Any:
    """Reference ``cfg.usd_path`` at ``prim_path`` and author the cfg's property slots.

    Args:
        prim_path: where to spawn (created as an ``Xform`` when missing; an existing prim
            gets the reference added, as Isaac Lab does).
        cfg: the :class:`UsdFileCfg`.
        translation: position in the parent frame [stage units], or None.
        orientation: (w, x, y, z) in the parent frame, or None.
        stage: the stage (default: the current compat stage).

    Returns:
        The spawned ``Usd.Prim``.

    Raises:
        FileNotFoundError: ``usd_path`` does not exist.
        ValueError: an unsupported slot is set.
        PhysicsCfgError: a cfg value cannot be written (names the prim and attribute).
    """
    from pxr import UsdGeom

    from runtime.physics.spawn import apply_asset_physics

    st = resolve_stage(stage)
    _unsupported(
        cfg, ("fixed_tendons_props", "deformable_props", "visual_material", "semantic_tags")
    )
    usd_path = str(cfg.usd_path)
    if "://" not in usd_path:
        if not os.path.isfile(usd_path):
            raise FileNotFoundError(f"UsdFileCfg.usd_path: no file {usd_path!r}")
        usd_path = os.path.abspath(usd_path)
    prim = st.GetPrimAtPath(prim_path)
    if not prim or not prim.IsValid():
        prim = UsdGeom.Xform.Define(st, prim_path).GetPrim()
    prim.GetReferences().AddReference(usd_path)
    if cfg.variants:
        for name, choice in cfg.variants.items():
            prim.GetVariantSets().GetVariantSet(name).SetVariantSelection(str(choice))
    _place(prim, translation, orientation, cfg.scale)
    if not cfg.visible:
        UsdGeom.Imageable(prim).MakeInvisible()
    if cfg.activate_contact_sensors:
        _LOG.info(
            "%s: activate_contact_sensors is not needed by simrt's contact sensors", prim_path
        )
    apply_asset_physics(
        st,
        prim_path,
        rigid_props=cfg.rigid_props,
        collision_props=cfg.collision_props,
        mass_props=cfg.mass_props,
        articulation_props=cfg.articulation_props,
        joint_drive_props=cfg.joint_drive_props,
    )
    return prim


@dataclass(kw_only=True)
class UsdFileCfg(FileCfg):
    """``UsdFileCfg``: spawn a USD asset file with property cfgs.

    Attributes:
        usd_path: the asset file (required).
        variants: variant-set name -> selection, or None.
    """

    usd_path: str
    variants: dict[str, str] | None = None
    func: Callable[..., Any] | None = field(default=spawn_from_usd, repr=False)


@dataclass(kw_only=True)
class ShapeCfg(RigidObjectSpawnerCfg):
    """Primitive-shape spawner (UsdGeom shape under ``<prim_path>/geometry/mesh``).

    Attributes:
        visual_material_path: kept for signature parity.
        visual_material: not supported (must stay None).
        physics_material_path: material prim path relative to ``<prim_path>/geometry``.
        physics_material: rigid-body material cfg bound to the shape.
    """

    visual_material_path: str = "material"
    visual_material: Any = None
    physics_material_path: str = "material"
    physics_material: RigidBodyMaterialBaseCfg | None = None


@dataclass(kw_only=True)
class MeshCfg(ShapeCfg):
    """Triangle-mesh spawner (same slots as :class:`ShapeCfg`)."""


def _spawn(
    shape: str,
    as_mesh: bool,
    prim_path: str,
    cfg: Any,
    translation: Vec3 | None,
    orientation: Quat | None,
    stage: Any,
) -> Any:
    from pxr import UsdGeom

    from runtime.physics.spawn import spawn_shape

    st = resolve_stage(stage)
    _unsupported(cfg, ("visual_material", "semantic_tags"))
    material_path = cfg.physics_material_path
    if not material_path.startswith("/"):
        material_path = f"{prim_path}/geometry/{material_path}"
    prim = spawn_shape(
        st,
        prim_path,
        shape,
        size=tuple(getattr(cfg, "size", (1.0, 1.0, 1.0))),
        radius=float(getattr(cfg, "radius", 0.5)),
        height=float(getattr(cfg, "height", 1.0)),
        axis=str(getattr(cfg, "axis", "Z")),
        translation=tuple(translation) if translation is not None else (0.0, 0.0, 0.0),
        as_mesh=as_mesh,
        collision_props=cfg.collision_props,
        mass_props=cfg.mass_props,
        rigid_props=cfg.rigid_props,
        physics_material=cfg.physics_material,
        physics_material_path=material_path,
    )
    _place(prim, None, orientation, None)
    if not cfg.visible:
        UsdGeom.Imageable(prim).MakeInvisible()
    return prim


def _spawner(shape: str, as_mesh: bool, doc: str) -> Callable[..., Any]:
    def spawn(
        prim_path: str,
        cfg: Any,
        translation: Vec3 | None = None,
        orientation: Quat | None = None,
        *,
        stage: Any = None,
    ) -> Any:
        return _spawn(shape, as_mesh, prim_path, cfg, translation, orientation, stage)

    spawn.__name__ = f"spawn_{'mesh_' if as_mesh else ''}{shape}"
    spawn.__doc__ = (
        f"Spawn {doc} at ``prim_path`` (``translation`` / ``orientation`` (w, x, y, z) in the "
        "parent frame, ``stage`` default: the current compat stage); returns the root prim."
    )
    return spawn


spawn_cuboid = _spawner("cuboid", False, "a UsdGeom cube scaled to ``cfg.size``")
spawn_sphere = _spawner("sphere", False, "a UsdGeom sphere")
spawn_capsule = _spawner("capsule", False, "a UsdGeom capsule")
spawn_cylinder = _spawner("cylinder", False, "a UsdGeom cylinder")
spawn_cone = _spawner("cone", False, "a UsdGeom cone")
spawn_mesh_cuboid = _spawner("cuboid", True, "a triangle-mesh box")
spawn_mesh_sphere = _spawner("sphere", True, "a triangle-mesh sphere")
spawn_mesh_capsule = _spawner("capsule", True, "a triangle-mesh capsule")
spawn_mesh_cylinder = _spawner("cylinder", True, "a triangle-mesh cylinder")
spawn_mesh_cone = _spawner("cone", True, "a triangle-mesh cone")


@dataclass(kw_only=True)
class CuboidCfg(ShapeCfg):
    """Box of extents ``size`` [stage units]."""

    size: Vec3
    func: Callable[..., Any] | None = field(default=spawn_cuboid, repr=False)


@dataclass(kw_only=True)
class SphereCfg(ShapeCfg):
    """Sphere of ``radius`` [stage units]."""

    radius: float
    func: Callable[..., Any] | None = field(default=spawn_sphere, repr=False)


@dataclass(kw_only=True)
class CapsuleCfg(ShapeCfg):
    """Capsule of ``radius`` and ``height`` along ``axis``."""

    radius: float
    height: float
    axis: str = "Z"
    func: Callable[..., Any] | None = field(default=spawn_capsule, repr=False)


@dataclass(kw_only=True)
class CylinderCfg(ShapeCfg):
    """Cylinder of ``radius`` and ``height`` along ``axis``."""

    radius: float
    height: float
    axis: str = "Z"
    func: Callable[..., Any] | None = field(default=spawn_cylinder, repr=False)


@dataclass(kw_only=True)
class ConeCfg(ShapeCfg):
    """Cone of ``radius`` and ``height`` along ``axis``."""

    radius: float
    height: float
    axis: str = "Z"
    func: Callable[..., Any] | None = field(default=spawn_cone, repr=False)


@dataclass(kw_only=True)
class MeshCuboidCfg(MeshCfg):
    """Triangle-mesh box of extents ``size``."""

    size: Vec3
    func: Callable[..., Any] | None = field(default=spawn_mesh_cuboid, repr=False)


@dataclass(kw_only=True)
class MeshSphereCfg(MeshCfg):
    """Triangle-mesh sphere of ``radius``."""

    radius: float
    func: Callable[..., Any] | None = field(default=spawn_mesh_sphere, repr=False)


@dataclass(kw_only=True)
class MeshCapsuleCfg(MeshCfg):
    """Triangle-mesh capsule of ``radius`` and ``height`` along ``axis``."""

    radius: float
    height: float
    axis: str = "Z"
    func: Callable[..., Any] | None = field(default=spawn_mesh_capsule, repr=False)


@dataclass(kw_only=True)
class MeshCylinderCfg(MeshCfg):
    """Triangle-mesh cylinder of ``radius`` and ``height`` along ``axis``."""

    radius: float
    height: float
    axis: str = "Z"
    func: Callable[..., Any] | None = field(default=spawn_mesh_cylinder, repr=False)


@dataclass(kw_only=True)
class MeshConeCfg(MeshCfg):
    """Triangle-mesh cone of ``radius`` and ``height`` along ``axis``."""

    radius: float
    height: float
    axis: str = "Z"
    func: Callable[..., Any] | None = field(default=spawn_mesh_cone, repr=False)
