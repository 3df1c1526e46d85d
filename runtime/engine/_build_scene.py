"""Scene step of the USD -> MuJoCo builder: gravity, time step and solver options."""

from __future__ import annotations

import math

import mujoco
import numpy as np
from pxr import UsdGeom

from runtime.engine._build_base import BuildContext
from runtime.engine._build_math import AXIS_INDEX, vec
from runtime.errors import SchemaError

_DEFAULT_DT = 1.0 / 60.0

#: Solver options of the PhysicsScene prim: (attribute, ``MjOption`` field).
_SOLVER_OPTIONS = (
    ("mjc:option:iterations", "iterations"),
    ("mjc:option:ls_iterations", "ls_iterations"),
    ("mjc:option:impratio", "impratio"),
    ("mjc:option:tolerance", "tolerance"),
)


class SceneStep(BuildContext):
    """Reads the ``PhysicsScene`` into the spec's options."""

    def scene(self, parsed: dict) -> tuple[np.ndarray, float]:
        scenes = parsed.get("Scene", [])
        up = str(UsdGeom.GetStageUpAxis(self.stage))
        gravity = np.zeros(3)
        gravity[AXIS_INDEX.get(up, 2)] = -9.81 / self.mpu  # no PhysicsScene: -up, 9.81 m/s^2
        scene_prim = None
        if scenes:
            path, desc = scenes[0]
            scene_prim = self.stage.GetPrimAtPath(path)
            direction = vec(desc.gravityDirection)
            magnitude = float(desc.gravityMagnitude)
            if not (np.all(np.isfinite(direction)) and math.isfinite(magnitude)):
                raise SchemaError(path, "physics:gravityMagnitude", "non-finite gravity", "finite")
            gravity = direction * magnitude
            if len(scenes) > 1:
                self.warn(path, f"{len(scenes)} PhysicsScenes; using the first one")
        else:
            self.warn("/", "no PhysicsScene; default gravity 9.81 m/s^2 along -up, dt 1/60 s")
        dt = _DEFAULT_DT
        if self.user_dt is not None:
            dt = float(self.user_dt)
            if not (math.isfinite(dt) and dt > 0.0):
                raise SchemaError("", "dt", f"invalid time step {self.user_dt}", "> 0")
        elif scene_prim is not None:
            ts = self.attr(scene_prim, "mjc:option:timestep")
            if ts is None:
                for name in ("physxScene:timeStepsPerSecond", "newton:timeStepsPerSecond"):
                    rate = self.attr(scene_prim, name)
                    if rate is not None:
                        if not (math.isfinite(float(rate)) and float(rate) > 0):
                            raise SchemaError(
                                str(scene_prim.GetPath()), name, f"invalid rate {rate}", "> 0"
                            )
                        ts = 1.0 / float(rate)
                        break
            if ts is not None:
                dt = float(ts)
        opt = self.spec.option
        opt.timestep = dt
        opt.gravity = gravity
        integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
        if scene_prim is not None:
            name = self.attr(scene_prim, "mjc:option:integrator")
            table = {
                "euler": mujoco.mjtIntegrator.mjINT_EULER,
                "rk4": mujoco.mjtIntegrator.mjINT_RK4,
                "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
                "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
            }
            if name is not None:
                if str(name).lower() not in table:
                    self.warn(
                        str(scene_prim.GetPath()),
                        f"mjc:option:integrator {name!r} unknown; using implicitfast",
                    )
                else:
                    integrator = table[str(name).lower()]
            self.set_authored(scene_prim, opt, _SOLVER_OPTIONS)
            cone = self.attr(scene_prim, "mjc:option:cone")
            if cone is not None:
                opt.cone = (
                    mujoco.mjtCone.mjCONE_ELLIPTIC
                    if str(cone) == "elliptic"
                    else mujoco.mjtCone.mjCONE_PYRAMIDAL
                )
        opt.integrator = integrator
        return gravity, dt
