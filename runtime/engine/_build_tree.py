"""Tree step of the USD -> MuJoCo builder: rigid bodies, joints and the body forest."""

from __future__ import annotations

import numpy as np
from pxr import UsdPhysics

from runtime.engine._build_base import BuildContext
from runtime.engine._build_math import compose, finite_pose, gf_quat, qnormalize, vec
from runtime.engine._build_types import BodyRecord, JointRecord
from runtime.errors import SchemaError


class TreeStep(BuildContext):
    """Collects bodies and joints and orders the bodies into a forest."""

    def collect_bodies(self, parsed: dict) -> None:
        for path, desc in parsed.get("RigidBody", []):
            prim = self.stage.GetPrimAtPath(path)
            if not desc.rigidBodyEnabled:
                self.warn(path, "physics:rigidBodyEnabled is false; treated as static collider")
                continue
            pos, quat, scale = self.world_pose(prim)
            if np.any(np.abs(scale - 1.0) > 1e-6):
                self.warn(
                    path,
                    f"rigid body has non-unit world scale {tuple(scale)}; shapes use the "
                    "scaled sizes, mass properties are used as authored",
                )
            self.bodies[path] = BodyRecord(path, prim, (pos, quat), bool(desc.kinematicBody))
            lin = vec(desc.linearVelocity)
            ang = vec(desc.angularVelocity)
            if not (np.all(np.isfinite(lin)) and np.all(np.isfinite(ang))):
                raise SchemaError(path, "physics:velocity", "non-finite velocity", "finite")
            if np.any(lin != 0.0) or np.any(ang != 0.0):
                self.bodies[path].velocity = lin
                self.bodies[path].angular_velocity = ang

    def collect_joints(self, parsed: dict) -> list[JointRecord]:
        joints: list[JointRecord] = []
        kinds = {
            "RevoluteJoint": "revolute",
            "PrismaticJoint": "prismatic",
            "SphericalJoint": "spherical",
            "FixedJoint": "fixed",
            "D6Joint": "d6",
        }
        for key in ("DistanceJoint", "CustomJoint"):
            for path, _ in parsed.get(key, []):
                raise SchemaError(
                    path,
                    "",
                    f"unsupported joint type {key}",
                    "revolute, prismatic, spherical, fixed, D6 joints",
                )
        for key, kind in kinds.items():
            for path, desc in parsed.get(key, []):
                if not desc.jointEnabled:
                    self.warn(path, "physics:jointEnabled is false; joint ignored")
                    continue
                b0 = str(desc.body0) if desc.body0 and str(desc.body0) in self.bodies else ""
                b1 = str(desc.body1) if desc.body1 and str(desc.body1) in self.bodies else ""
                for rel, raw, got in (
                    ("physics:body0", desc.rel0, b0),
                    ("physics:body1", desc.rel1, b1),
                ):
                    if raw and str(raw) and not got:
                        rel_prim = self.stage.GetPrimAtPath(raw)
                        if rel_prim and rel_prim.HasAPI(UsdPhysics.RigidBodyAPI):
                            self.warn(path, f"{rel} targets a disabled body; treated as world")
                if not b0 and not b1:
                    self.warn(path, "joint connects no rigid body; ignored")
                    continue
                p0 = vec(desc.localPose0Position)
                q0 = gf_quat(desc.localPose0Orientation)
                p1 = vec(desc.localPose1Position)
                q1 = gf_quat(desc.localPose1Orientation)
                finite_pose(path, "physics:localPos0/localRot0", p0, q0)
                finite_pose(path, "physics:localPos1/localRot1", p1, q1)
                f0 = (p0, qnormalize(q0))
                f1 = (p1, qnormalize(q1))
                # a side the parser kept as a body but we do not simulate (disabled body):
                # its local frame becomes a world frame through that prim's transform
                if desc.body0 and not b0:
                    f0 = compose(self.world_pose(self.stage.GetPrimAtPath(desc.body0))[:2], f0)
                if desc.body1 and not b1:
                    f1 = compose(self.world_pose(self.stage.GetPrimAtPath(desc.body1))[:2], f1)
                joints.append(JointRecord(path, kind, desc, b0, b1, f0, f1))
        joints.sort(key=lambda j: j.path)
        return joints

    def build_tree(self, joints: list[JointRecord], articulation_roots: list[str]) -> list:
        """Order bodies into a forest; returns [(body, joint or None, reversed)] in DFS order."""
        adjacency: dict[str, list[JointRecord]] = {p: [] for p in self.bodies}
        world_joints: list[JointRecord] = []
        for j in joints:
            if j.desc.excludeFromArticulation:
                self.loop_joints.append(j)  # maximal-coordinate joint: an equality constraint
                continue
            if j.body0 and j.body1:
                adjacency[j.body0].append(j)
                adjacency[j.body1].append(j)
            else:
                world_joints.append(j)
        placed: dict[str, tuple[JointRecord | None, bool, str]] = {}
        order: list[str] = []
        children: dict[str, list[str]] = {"": []}

        def attach(child: str, joint: JointRecord | None, reversed_: bool, parent: str) -> None:
            placed[child] = (joint, reversed_, parent)
            children.setdefault(parent, []).append(child)
            children.setdefault(child, [])

        def grow(root: str) -> None:
            queue = [root]
            while queue:
                current = queue.pop(0)
                for j in adjacency[current]:
                    other = j.body1 if j.body0 == current else j.body0
                    if j.path in used:
                        continue
                    used.add(j.path)
                    if other in placed:
                        self.loop_joints.append(j)  # closes a loop: equality constraint
                        continue
                    attach(other, j, j.body0 != current, current)
                    queue.append(other)

        used: set[str] = set()
        for j in world_joints:
            child = j.body1 or j.body0
            used.add(j.path)
            if child in placed:  # reached through the tree already: closes a loop
                self.loop_joints.append(j)
                continue
            attach(child, j, j.body1 == "", "")
            grow(child)
        # free-floating components: articulation roots first, then path order
        candidates = [p for p in articulation_roots if p in self.bodies]
        candidates += sorted(self.bodies)
        for root in candidates:
            if root in placed:
                continue
            attach(root, None, False, "")
            grow(root)
        # depth-first order so every parent precedes its children
        stack = list(reversed(children[""]))
        while stack:
            node = stack.pop()
            order.append(node)
            stack.extend(reversed(children.get(node, [])))
        return [(p, placed[p][0], placed[p][1], placed[p][2]) for p in order]
