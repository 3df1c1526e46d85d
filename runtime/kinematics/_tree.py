"""Link tree of a robot built from USD physics joints (either authoring direction).

The robot's joints are its ``isaac:physics:robotJoints`` targets, then the joints under the
robot prim (``physics:excludeFromArticulation`` ones skipped); the root link is found as in
:func:`find_root`. Walking the joints from the root gives a tree of :class:`LinkNode` in
parent-before-child order, with scale-aware joint offsets (``pre`` / ``post``) and the
zero-configuration link poses.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np
from pxr import Usd, UsdPhysics

from runtime.errors import SchemaError
from runtime.kinematics.math import Transform
from runtime.kinematics.xform import world_pose
from runtime.schema.utils import find_loop_joints

__all__ = [
    "NO_MOTION",
    "PRISMATIC",
    "REVOLUTE",
    "LinkNode",
    "LinkTree",
    "joint_axis",
    "joint_kind",
    "joint_limits",
]

# log under the public module that builds the tree
_LOG = logging.getLogger("runtime.kinematics.chain")

_AXES = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}
REVOLUTE = 0
PRISMATIC = 1
NO_MOTION = 2


@dataclass
class LinkNode:
    """A node of the kinematic tree.

    Attributes:
        prim: the link prim.
        path: its path string.
        parent: index of the parent node (-1 for the root).
        joint_path: path of the joint to the parent ("" for the root).
        children: indices of child nodes.
        jtype: 0 revolute, 1 prismatic, 2 no motion (fixed, spherical, D6, root).
        axis: unit motion axis in the joint frame, in tree direction (negated when the joint
            is authored child→parent), shape (3,).
        pre: parent link frame → joint frame (parent side).
        post: joint frame (after motion) → this link's frame.
        reversed: True when the joint's body0 is this (child) link.
        lower: lower limit [rad or stage units].
        upper: upper limit.
        fixed: the joint to the parent is a ``PhysicsFixedJoint`` (snapped on teleport).
    """

    prim: Usd.Prim
    path: str
    parent: int = -1
    joint_path: str = ""
    children: list[int] = field(default_factory=list)
    jtype: int = NO_MOTION
    axis: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0]))
    pre: Transform = field(default_factory=Transform)
    post: Transform = field(default_factory=Transform)
    reversed: bool = False
    lower: float = -math.inf
    upper: float = math.inf
    fixed: bool = False

    @property
    def name(self) -> str:
        """Prim name."""
        return self.prim.GetName()


# ----------------------------------------------------------------------------- USD joints


def first_target(prim: Usd.Prim, name: str) -> str:
    rel = prim.GetRelationship(name)
    if not rel:
        return ""
    targets = rel.GetTargets()
    return str(targets[0]) if targets else ""


def local_frame(joint: Usd.Prim, index: int) -> Transform:
    pos = joint.GetAttribute(f"physics:localPos{index}").Get()
    rot = joint.GetAttribute(f"physics:localRot{index}").Get()
    t = np.zeros(3) if pos is None else np.array(pos, dtype=np.float64)
    if rot is None:
        q = np.array([1.0, 0.0, 0.0, 0.0])
    else:
        q = np.array([rot.GetReal(), *rot.GetImaginary()], dtype=np.float64)
        norm = float(np.linalg.norm(q))
        if not np.isfinite(norm) or norm == 0.0:
            raise SchemaError(
                str(joint.GetPath()),
                f"physics:localRot{index}",
                f"invalid quaternion {tuple(q)}",
                "a non-zero unit quaternion",
            )
        q = q / norm
    if not np.all(np.isfinite(t)):
        raise SchemaError(
            str(joint.GetPath()),
            f"physics:localPos{index}",
            f"non-finite position {tuple(t)}",
            "finite values",
        )
    return Transform(t, q)


def joint_kind(joint: Usd.Prim) -> int:
    """0 revolute, 1 prismatic, 2 anything else (fixed, spherical, D6, generic)."""
    if joint.IsA(UsdPhysics.RevoluteJoint):
        return REVOLUTE
    if joint.IsA(UsdPhysics.PrismaticJoint):
        return PRISMATIC
    return NO_MOTION


def joint_axis(joint: Usd.Prim) -> np.ndarray:
    """Unit axis of ``physics:axis`` (unknown token → X with a warning, as the reference)."""
    token = joint.GetAttribute("physics:axis").Get()
    if token is None:
        token = "X"
    if str(token) not in _AXES:
        _LOG.warning("%s: physics:axis %r is not X/Y/Z; using X", joint.GetPath(), token)
        token = "X"
    return np.array(_AXES[str(token)])


def joint_limits(joint: Usd.Prim, kind: int) -> tuple[float, float]:
    """SI limits of a revolute (degrees → rad) or prismatic joint; inverted → unlimited."""
    lo = joint.GetAttribute("physics:lowerLimit").Get()
    hi = joint.GetAttribute("physics:upperLimit").Get()
    lo = -math.inf if lo is None else float(lo)
    hi = math.inf if hi is None else float(hi)
    if math.isnan(lo) or math.isnan(hi):
        raise SchemaError(
            str(joint.GetPath()),
            "physics:lowerLimit/upperLimit",
            "limit is NaN",
            "finite values or ±inf",
        )
    if kind == REVOLUTE:
        lo = math.radians(lo) if math.isfinite(lo) else lo
        hi = math.radians(hi) if math.isfinite(hi) else hi
    if lo > hi:
        return -math.inf, math.inf
    return lo, hi


def is_link(prim: Usd.Prim) -> bool:
    return bool(prim) and (
        prim.HasAPI(UsdPhysics.RigidBodyAPI) or "IsaacLinkAPI" in prim.GetAppliedSchemas()
    )


def _excluded(joint: Usd.Prim) -> bool:
    attr = joint.GetAttribute("physics:excludeFromArticulation")
    return bool(attr and attr.Get())


def robot_joints(stage: Usd.Stage, robot_prim: Usd.Prim) -> list[Usd.Prim]:
    """Joints of the robot: relationship targets first, then joints under the robot prim."""
    joints: list[Usd.Prim] = []
    seen: set[str] = set()
    rel = robot_prim.GetRelationship("isaac:physics:robotJoints")
    candidates: list[Usd.Prim] = []
    if rel:
        for path in rel.GetTargets():
            prim = stage.GetPrimAtPath(path)
            if prim and prim.IsA(UsdPhysics.Joint):
                candidates.append(prim)
    candidates.extend(p for p in Usd.PrimRange(robot_prim) if p.IsA(UsdPhysics.Joint))
    for prim in candidates:
        path = str(prim.GetPath())
        if path in seen or _excluded(prim):
            continue
        seen.add(path)
        joints.append(prim)
    return joints


def find_root(stage: Usd.Stage, robot_prim: Usd.Prim, joints: list[Usd.Prim]) -> Usd.Prim | None:
    """Root link of the robot's tree.

    Order: the robot prim if it is a link, the first robotLinks target, the articulation
    root, a body fixed to the world, else the first rigid body under the robot.
    """
    if is_link(robot_prim):
        return robot_prim
    rel = robot_prim.GetRelationship("isaac:physics:robotLinks")
    if rel:
        for path in rel.GetTargets():
            prim = stage.GetPrimAtPath(path)
            if is_link(prim) and "IsaacSiteAPI" not in prim.GetAppliedSchemas():
                return prim
    for prim in Usd.PrimRange(robot_prim):
        if prim.HasAPI(UsdPhysics.ArticulationRootAPI):
            if is_link(prim):
                return prim
            if prim.IsA(UsdPhysics.Joint):
                for name in ("physics:body0", "physics:body1"):
                    body = stage.GetPrimAtPath(first_target(prim, name) or "/")
                    if is_link(body):
                        return body
            break
    for joint in joints:
        b0 = stage.GetPrimAtPath(first_target(joint, "physics:body0") or "/")
        b1 = stage.GetPrimAtPath(first_target(joint, "physics:body1") or "/")
        if is_link(b1) and not is_link(b0):
            return b1
        if is_link(b0) and not is_link(b1):
            return b0
    for prim in Usd.PrimRange(robot_prim):
        if is_link(prim):
            return prim
    return None


# ----------------------------------------------------------------------------- tree


class LinkTree:
    """Link tree of a robot (``nodes`` parents before children, ``index`` by link path).

    Also holds every link's current world pose and scale (``current``, ``scales``) and its
    zero-configuration world pose (``zero``); all three are absent when no root link exists.
    """

    def __init__(self, stage: Usd.Stage, robot_prim: Usd.Prim) -> None:
        self.nodes: list[LinkNode] = []
        self.index: dict[str, int] = {}
        joints = robot_joints(stage, robot_prim)
        root = find_root(stage, robot_prim, joints)
        if root is None:
            return
        adjacency: dict[str, list[tuple[Usd.Prim, int]]] = {}
        for joint in joints:
            for slot, name in ((0, "physics:body0"), (1, "physics:body1")):
                path = first_target(joint, name)
                if path:
                    adjacency.setdefault(path, []).append((joint, slot))
        self._add(LinkNode(prim=root, path=str(root.GetPath())))
        # the same loop-closing joints as the schema's link tree (the later-listed joint)
        link_paths = {p for p in adjacency if is_link(stage.GetPrimAtPath(p))}
        processed: set[str] = {
            str(j.GetPath()) for j, _reason in find_loop_joints(joints, link_paths)
        }
        stack = [0]
        while stack:
            ni = stack.pop()
            node = self.nodes[ni]
            for slot in (0, 1):
                for joint, jslot in adjacency.get(node.path, []):
                    if jslot != slot:
                        continue
                    jpath = str(joint.GetPath())
                    if jpath in processed:
                        continue
                    processed.add(jpath)
                    other_path = first_target(joint, f"physics:body{1 - slot}")
                    if not other_path or other_path in self.index:
                        continue
                    other = stage.GetPrimAtPath(other_path)
                    if not is_link(other):
                        continue
                    child = self._make_child(ni, other, joint, reversed_=(slot == 1))
                    node.children.append(child)
                    stack.append(child)
        self._compute_zero_and_current()

    def _add(self, node: LinkNode) -> int:
        self.index[node.path] = len(self.nodes)
        self.nodes.append(node)
        return len(self.nodes) - 1

    def _make_child(self, parent: int, prim: Usd.Prim, joint: Usd.Prim, reversed_: bool) -> int:
        kind = joint_kind(joint)
        node = LinkNode(
            prim=prim,
            path=str(prim.GetPath()),
            parent=parent,
            joint_path=str(joint.GetPath()),
            jtype=kind,
            reversed=reversed_,
            fixed=bool(joint.IsA(UsdPhysics.FixedJoint)),
        )
        if kind != NO_MOTION:
            axis = joint_axis(joint)
            node.axis = -axis if reversed_ else axis
            node.lower, node.upper = joint_limits(joint, kind)
        node._joint_prim = joint  # type: ignore[attr-defined]
        return self._add(node)

    def _compute_zero_and_current(self) -> None:
        """Current world poses/scales; pre/post offsets (scale-aware); zero-config poses."""
        self.current: list[Transform] = []
        self.scales: list[np.ndarray] = []
        for node in self.nodes:
            pose, scale = world_pose(node.prim)
            self.current.append(pose)
            self.scales.append(scale)
        for i, node in enumerate(self.nodes):
            if node.parent < 0:
                continue
            joint = node._joint_prim  # type: ignore[attr-defined]
            l0 = local_frame(joint, 0)
            l1 = local_frame(joint, 1)
            parent_local, child_local = (l1, l0) if node.reversed else (l0, l1)
            parent_scale = self.scales[node.parent]
            child_scale = self.scales[i]
            node.pre = Transform(parent_local.t * parent_scale, parent_local.q)
            node.post = Transform(child_local.t * child_scale, child_local.q).inv()
        self.zero: list[Transform] = []
        for node in self.nodes:
            if node.parent < 0:
                self.zero.append(self.current[0].copy())
            else:
                self.zero.append(self.zero[node.parent] @ node.pre @ node.post)

    def motion(self, node: LinkNode, value: float) -> Transform:
        """Motion transform of ``node``'s joint (tree direction) for USD joint value."""
        if node.jtype == REVOLUTE:
            half = 0.5 * value
            return Transform(None, [math.cos(half), *(node.axis * math.sin(half))])
        if node.jtype == PRISMATIC:
            return Transform(node.axis * value)
        return Transform()

    def ancestors(self, i: int) -> list[int]:
        """Node indices from ``i`` up to the root (inclusive)."""
        out = [i]
        while self.nodes[out[-1]].parent >= 0:
            out.append(self.nodes[out[-1]].parent)
        return out
