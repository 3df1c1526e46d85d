"""Shape step of the USD -> MuJoCo builder: collision shapes -> geoms and meshes."""

from __future__ import annotations

import mujoco
import numpy as np
from pxr import Usd, UsdGeom, UsdPhysics

from runtime.engine import physics_attrs
from runtime.engine._build_base import SOLVER_PARAMS, BuildContext
from runtime.engine._build_math import (
    axis_letter,
    axis_quat,
    finite_pose,
    gf_quat,
    qmul,
    qnormalize,
    qrot,
    vec,
)
from runtime.errors import SchemaError, SimrtError

#: Per-geom contact parameters: (attribute, ``MjsGeom`` field).
_GEOM_PARAMS = (
    ("mjc:margin", "margin"),
    ("mjc:gap", "gap"),
    ("mjc:condim", "condim"),
    ("mjc:priority", "priority"),
    ("mjc:solmix", "solmix"),
    ("mjc:group", "group"),
)


class ShapeStep(BuildContext):
    """Turns collision shapes into MuJoCo geoms (friction, density, contact parameters)."""

    def collect_shapes(self, parsed: dict) -> None:
        self.materials = dict(parsed.get("RigidBodyMaterial", []))
        kinds = (
            "CubeShape",
            "SphereShape",
            "CapsuleShape",
            "CylinderShape",
            "PlaneShape",
            "MeshShape",
            "ConeShape",
            "Capsule1Shape",
            "Cylinder1Shape",
            "SpherePointsShape",
            "CustomShape",
        )
        for kind in kinds:
            for path, desc in parsed.get(kind, []):
                if not desc.collisionEnabled:
                    continue
                owner = str(desc.rigidBody) if desc.rigidBody else ""
                if owner and owner in self.bodies:
                    self.bodies[owner].shapes.append((path, kind, desc))
                else:
                    self.static_entries.append((path, kind, desc))

    def add_shape(self, mj_body, owner_key: str, path: str, kind: str, desc, static: bool) -> int:
        """Add one collision shape as MuJoCo geom(s); returns how many geoms were added."""
        prim = self.stage.GetPrimAtPath(path)
        if static:
            pos, quat, scale = self.world_pose(prim)
        else:
            pos = vec(desc.localPos)
            quat = qnormalize(gf_quat(desc.localRot))
            finite_pose(path, "xformOp", pos, quat)
        geom_kw: dict = {"name": path}
        if kind == "CubeShape":
            half = vec(desc.halfExtents)
            geom_kw.update(type=mujoco.mjtGeom.mjGEOM_BOX, size=np.abs(half))
        elif kind == "SphereShape":
            geom_kw.update(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[abs(desc.radius), 0, 0])
        elif kind in ("CapsuleShape", "CylinderShape", "Capsule1Shape", "Cylinder1Shape"):
            radius = (
                float(desc.radius)
                if hasattr(desc, "radius")
                else max(float(desc.topRadius), float(desc.bottomRadius))
            )
            if kind in ("Capsule1Shape", "Cylinder1Shape"):
                self.warn(path, "tapered shape approximated with the larger radius")
            quat = qnormalize(qmul(quat, axis_quat(axis_letter(desc.axis))))
            gtype = (
                mujoco.mjtGeom.mjGEOM_CAPSULE
                if "Capsule" in kind
                else mujoco.mjtGeom.mjGEOM_CYLINDER
            )
            geom_kw.update(type=gtype, size=[abs(radius), abs(float(desc.halfHeight)), 0])
        elif kind == "ConeShape":
            self.warn(path, "cone approximated by a cylinder of the same radius and height")
            quat = qnormalize(qmul(quat, axis_quat(axis_letter(desc.axis))))
            geom_kw.update(
                type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                size=[abs(float(desc.radius)), abs(float(desc.halfHeight)), 0],
            )
        elif kind == "PlaneShape":
            quat = qnormalize(qmul(quat, axis_quat(axis_letter(desc.axis))))
            if static:
                geom_kw.update(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1])
            else:
                self.warn(path, "plane on a moving body approximated by a 100 x 100 thin box")
                half = 50.0 / self.mpu
                pos = pos - qrot(quat, np.array([0.0, 0.0, 0.005 / self.mpu]))
                geom_kw.update(type=mujoco.mjtGeom.mjGEOM_BOX, size=[half, half, 0.005 / self.mpu])
        elif kind == "MeshShape":
            if self.mesh_geom(path, prim, desc, geom_kw) is None:
                return 0
        elif kind == "SpherePointsShape":
            count = 0
            for i, sp in enumerate(desc.spherePoints):
                g = mj_body.add_geom(
                    name=f"{path}:{i}",
                    type=mujoco.mjtGeom.mjGEOM_SPHERE,
                    size=[abs(float(sp.radius)), 0, 0],
                    pos=pos + qrot(quat, vec(sp.center)),
                    quat=quat,
                )
                self.style_geom(g, prim, desc, static)
                self.geom_owner.append((f"{path}:{i}", owner_key))
                count += 1
            return count
        else:
            self.warn(path, f"unsupported collision shape {kind}; ignored")
            return 0
        geom_kw.setdefault("pos", pos)
        if "quat" not in geom_kw:
            geom_kw["quat"] = quat
        else:
            geom_kw["pos"] = pos + qrot(quat, geom_kw["pos"])
            geom_kw["quat"] = qnormalize(qmul(quat, geom_kw["quat"]))
        g = mj_body.add_geom(**geom_kw)
        self.style_geom(g, prim, desc, static)
        self.geom_owner.append((path, owner_key))
        return 1

    def mesh_geom(self, path: str, prim: Usd.Prim, desc, geom_kw: dict):
        import trimesh

        mesh = UsdGeom.Mesh(prim)
        points = mesh.GetPointsAttr().Get()
        counts = mesh.GetFaceVertexCountsAttr().Get()
        indices = mesh.GetFaceVertexIndicesAttr().Get()
        if points is None or len(points) == 0:
            self.warn(path, "collision mesh has no points; shape ignored")
            return None
        pts = np.asarray(points, dtype=np.float64).reshape(-1, 3) * vec(desc.meshScale)
        if not np.all(np.isfinite(pts)):
            raise SchemaError(path, "points", "non-finite mesh points", "finite")
        faces = triangulate(path, counts, indices, len(pts))
        approx = str(desc.approximation) if desc.approximation else "none"
        if approx not in ("convexHull", "boundingCube", "boundingSphere"):
            self.warn(
                path,
                f"physics:approximation {approx!r}: MuJoCo collides with the convex hull of "
                "the mesh",
            )
        tm = trimesh.Trimesh(vertices=pts, faces=faces if len(faces) else None, process=True)
        vertices = np.asarray(tm.vertices, dtype=np.float64)
        lo, hi = vertices.min(axis=0), vertices.max(axis=0)
        volume = 0.0
        if len(vertices) >= 4:
            _require_scipy(path)
            try:
                volume = float(trimesh.convex.convex_hull(vertices).volume)
            except ImportError as exc:  # never mistake a missing dependency for a flat mesh
                raise SimrtError(
                    f"{path}: the convex hull of the collision mesh needs {exc.name or 'scipy'} "
                    f"({exc}); install simrt's core dependencies (pip install scipy)"
                ) from exc
            except Exception:  # qhull failure: degenerate point set
                volume = 0.0
        extent = float(np.max(hi - lo)) if len(vertices) else 0.0
        bounding = approx in ("boundingSphere", "boundingCube")
        degenerate = volume <= 1e-12 * max(extent, 1e-12) ** 3
        if bounding or degenerate:
            if not bounding:
                self.warn(path, "flat or degenerate collision mesh replaced by its bounding box")
            half = np.maximum((hi - lo) / 2.0, 1e-4 / self.mpu)
            center = (hi + lo) / 2.0
            if approx == "boundingSphere":
                geom_kw.update(
                    type=mujoco.mjtGeom.mjGEOM_SPHERE,
                    size=[float(np.linalg.norm(half)), 0, 0],
                    pos=center,
                    quat=np.array([1.0, 0, 0, 0]),
                )
            else:
                geom_kw.update(
                    type=mujoco.mjtGeom.mjGEOM_BOX,
                    size=half,
                    pos=center,
                    quat=np.array([1.0, 0, 0, 0]),
                )
            return "box"
        name = f"{path}:mesh"
        self.spec.add_mesh(
            name=name,
            uservert=vertices.reshape(-1).tolist(),
            userface=np.asarray(tm.faces, dtype=np.int64).reshape(-1).tolist(),
        )
        geom_kw.update(type=mujoco.mjtGeom.mjGEOM_MESH, meshname=name)
        return "mesh"

    def style_geom(self, g, prim: Usd.Prim, desc, static: bool) -> None:
        # density / mass for geometry-derived inertia
        density = None
        if prim.HasAPI(UsdPhysics.MassAPI):
            mapi = UsdPhysics.MassAPI(prim)
            d = mapi.GetDensityAttr().Get()
            if d is not None and float(d) > 0.0:
                density = float(d)
            m = mapi.GetMassAttr().Get()
            if m is not None and float(m) > 0.0:
                g.mass = float(m)
        friction = [1.0, 0.005, 0.0001]
        mats = [str(p) for p in desc.materials if str(p)]
        if mats:
            mdesc = self.materials.get(mats[0])
            if mdesc is not None:
                friction[0] = float(mdesc.dynamicFriction)
                if density is None and float(mdesc.density) > 0.0:
                    density = float(mdesc.density)
                mprim = self.stage.GetPrimAtPath(mats[0])
                tf = self.attr(mprim, "newton:torsionalFriction")
                rf = self.attr(mprim, "newton:rollingFriction")
                if tf is not None:
                    friction[1] = float(tf)
                if rf is not None:
                    friction[2] = float(rf)
                if float(mdesc.restitution) > 0.0:
                    self.warn(mats[0], "restitution is not modelled by MuJoCo; ignored")
        else:
            friction[0] = 0.5  # PhysX default material friction
        g.friction = friction
        if density is None:
            density = 1000.0 * self.mpu**3 / self.kpu
        g.density = density
        self.set_authored(prim, g, _GEOM_PARAMS)
        physics_attrs.apply_geom_attrs(g, prim)  # newton/physx margins (mjc:* wins)
        self.set_authored(prim, g, SOLVER_PARAMS, list)
        groups = self.shape_groups.get(str(prim.GetPath()), [])
        if groups:
            if len(groups) > 1:
                self.warn(
                    str(prim.GetPath()),
                    "shape is in several collision groups; only the first is used for filtering",
                )
            bit = self.groups.get(groups[0], -1)
            if bit >= 0:
                g.contype = 1 << bit
                g.conaffinity = self.affinity[bit]
                return
        g.contype = 1
        g.conaffinity = self.affinity[0]

    # -- collision groups --------------------------------------------------------------


def _require_scipy(path: str) -> None:
    """Fail loudly when trimesh's convex hull cannot run (it needs ``scipy.spatial``).

    Without this check trimesh's ``ImportError`` would look like a qhull failure and the mesh
    would silently become its bounding box (different physics).

    Raises:
        SimrtError: naming the mesh prim and the missing package.
    """
    try:
        import scipy.spatial  # noqa: F401
    except ImportError as exc:
        raise SimrtError(
            f"{path}: the convex hull of the collision mesh needs scipy.spatial, which cannot "
            f"be imported ({exc}); scipy is a core dependency of simrt (pip install scipy)"
        ) from exc


def triangulate(path: str, counts, indices, point_count: int) -> np.ndarray:
    if counts is None or indices is None or len(counts) == 0:
        return np.zeros((0, 3), dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    if counts.sum() != len(indices) or np.any(counts < 3):
        raise SchemaError(
            path, "faceVertexCounts", "face counts do not match faceVertexIndices", "consistent"
        )
    if len(indices) and (indices.min() < 0 or indices.max() >= point_count):
        raise SchemaError(path, "faceVertexIndices", "index out of range of points", "valid")
    tris = []
    start = 0
    for c in counts:
        for k in range(1, c - 1):
            tris.append((indices[start], indices[start + k], indices[start + k + 1]))
        start += c
    return np.asarray(tris, dtype=np.int64).reshape(-1, 3)
