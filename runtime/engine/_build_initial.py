"""Initial-state step of the USD -> MuJoCo builder: authored joint positions and velocities."""

from __future__ import annotations

import math

import mujoco
import numpy as np

from runtime.engine._build_base import LOG, BuildContext
from runtime.engine._build_math import AXIS_INDEX, DEG, compose, inverse, qconj, qmul, qrot

_POSE_TOL = 1e-4


class InitialStateStep(BuildContext):
    """Reads the authored configuration and velocities into ``qpos`` / ``qvel``."""

    def initial_velocities(self, model: mujoco.MjModel, qvel: np.ndarray) -> None:
        """Authored body velocities (world frame, COM linear, deg/s angular) of free bodies."""
        for path, b in self.bodies.items():
            if b.velocity is None:
                continue
            bid = model.body(path).id
            jnt = int(model.body_jntadr[bid])
            if model.body_jntnum[bid] != 1 or int(model.jnt_type[jnt]) != int(
                mujoco.mjtJoint.mjJNT_FREE
            ):
                self.warn(
                    path,
                    "authored physics:velocity / angularVelocity ignored (body is jointed or "
                    "kinematic)",
                )
                continue
            if self.attr(b.prim, "physxRigidBody:localSpaceVelocities"):
                self.warn(path, "physxRigidBody:localSpaceVelocities not supported; world used")
            w = b.angular_velocity * DEG
            quat = b.world[1]
            com_world = qrot(quat, np.array(model.body_ipos[bid]))
            adr = int(model.jnt_dofadr[jnt])
            qvel[adr : adr + 3] = b.velocity - np.cross(w, com_world)  # body-origin velocity
            qvel[adr + 3 : adr + 6] = qrot(qconj(quat), w)  # body-local angular velocity

    def resolve_dof_addresses(self, model: mujoco.MjModel) -> None:
        """Fill the MuJoCo joint id and qpos / dof addresses of every DOF binding."""
        for binding, mj_name in self.pending_dofs:
            jid = model.joint(mj_name).id
            binding.mj_joint = jid
            binding.qpos_adr = int(model.jnt_qposadr[jid])
            binding.dof_adr = int(model.jnt_dofadr[jid])
            if binding.ball_axis >= 0:
                binding.dof_adr += binding.ball_axis

    def initial_configuration(
        self, initial: dict, model: mujoco.MjModel, qpos: np.ndarray, *, report: bool = True
    ) -> None:
        """Joint positions that reproduce the authored body poses, written into ``qpos``.

        ``initial`` maps each jointed body to ``(joint, reversed, parent path)``; whatever the
        joint's DOFs cannot absorb is logged as a warning. Positions outside the joint limits
        are then clamped into them (one warning naming the joints). The DOF addresses must be
        resolved (:meth:`resolve_dof_addresses`).

        Args:
            initial: the jointed bodies.
            model: the compiled model.
            qpos: receives the configuration (starts as ``model.qpos0``).
            report: log the warnings (False: compute silently, for a trial configuration).
        """
        for path, (joint, reversed_, parent) in initial.items():
            if joint.kind == "fixed":
                continue
            f_parent, f_child = joint.frames(reversed_)
            child_world = self.bodies[path].world
            if parent == "":
                parent_world = (np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]))
            else:
                parent_world = self.bodies[parent].world
            a = compose(parent_world, f_parent)
            b = compose(child_world, f_child)
            rel = compose(inverse(a), b)  # child joint frame in parent joint frame
            bindings = [d for d in self.dofs if d.joint_path == joint.path]
            residual_p = rel[0].copy()
            residual_q = rel[1].copy()
            if joint.kind in ("revolute", "prismatic") and bindings:
                d = bindings[0]
                axis = np.eye(3)[AXIS_INDEX[d.token[-1]]]
                if joint.kind == "revolute":
                    w = residual_q[0]
                    s = float(np.dot(residual_q[1:], axis))
                    angle = 2.0 * math.atan2(s, w)
                    if angle > math.pi:
                        angle -= 2 * math.pi
                    if angle < -math.pi:
                        angle += 2 * math.pi
                    qpos[d.qpos_adr] = angle * d.sign
                    twist = np.array([math.cos(angle / 2), *(math.sin(angle / 2) * axis)])
                    residual_q = qmul(qconj(twist), residual_q)
                else:
                    value = float(np.dot(residual_p, axis))
                    qpos[d.qpos_adr] = value * d.sign
                    residual_p = residual_p - value * axis
            elif joint.kind == "spherical" and bindings:
                d = bindings[0]
                q = residual_q if d.sign > 0 else qconj(residual_q)
                qpos[d.qpos_adr : d.qpos_adr + 4] = q
                residual_q = np.array([1.0, 0.0, 0.0, 0.0])
            err_p = float(np.linalg.norm(residual_p))
            err_q = 2.0 * math.asin(min(1.0, float(np.linalg.norm(residual_q[1:]))))
            if report and (err_p > _POSE_TOL or err_q > _POSE_TOL):
                self.warn(
                    joint.path,
                    f"authored body poses disagree with the joint frames by {err_p:.3g} "
                    f"(stage units) / {err_q:.3g} rad beyond the joint's DOFs; bodies are "
                    "placed by the joint frames",
                )
        self.clamp_to_limits(model, qpos, report)

    def clamp_to_limits(self, model: mujoco.MjModel, qpos: np.ndarray, report: bool) -> None:
        """Clamp hinge / slide positions outside their joint range into it (one warning).

        A converted asset places its links at q = 0, which can lie outside a joint's limits
        (e.g. the calves of the Unitree go2); MuJoCo would start with a violated limit and
        snap the joint. The start is clamped instead and the joints are named once.
        """
        clamped = []
        for d in self.dofs:
            if d.ball_axis >= 0 or d.mj_joint < 0 or not model.jnt_limited[d.mj_joint]:
                continue
            lo, hi = (float(v) for v in model.jnt_range[d.mj_joint])
            value = float(qpos[d.qpos_adr])
            if lo <= value <= hi:
                continue
            inside = min(max(value, lo), hi)
            qpos[d.qpos_adr] = inside
            unit = "rad" if d.angular else "stage units"
            clamped.append(f"{d.joint_path} ({value:.4g} -> {inside:.4g} {unit})")
        if clamped and report:
            text = (
                f"{len(clamped)} initial joint positions outside their limits clamped to the "
                "nearest limit: " + ", ".join(clamped)
            )
            self.warnings.append(text)
            LOG.warning(text)
