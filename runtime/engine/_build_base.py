"""Shared state and USD access of the USD -> MuJoCo builder.

:class:`BuildContext` holds everything the build steps share (stage, units, the ``MjSpec``
under construction, the body records, DOF bindings, warnings). The build steps are mixins
(``_build_*.py``) combined into ``runtime.engine.builder._Builder``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

import mujoco
import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from runtime.engine._build_math import gf_quat, qnormalize, vec
from runtime.engine._build_types import BodyRecord, DofBinding, JointRecord
from runtime.errors import SchemaError

LOG = logging.getLogger("runtime.engine")

#: Contact / constraint solver parameters of geoms and equalities: (attribute, spec field).
SOLVER_PARAMS = (("mjc:solref", "solref"), ("mjc:solimp", "solimp"))


class BuildContext:
    """State shared by the build steps, plus warnings, USD reads and model compilation.

    Args:
        stage: the stage whose physics is built.
        dt: user time step override [s], or None.
    """

    def __init__(self, stage: Usd.Stage, dt: float | None) -> None:
        self.stage = stage
        self.user_dt = dt
        self.warnings: list[str] = []
        self.mpu = float(UsdGeom.GetStageMetersPerUnit(stage))
        self.kpu = float(UsdPhysics.GetStageKilogramsPerUnit(stage))
        self.xcache = UsdGeom.XformCache(Usd.TimeCode.Default())
        self.spec = mujoco.MjSpec()
        self.spec.compiler.degree = False
        self.spec.compiler.autolimits = True
        self.bodies: dict[str, BodyRecord] = {}
        self.order: list[str] = []  # simulated body paths in MuJoCo tree order
        self.dofs: list[DofBinding] = []
        # (binding, MuJoCo joint name); addresses are filled in after compilation
        self.pending_dofs: list[tuple[DofBinding, str]] = []
        # (binding, MuJoCo actuator name, initial ctrl or None)
        self.pending_actuators: list[tuple[DofBinding, str, float | None]] = []
        self.static_entries: list[tuple[str, str, Any]] = []  # (shape path, kind, desc)
        self.geom_owner: list[tuple[str, str]] = []  # (geom name, body_paths key)
        self.materials: dict[str, Any] = {}  # material path -> parser descriptor
        self.groups: dict[str, int] = {}  # collision group path -> contype bit
        self.affinity: dict[int, int] = {}  # contype bit -> conaffinity mask
        self.shape_groups: dict[str, list[str]] = {}  # shape path -> collision groups
        self.loop_joints: list[JointRecord] = []
        self.tendon_paths: set[str] = set()
        # reference-pose overlap policy (_build_collision): None = scene setting / default on
        self.exclude_overlaps: bool | None = None
        self.articulation_of: dict[str, str] = {}  # body path -> articulation root path
        self.reference_overlaps: list[tuple[str, str, float]] = []  # excluded (a, b, depth)
        self._body_names: dict[str, int] | None = None

    def warn(self, path: str, message: str) -> None:
        """Record and log a warning about the prim at ``path``."""
        text = f"{path}: {message}"
        self.warnings.append(text)
        LOG.warning(text)

    def world_pose(self, prim: Usd.Prim) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """World position, orientation (wxyz) and scale of ``prim``; non-finite raises."""
        m = self.xcache.GetLocalToWorldTransform(prim)
        path = str(prim.GetPath())
        values = np.array(m, dtype=np.float64)
        if not np.all(np.isfinite(values)):
            raise SchemaError(path, "xformOp", "non-finite (NaN/inf) world transform", "finite")
        xf = Gf.Transform(m)
        pos = vec(xf.GetTranslation())
        quat = qnormalize(gf_quat(xf.GetRotation().GetQuat()))
        scale = vec(xf.GetScale())
        return pos, quat, scale

    def attr(self, prim: Usd.Prim, name: str):
        """The authored value of attribute ``name`` of ``prim``, None when not authored."""
        a = prim.GetAttribute(name)
        if a and a.HasAuthoredValue():
            return a.Get()
        return None

    def set_authored(
        self,
        prim: Usd.Prim,
        element: Any,
        table: Iterable[tuple[str, str]],
        convert: Callable[[Any], Any] | None = None,
    ) -> None:
        """For each ``(attribute, field)`` authored on ``prim``, set ``element.field``."""
        for name, key in table:
            value = self.attr(prim, name)
            if value is not None:
                setattr(element, key, value if convert is None else convert(value))

    def scalar_dofs_by_joint(self) -> dict[str, tuple[DofBinding, str]]:
        """``{joint path: (binding, MuJoCo joint name)}`` of the hinge / slide DOFs.

        Multi-DOF (D6) joints map to their last DOF; ball joints are left out.
        """
        return {b.joint_path: (b, n) for b, n in self.pending_dofs if b.ball_axis < 0}

    def parse(self) -> dict:
        """Run usd-core's UsdPhysics parser: ``{object type: [(path, descriptor)]}``."""
        loader = getattr(UsdPhysics, "UsdPhysicsLoadStageFromPrimRange", None)
        if loader is None:  # older usd-core
            loader = UsdPhysics.LoadUsdPhysicsFromRange
        result = loader(self.stage, [Sdf.Path("/")])
        out: dict[str, list] = {}
        for obj_type, (paths, descs) in result.items():
            out[str(obj_type.name) if hasattr(obj_type, "name") else str(obj_type)] = list(
                zip([str(p) for p in paths], descs, strict=False)
            )
        return out

    def compile(self) -> mujoco.MjModel:
        """Compile the spec; MuJoCo's errors become a SchemaError naming the prim."""
        try:
            return self.spec.compile()
        except ValueError as exc:
            message = str(exc)
            path = ""
            for token in message.replace("'", " ").split():
                if token.startswith("/") and self.stage.GetPrimAtPath(token.split(":")[0]):
                    path = token.split(":")[0]
                    break
            raise SchemaError(path, "", f"MuJoCo rejected the model: {message}") from exc
