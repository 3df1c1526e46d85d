"""Constraint step of the USD -> MuJoCo builder: loops, mimic joints, tendons, exclusions."""

from __future__ import annotations

import mujoco
import numpy as np
from pxr import Usd

from runtime.engine._build_base import SOLVER_PARAMS, BuildContext
from runtime.engine._build_math import DEG
from runtime.errors import SchemaError


class ConstraintStep(BuildContext):
    """Adds equality constraints, fixed tendons and collision exclusions."""

    def loop_constraints(self) -> None:
        """Joints outside the tree (loop closures, ``excludeFromArticulation``) -> equalities.

        Fixed -> ``weld`` of two sites at the joint frames; spherical -> ``connect`` of the two
        joint anchors; revolute -> ``connect`` (the hinge axis is not enforced: warning).
        ``mjc:solref`` / ``mjc:solimp`` on the joint prim are used when authored.
        """
        for j in self.loop_joints:
            if j.kind not in ("fixed", "spherical", "revolute"):
                raise SchemaError(
                    j.path,
                    "",
                    f"{j.kind} joint outside the articulation tree (loop closure or "
                    "excludeFromArticulation) is not supported",
                    "fixed, spherical or revolute loop-closing joints",
                )
            if j.kind == "revolute":
                self.warn(
                    j.path,
                    "loop-closing revolute joint modelled as a point (connect) constraint; its "
                    "axis is not enforced",
                )
            sites = []
            for side, (body_path, frame) in enumerate(((j.body0, j.frame0), (j.body1, j.frame1))):
                parent = self.spec.worldbody if not body_path else self.bodies[body_path].spec_body
                site = parent.add_site(name=f"{j.path}:site{side}", pos=frame[0], quat=frame[1])
                sites.append(site.name)
            eq = self.spec.add_equality(
                name=j.path,
                type=mujoco.mjtEq.mjEQ_WELD if j.kind == "fixed" else mujoco.mjtEq.mjEQ_CONNECT,
                objtype=mujoco.mjtObj.mjOBJ_SITE,
                name1=sites[0],
                name2=sites[1],
            )
            self.style_equality(eq, self.stage.GetPrimAtPath(j.path))

    def style_equality(self, eq, prim: Usd.Prim) -> None:
        self.set_authored(prim, eq, SOLVER_PARAMS, list)

    def mimic_constraints(self) -> None:
        """``newton:mimicJoint`` (joint follows another): MuJoCo joint equality.

        ``q_this = c0 + c1 q_other`` with ``newton:mimicCoef0`` (offset, degrees on angular
        joints) / ``newton:mimicCoef1`` (gear), or ``mjc:polycoef`` when authored.
        """
        by_path = self.scalar_dofs_by_joint()
        for joint_path, (binding, mj_name) in sorted(by_path.items()):
            prim = self.stage.GetPrimAtPath(joint_path)
            rel = prim.GetRelationship("newton:mimicJoint")
            targets = rel.GetTargets() if rel else []
            if not targets:
                continue
            other = by_path.get(str(targets[0]))
            if other is None:
                self.warn(joint_path, f"mimic target {targets[0]} is not a simulated 1-DOF joint")
                continue
            poly = self.attr(prim, "mjc:polycoef")
            if poly is not None:
                coef = (list(poly) + [0.0] * 5)[:5]
            else:
                c0 = float(self.attr(prim, "newton:mimicCoef0") or 0.0)
                c1 = self.attr(prim, "newton:mimicCoef1")
                c1 = 1.0 if c1 is None else float(c1)
                if binding.angular:
                    c0 *= DEG
                coef = [c0, c1, 0.0, 0.0, 0.0]
            if binding.sign < 0 or other[0].sign < 0:
                self.warn(joint_path, "mimic between reversed joints: coefficients not adapted")
            eq = self.spec.add_equality(
                name=f"{joint_path}:mimic",
                type=mujoco.mjtEq.mjEQ_JOINT,
                objtype=mujoco.mjtObj.mjOBJ_JOINT,
                name1=mj_name,
                name2=other[1],
            )
            data = np.zeros(len(eq.data))
            data[:5] = coef
            eq.data = data
            self.style_equality(eq, prim)

    def tendons(self) -> None:
        """``MjcTendon`` prims of type fixed -> MuJoCo fixed tendons (joint coefficients)."""
        by_path = self.scalar_dofs_by_joint()
        for prim in self.stage.Traverse():
            if prim.GetTypeName() != "MjcTendon":
                continue
            path = str(prim.GetPath())
            kind = str(self.attr(prim, "mjc:type") or "fixed")
            rel = prim.GetRelationship("mjc:path")
            targets = [str(t) for t in rel.GetTargets()] if rel else []
            coefs = list(self.attr(prim, "mjc:path:coef") or [1.0] * len(targets))
            if kind != "fixed":
                self.warn(path, f"{kind} tendon not supported; ignored")
                continue
            if len(coefs) != len(targets) or any(t not in by_path for t in targets):
                self.warn(
                    path, "fixed tendon with unknown joints or mismatched coefficients; ignored"
                )
                continue
            tendon = self.spec.add_tendon(name=path)
            for target, coef in zip(targets, coefs, strict=True):
                binding, mj_name = by_path[target]
                tendon.wrap_joint(mj_name, float(coef) * binding.sign)
            for name, key in (
                ("mjc:stiffness", "stiffness"),
                ("mjc:damping", "damping"),
                ("mjc:frictionloss", "frictionloss"),
                ("mjc:armature", "armature"),
            ):
                value = self.attr(prim, name)
                if value is not None:
                    try:
                        setattr(tendon, key, float(value))
                    except TypeError:
                        setattr(tendon, key, [float(value), 0.0, 0.0])
            self.tendon_paths.add(path)
