"""Actuator step of the USD -> MuJoCo builder: ``PhysicsDriveAPI`` and ``MjcActuator``."""

from __future__ import annotations

import math

import mujoco
from pxr import Usd

from runtime.engine._build_base import BuildContext
from runtime.engine._build_math import DEG
from runtime.engine._build_types import DofBinding
from runtime.errors import SchemaError

#: Gain / bias parameters of an ``MjcActuator``: (attribute, ``MjsActuator`` field).
_GAIN_BIAS_PARAMS = (("mjc:gainPrm", "gainprm"), ("mjc:biasPrm", "biasprm"))

#: Ranges of an ``MjcActuator``: (min, max, limited attributes, range field, limited field).
_RANGES = (
    ("mjc:ctrlRange:min", "mjc:ctrlRange:max", "mjc:ctrlLimited", "ctrlrange", "ctrllimited"),
    ("mjc:forceRange:min", "mjc:forceRange:max", "mjc:forceLimited", "forcerange", "forcelimited"),
)


class ActuatorStep(BuildContext):
    """Adds position / velocity servos for USD drives and general actuators for MjcActuator."""

    def add_drive(self, jprim, binding: DofBinding, drive, angular: bool, mj_joint: str) -> None:
        if drive is None or not drive.enabled:
            return
        path = binding.joint_path
        kp = float(drive.stiffness)
        kd = float(drive.damping)
        if not (math.isfinite(kp) and math.isfinite(kd)) or kp < 0 or kd < 0:
            raise SchemaError(
                path,
                "drive:*:physics:stiffness/damping",
                f"invalid drive gains stiffness={kp} damping={kd}",
                "finite, >= 0",
            )
        if angular:
            kp, kd = kp / DEG, kd / DEG
        target_pos = float(drive.targetPosition)
        target_vel = float(drive.targetVelocity)
        if angular:
            target_pos *= DEG
            target_vel *= DEG
        if drive.acceleration:
            self.warn(path, "acceleration drive approximated by a force drive")
        sign = binding.sign
        if kp <= 0.0 and kd <= 0.0:
            self.warn(path, "drive with zero stiffness and damping; no actuator created")
            return
        act = self.spec.add_actuator(name=f"{mj_joint}:drive", target=mj_joint)
        act.trntype = mujoco.mjtTrn.mjTRN_JOINT
        act.gear = [sign, 0, 0, 0, 0, 0]
        act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
        act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
        if kp > 0.0:
            # force = kp*ctrl + kd*v_target - kp*q - kd*qd (q, qd in the USD sign convention)
            act.gainprm = [kp] + [0.0] * 9
            act.biasprm = [kd * target_vel, -kp, -kd] + [0.0] * 7
            binding.drive_mode = "position"
            ctrl0 = target_pos
        else:
            act.gainprm = [kd] + [0.0] * 9
            act.biasprm = [0.0, 0.0, -kd] + [0.0] * 7
            binding.drive_mode = "velocity"
            ctrl0 = target_vel
        binding.damping = kd
        fmax = float(drive.forceLimit)
        if math.isfinite(fmax) and 0.0 < fmax < 1e30:
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
            act.forcerange = [-fmax, fmax]
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
        self.pending_actuators.append((binding, act.name, ctrl0))

    def general_actuator(self, prim: Usd.Prim, path: str, act, sign: float) -> bool:
        """Fill a MuJoCo ``general`` actuator from ``mjc:*`` attributes; False = unsupported."""
        gear = self.attr(prim, "mjc:gear")
        g = list(gear) if gear is not None else [1.0, 0, 0, 0, 0, 0]
        g[0] *= sign
        act.gear = g
        table_gain = {"fixed": mujoco.mjtGain.mjGAIN_FIXED, "affine": mujoco.mjtGain.mjGAIN_AFFINE}
        table_bias = {"none": mujoco.mjtBias.mjBIAS_NONE, "affine": mujoco.mjtBias.mjBIAS_AFFINE}
        gt = str(self.attr(prim, "mjc:gainType") or "fixed")
        bt = str(self.attr(prim, "mjc:biasType") or "none")
        if gt not in table_gain or bt not in table_bias:
            self.warn(path, f"unsupported gain/bias type {gt}/{bt}; actuator ignored")
            return False
        act.gaintype = table_gain[gt]
        act.biastype = table_bias[bt]
        self.set_authored(prim, act, _GAIN_BIAS_PARAMS, lambda v: (list(v) + [0.0] * 10)[:10])
        dyn = self.attr(prim, "mjc:dynType")
        if dyn is not None and str(dyn) != "none":
            self.warn(path, f"actuator dynamics {dyn} not supported; treated as none")
        for lo_name, hi_name, limited_name, key, lim in _RANGES:
            lo, hi = self.attr(prim, lo_name), self.attr(prim, hi_name)
            limited = self.attr(prim, limited_name)
            if lo is not None or hi is not None:  # MJCF default of a missing side: 0
                setattr(act, key, [float(lo or 0.0), float(hi or 0.0)])
                if limited is None or str(limited) in ("auto", "true"):
                    setattr(act, lim, mujoco.mjtLimited.mjLIMITED_TRUE)
                else:
                    setattr(act, lim, mujoco.mjtLimited.mjLIMITED_FALSE)
        return True

    def mjc_actuators(self) -> None:
        for prim in self.stage.Traverse():
            if prim.GetTypeName() != "MjcActuator":
                continue
            path = str(prim.GetPath())
            targets = (
                prim.GetRelationship("mjc:target").GetTargets()
                if prim.GetRelationship("mjc:target")
                else []
            )
            if not targets:
                self.warn(path, "MjcActuator without mjc:target; ignored")
                continue
            target = str(targets[0])
            if target in self.tendon_paths:
                act = self.spec.add_actuator(name=path, target=target)
                act.trntype = mujoco.mjtTrn.mjTRN_TENDON
                if not self.general_actuator(prim, path, act, 1.0):
                    self.spec.delete(act)
                continue
            bindings = [b for b in self.dofs if b.joint_path == target]
            if len(bindings) != 1 or bindings[0].ball_axis >= 0:
                self.warn(path, f"MjcActuator target {target} is not a 1-DOF joint; ignored")
                continue
            binding = bindings[0]
            mj_joint = next(n for b, n in self.pending_dofs if b is binding)
            act = self.spec.add_actuator(name=path, target=mj_joint)
            act.trntype = mujoco.mjtTrn.mjTRN_JOINT
            if not self.general_actuator(prim, path, act, binding.sign):
                self.spec.delete(act)
                continue
            binding.drive_mode = "mjc"
            self.pending_actuators.append((binding, path, None))
