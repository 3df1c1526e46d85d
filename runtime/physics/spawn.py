"""Apply a set of property cfgs to an asset's prim tree (from-file spawner semantics).

Order (each step only when its slot is not None, all walked from the asset root; by default
the walk also reaches targets nested below other targets, see ``nested``):
``rigid_props`` -> ``collision_props`` -> ``mass_props`` -> ``articulation_props`` ->
``joint_drive_props`` (preceded by the MuJoCo gravity-compensation auto-enable) ->
``physics_material`` (spawned and bound with the ``physics`` purpose to every collider).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from pxr import Usd

from runtime.physics import writers
from runtime.physics._meta import PhysicsCfgError, to_camel_case
from runtime.physics.cfg import (
    ArticulationRootBaseCfg,
    CollisionBaseCfg,
    JointDriveBaseCfg,
    MassPropertiesCfg,
    MeshCollisionBaseCfg,
    RigidBodyBaseCfg,
    RigidBodyMaterialBaseCfg,
)
from runtime.physics.newton import MujocoJointDrivePropertiesCfg, MujocoRigidBodyPropertiesCfg

__all__ = [
    "PhysicsApplyReport",
    "apply_asset_physics",
    "gravcomp_auto_enable_needed",
    "spawn_shape",
]

_LOG = logging.getLogger(__name__)

#: Slot name -> (accepted base class, required API named in errors).
SLOTS: dict[str, tuple[type, str]] = {
    "rigid_props": (RigidBodyBaseCfg, "PhysicsRigidBodyAPI"),
    "collision_props": (CollisionBaseCfg, "PhysicsCollisionAPI"),
    "mass_props": (MassPropertiesCfg, "PhysicsMassAPI"),
    "articulation_props": (ArticulationRootBaseCfg, "PhysicsArticulationRootAPI"),
    "joint_drive_props": (JointDriveBaseCfg, "RevoluteJoint/PrismaticJoint prims"),
    "physics_material": (RigidBodyMaterialBaseCfg, "PhysicsCollisionAPI"),
}


@dataclass
class PhysicsApplyReport:
    """What :func:`apply_asset_physics` authored.

    Attributes:
        modified: slot name -> number of prims modified.
        gravcomp_auto_enabled: True when ``mjc:gravcomp=1.0`` was added because the joint
            cfg asks for ``actuatorgravcomp`` and no body-level gravcomp was given.
        material_path: path of the spawned physics material ("" when none); the number of
            colliders bound is ``modified["physics_material"]``.
    """

    modified: dict[str, int] = field(default_factory=dict)
    gravcomp_auto_enabled: bool = False
    material_path: str = ""


def gravcomp_auto_enable_needed(
    rigid_props: RigidBodyBaseCfg | None, joint_drive_props: JointDriveBaseCfg | None
) -> bool:
    """Whether joint-level ``actuatorgravcomp`` needs an automatic body-level ``gravcomp=1.0``.

    Args:
        rigid_props: the rigid-body slot.
        joint_drive_props: the joint-drive slot.

    Returns:
        True when the joint cfg is a MuJoCo cfg with truthy ``actuatorgravcomp`` and the rigid
        cfg is not a MuJoCo cfg with an explicit ``gravcomp`` (``0.0`` counts as explicit).
    """
    body_unset = (
        not isinstance(rigid_props, MujocoRigidBodyPropertiesCfg) or rigid_props.gravcomp is None
    )
    return (
        isinstance(joint_drive_props, MujocoJointDrivePropertiesCfg)
        and bool(joint_drive_props.actuatorgravcomp)
        and body_unset
    )


def _check_slot(name: str, cfg: object) -> None:
    base, _ = SLOTS[name]
    if not isinstance(cfg, base) or (
        name == "collision_props" and isinstance(cfg, MeshCollisionBaseCfg)
    ):
        raise TypeError(f"{name} expects a {base.__name__} (or subclass), got {type(cfg).__name__}")


def _require_targets(name: str, cfg: object, count: int, root_path: str, strict: bool) -> None:
    if count or not strict:
        return
    fields = [
        f
        for f, v in vars(cfg).items()
        if v is not None and f not in ("func", "ensure_drives_exist")
    ]
    raise PhysicsCfgError(
        root_path,
        ", ".join(to_camel_case(f) for f in fields),
        f"{name} ({type(cfg).__name__}, fields {fields}): no prim under the root carries "
        f"{SLOTS[name][1]}, so nothing would be authored",
        field=fields[0] if fields else "",
    )


def apply_asset_physics(
    stage: Usd.Stage,
    root_path: str,
    *,
    rigid_props: RigidBodyBaseCfg | None = None,
    collision_props: CollisionBaseCfg | None = None,
    mass_props: MassPropertiesCfg | None = None,
    articulation_props: ArticulationRootBaseCfg | None = None,
    joint_drive_props: JointDriveBaseCfg | None = None,
    physics_material: RigidBodyMaterialBaseCfg | None = None,
    physics_material_path: str | None = None,
    strict: bool = False,
    nested: bool = True,
) -> PhysicsApplyReport:
    """Author property cfgs on an existing asset subtree, like Isaac Lab's from-file spawner.

    Writes go to the stage's current edit target.

    Args:
        stage: the stage holding the asset.
        root_path: the asset root prim path.
        rigid_props: rigid-body cfg, walked from the root (outermost rigid bodies).
        collision_props: collision cfg (outermost colliders).
        mass_props: mass cfg (outermost ``MassAPI`` prims).
        articulation_props: articulation-root cfg.
        joint_drive_props: joint-drive cfg (every revolute/prismatic joint).
        physics_material: material cfg, spawned at ``physics_material_path`` (default
            ``<root>/PhysicsMaterial``) and bound with the ``physics`` purpose to every
            collider under the root (usd-core's physics parser ignores inherited bindings).
        physics_material_path: where to spawn the material.
        strict: raise :class:`~runtime.physics._meta.PhysicsCfgError` when a slot finds no
            target prim (otherwise only a warning is logged).
        nested: author every prim carrying the slot's API under the root, including ones
            nested below another target (True, default), or only the outermost ones, exactly
            like Isaac Lab's tree walker (False). URDF/MJCF converters nest each link under its
            parent link, and UsdPhysics simulates nested rigid bodies as separate bodies, so
            the outermost-only walk would leave every link but the base unauthored.

    Returns:
        A :class:`PhysicsApplyReport`.

    Raises:
        PhysicsCfgError: missing root prim, a value that cannot be written, or (``strict``) a
            slot without targets.
        TypeError: a slot holds a cfg of the wrong family.
    """
    report = PhysicsApplyReport()
    slots = {
        "rigid_props": rigid_props,
        "collision_props": collision_props,
        "mass_props": mass_props,
        "articulation_props": articulation_props,
        "joint_drive_props": joint_drive_props,
        "physics_material": physics_material,
    }
    for name, cfg in slots.items():
        if cfg is not None:
            _check_slot(name, cfg)
    root = stage.GetPrimAtPath(str(root_path))
    if not root or not root.IsValid():
        raise PhysicsCfgError(str(root_path), "", "asset root prim does not exist")

    walkers = (
        ("rigid_props", writers.modify_rigid_body_properties),
        ("collision_props", writers.modify_collision_properties),
        ("mass_props", writers.modify_mass_properties),
        ("articulation_props", writers.modify_articulation_root_properties),
    )
    for name, walker in walkers:
        cfg = slots[name]
        if cfg is None:
            continue
        count = walker(root_path, cfg, stage, nested=nested)
        report.modified[name] = count
        _require_targets(name, cfg, count, root_path, strict)
    if joint_drive_props is not None:
        if gravcomp_auto_enable_needed(rigid_props, joint_drive_props):
            _LOG.info(
                "joint-level actuatorgravcomp needs body-level gravcomp; auto-setting "
                "gravcomp=1.0 on the rigid bodies under %s",
                root_path,
            )
            report.modified["gravcomp_auto"] = writers.modify_rigid_body_properties(
                root_path, MujocoRigidBodyPropertiesCfg(gravcomp=1.0), stage, nested=nested
            )
            report.gravcomp_auto_enabled = True
        count = writers.modify_joint_drive_properties(
            root_path, joint_drive_props, stage, nested=nested
        )
        report.modified["joint_drive_props"] = count
        _require_targets("joint_drive_props", joint_drive_props, count, root_path, strict)
    if physics_material is not None:
        path = physics_material_path or f"{root.GetPath()}/PhysicsMaterial"
        material = physics_material.func(path, physics_material, stage)
        count = writers.bind_physics_material_to_colliders(root, str(material.GetPath()))
        report.material_path = str(material.GetPath())
        report.modified["physics_material"] = count
        _require_targets("physics_material", physics_material, count, root_path, strict)
    return report


#: Shape name -> (UsdGeom class name, mesh approximation used by the mesh variant).
_SHAPES = {
    "cuboid": ("Cube", "boundingCube"),
    "sphere": ("Sphere", "boundingSphere"),
    "capsule": ("Capsule", "convexHull"),
    "cylinder": ("Cylinder", "convexHull"),
    "cone": ("Cone", "convexHull"),
}


def _shape_mesh(
    shape: str, size: tuple[float, float, float], radius: float, height: float, axis: str
):
    import numpy as np
    import trimesh

    if shape == "cuboid":
        mesh = trimesh.creation.box(extents=size)
    elif shape == "sphere":
        mesh = trimesh.creation.icosphere(subdivisions=3, radius=radius)
    elif shape == "capsule":
        mesh = trimesh.creation.capsule(height=height, radius=radius)
    elif shape == "cylinder":
        mesh = trimesh.creation.cylinder(radius=radius, height=height)
    else:
        mesh = trimesh.creation.cone(radius=radius, height=height)
        mesh.apply_translation((0.0, 0.0, -height / 2.0))
    if shape != "cuboid" and shape != "sphere" and axis != "Z":
        rot = {"X": ((0, 0, 1), (0, 1, 0), (-1, 0, 0)), "Y": ((1, 0, 0), (0, 0, 1), (0, -1, 0))}
        matrix = np.eye(4)
        matrix[:3, :3] = np.array(rot[axis], dtype=float).T
        mesh.apply_transform(matrix)
    return mesh


def spawn_shape(
    stage: Usd.Stage,
    prim_path: str,
    shape: str,
    *,
    size: tuple[float, float, float] = (1.0, 1.0, 1.0),
    radius: float = 0.5,
    height: float = 1.0,
    axis: str = "Z",
    translation: tuple[float, float, float] = (0.0, 0.0, 0.0),
    as_mesh: bool = False,
    collision_props: CollisionBaseCfg | None = None,
    mass_props: MassPropertiesCfg | None = None,
    rigid_props: RigidBodyBaseCfg | None = None,
    physics_material: RigidBodyMaterialBaseCfg | None = None,
    physics_material_path: str | None = None,
) -> Usd.Prim:
    """Spawn a primitive shape with physics cfgs (Isaac Lab shape / mesh spawner semantics).

    Creates an ``Xform`` at ``prim_path`` with the geometry at ``<prim_path>/geometry/mesh``
    (a ``UsdGeom`` primitive, or a triangle ``Mesh`` with ``as_mesh``). Then:
    ``collision_props`` -> ``define_collision_properties(<mesh>)`` (mesh variant: first
    ``MeshCollisionAPI`` with ``boundingCube`` for cuboids, ``boundingSphere`` for spheres,
    ``convexHull`` otherwise); ``physics_material`` spawned (default
    ``<prim_path>/geometry/material``) and bound to the mesh; ``mass_props`` ->
    ``define_mass_properties(<root>)`` (mesh variant: only with ``rigid_props``);
    ``rigid_props`` -> ``define_rigid_body_properties(<root>)``.

    Args:
        stage: the stage.
        prim_path: root prim path; must not exist yet.
        shape: ``"cuboid"``, ``"sphere"``, ``"capsule"``, ``"cylinder"`` or ``"cone"``.
        size: cuboid extents [stage units].
        radius: sphere / capsule / cylinder / cone radius [stage units].
        height: capsule / cylinder / cone height along ``axis`` [stage units].
        axis: ``"X"``, ``"Y"`` or ``"Z"``.
        translation: root position in its parent frame [stage units].
        as_mesh: author a triangle mesh instead of a UsdGeom primitive.
        collision_props: collision cfg for the geometry prim.
        mass_props: mass cfg for the root.
        rigid_props: rigid-body cfg for the root.
        physics_material: material cfg bound to the geometry prim.
        physics_material_path: material prim path.

    Returns:
        The root prim.

    Raises:
        PhysicsCfgError: ``prim_path`` already exists, or a bad cfg value.
        ValueError: unknown shape or axis.
    """
    from pxr import Gf, UsdGeom, UsdPhysics, Vt

    if shape not in _SHAPES:
        raise ValueError(f"unknown shape {shape!r} (allowed: {', '.join(_SHAPES)})")
    if axis not in ("X", "Y", "Z"):
        raise ValueError(f"unknown axis {axis!r} (allowed: X, Y, Z)")
    if stage.GetPrimAtPath(str(prim_path)):
        raise PhysicsCfgError(str(prim_path), "", "spawn_shape: a prim already exists here")
    root = UsdGeom.Xform.Define(stage, str(prim_path))
    root.AddTranslateOp().Set(Gf.Vec3d(*translation))
    geom_path = f"{prim_path}/geometry/mesh"
    type_name, approximation = _SHAPES[shape]
    if as_mesh:
        tm = _shape_mesh(shape, tuple(size), radius, height, axis)
        mesh = UsdGeom.Mesh.Define(stage, geom_path)
        mesh.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(tm.vertices.astype("float32")))
        mesh.CreateFaceVertexCountsAttr([3] * len(tm.faces))
        mesh.CreateFaceVertexIndicesAttr(tm.faces.reshape(-1).tolist())
        mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
    else:
        geom = getattr(UsdGeom, type_name).Define(stage, geom_path)
        if shape == "cuboid":
            geom.CreateSizeAttr(1.0)
            geom.AddScaleOp().Set(Gf.Vec3f(*size))
        else:
            geom.CreateRadiusAttr(radius)
            if shape != "sphere":
                geom.CreateHeightAttr(height)
                geom.CreateAxisAttr(axis)
    geom_prim = stage.GetPrimAtPath(geom_path)
    if collision_props is not None:
        _check_slot("collision_props", collision_props)
        if as_mesh:
            UsdPhysics.MeshCollisionAPI.Apply(geom_prim).CreateApproximationAttr(approximation)
        writers.define_collision_properties(geom_path, collision_props, stage)
    if physics_material is not None:
        _check_slot("physics_material", physics_material)
        path = physics_material_path or f"{prim_path}/geometry/material"
        material = physics_material.func(path, physics_material, stage)
        writers.bind_physics_material(geom_prim, str(material.GetPath()))
    if mass_props is not None and (rigid_props is not None or not as_mesh):
        _check_slot("mass_props", mass_props)
        writers.define_mass_properties(str(prim_path), mass_props, stage)
    if rigid_props is not None:
        _check_slot("rigid_props", rigid_props)
        writers.define_rigid_body_properties(str(prim_path), rigid_props, stage)
    return root.GetPrim()
