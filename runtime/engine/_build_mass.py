"""Mass step of the USD -> MuJoCo builder: ``PhysicsMassAPI`` and its fallbacks."""

from __future__ import annotations

import math

import mujoco
import numpy as np
from pxr import UsdPhysics

from runtime.engine._build_base import BuildContext
from runtime.engine._build_math import gf_quat, qnormalize, vec
from runtime.engine._build_types import BodyRecord
from runtime.errors import SchemaError

_FALLBACK_MASS = 1.0  # kg (stage mass units scaled below)
_FALLBACK_RADIUS = 0.1  # m


class MassStep(BuildContext):
    """Sets body mass properties, deriving them from the shapes when not authored."""

    def apply_mass(self, body: BodyRecord) -> None:
        prim = body.prim
        path = body.path
        sb = body.spec_body
        mass_api = UsdPhysics.MassAPI(prim) if prim.HasAPI(UsdPhysics.MassAPI) else None
        mass = 0.0
        diag = np.zeros(3)
        com = None
        axes = None
        if mass_api is not None:
            m = mass_api.GetMassAttr().Get()
            mass = 0.0 if m is None else float(m)
            d = mass_api.GetDiagonalInertiaAttr().Get()
            diag = np.zeros(3) if d is None else vec(d)
            c = mass_api.GetCenterOfMassAttr().Get()
            if c is not None and np.all(np.isfinite(vec(c))):
                com = vec(c)
            elif c is not None and np.any(np.isnan(vec(c))):
                raise SchemaError(path, "physics:centerOfMass", "NaN centre of mass", "finite")
            a = mass_api.GetPrincipalAxesAttr().Get()
            if a is not None:
                qa = gf_quat(a)
                if not np.all(np.isfinite(qa)):
                    raise SchemaError(path, "physics:principalAxes", "NaN quaternion", "finite")
                if np.linalg.norm(qa) > 1e-9:
                    axes = qnormalize(qa)
        if not math.isfinite(mass) or mass < 0.0:
            raise SchemaError(path, "physics:mass", f"invalid mass {mass}", "finite, >= 0")
        if not np.all(np.isfinite(diag)) or np.any(diag < 0.0):
            raise SchemaError(
                path,
                "physics:diagonalInertia",
                f"invalid inertia {tuple(diag)}",
                "finite, >= 0 (all zero = derive from shapes)",
            )
        has_inertia = bool(np.any(diag > 0.0))
        if has_inertia and np.any(diag <= 0.0):
            raise SchemaError(
                path,
                "physics:diagonalInertia",
                f"zero inertia component in {tuple(diag)}",
                "all three > 0, or all zero",
            )
        if has_inertia:
            a, b, c = sorted(diag)
            if a + b < c * (1.0 - 1e-5):
                raise SchemaError(
                    path,
                    "physics:diagonalInertia",
                    f"inertia {tuple(diag)} violates the triangle inequality",
                    "I1 + I2 >= I3 for every permutation",
                )
            if a + b < c:  # float32 rounding of a flat body (I3 = I1 + I2): make it exact
                diag = np.where(diag == c, a + b, diag)
        if mass > 0.0 and has_inertia:
            sb.explicitinertial = True
            sb.mass = mass
            sb.inertia = diag
            sb.ipos = com if com is not None else np.zeros(3)
            sb.iquat = axes if axes is not None else np.array([1.0, 0.0, 0.0, 0.0])
            return
        has_geoms = body.geom_count > 0
        if mass > 0.0:
            if has_geoms:
                self.warn(
                    path,
                    "physics:mass authored without physics:diagonalInertia; inertia derived "
                    "from the collision shapes, scaled to the authored mass",
                )
                body.needs_inertia_pass = True
                body.authored_mass = mass
                body.authored_com = com
                sb.explicitinertial = False
                return
            self.fallback_inertia(body, mass, com, "no collision shapes to derive inertia from")
            return
        if has_geoms:
            self.warn(
                path,
                "no physics:mass authored; mass and inertia computed from the collision "
                "shapes' density (default 1000 kg/m^3)",
            )
            sb.explicitinertial = False
            return
        self.fallback_inertia(body, None, com, "no physics:mass and no collision shapes")

    def fallback_inertia(self, body: BodyRecord, mass: float | None, com, why: str) -> None:
        m = mass if mass is not None else _FALLBACK_MASS / self.kpu
        r = _FALLBACK_RADIUS / self.mpu
        inertia = 0.4 * m * r * r
        self.warn(
            body.path,
            f"{why}; using mass {m:g} and the inertia of a solid sphere of radius {r:g} "
            "(stage units)",
        )
        sb = body.spec_body
        sb.explicitinertial = True
        sb.mass = m
        sb.inertia = np.array([inertia, inertia, inertia])
        sb.ipos = com if com is not None else np.zeros(3)
        sb.iquat = np.array([1.0, 0.0, 0.0, 0.0])

    def rescale_derived_inertia(self, model: mujoco.MjModel) -> mujoco.MjModel:
        """Bodies with an authored mass but no inertia: scale the shapes' inertia to that mass.

        Args:
            model: the model compiled with shape-derived mass properties.

        Returns:
            ``model`` when no body needs it, else the recompiled model.
        """
        if not any(b.needs_inertia_pass for b in self.bodies.values()):
            return model
        for b in self.bodies.values():
            if not b.needs_inertia_pass:
                continue
            bid = model.body(b.path).id
            computed = float(model.body_mass[bid])
            ratio = b.authored_mass / computed if computed > 0 else 1.0
            sb = b.spec_body
            sb.explicitinertial = True
            sb.mass = b.authored_mass
            sb.inertia = np.array(model.body_inertia[bid]) * ratio
            sb.ipos = (
                b.authored_com if b.authored_com is not None else np.array(model.body_ipos[bid])
            )
            sb.iquat = np.array(model.body_iquat[bid])
        return self.compile()
