"""Kinematic tree and chain built from USD physics joints (Isaac ``KinematicChain`` semantics).

``KinematicChain(stage, robot_prim, start_prim=None, end_prim=None)`` builds the link tree
of the robot (UsdPhysics joints, either authoring direction), and, when both end prims are
given, the movable-joint chain between them (spec ``kinematics.md`` §2–§3). Differences
from the reference, all recommended by the spec:

* joints authored child→parent (``body0`` = tree child) get correct frames and axis signs:
  the joint value is always the USD joint value (motion of body1 relative to body0), so
  the USD limits apply unchanged in both traversal directions;
* ``compute_fk_and_jacobian`` returns the reference's spatial Jacobian by default, and the
  point (geometric) Jacobian with ``jacobian="point"``; the IK uses the point Jacobian;
* teleport keeps each link's authored scale, and snaps links behind ``PhysicsFixedJoint``s
  to the joint definition (the reference keeps their current, possibly inconsistent offset);
* the body1 branch of the joint pose uses ``local1 · body1_world``.

Joint values are radians (revolute) and stage length units (prismatic). All chain poses are
expressed in the start prim's frame ("chain-local").
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

import runtime.schema  # noqa: F401  (registers the Isaac schemas before any stage)
from runtime.errors import SchemaError
from runtime.kinematics import _kernels as K
from runtime.kinematics.math import Transform, quat_from_matrix, quat_to_matrix

__all__ = ["Joint", "KinematicChain", "LinkNode"]

_LOG = logging.getLogger(__name__)

_AXES = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}
REVOLUTE = 0
PRISMATIC = 1
NO_MOTION = 2


# ----------------------------------------------------------------------------- records


@dataclass
class Joint:
    """One movable joint of a chain (spec §1.6).

    Attributes:
        w: unit rotation axis in the joint frame (zeros for prismatic), shape (3,).
        v: unit translation axis in the joint frame (zeros for revolute), shape (3,).
        home: joint frame relative to the previous chain frame at zero configuration.
        prim_path: USD path of the joint prim.
        tip: offset to the end prim after the last joint's motion (last joint only).
        lower: lower limit [rad or stage units], -inf when unlimited.
        upper: upper limit [rad or stage units], +inf when unlimited.
        forward: True when traversed parent→child in the tree.
        is_revolute: True for revolute joints.
    """

    w: np.ndarray
    v: np.ndarray
    home: Transform
    prim_path: str = ""
    tip: Transform | None = None
    lower: float = -math.inf
    upper: float = math.inf
    forward: bool = True
    is_revolute: bool = True

    def exp(self, q: float) -> Transform:
        """Transform of this joint (home, motion by ``q``, then tip if any)."""
        if float(np.dot(self.w, self.w)) > 0.0:
            half = 0.5 * float(q)
            motion = Transform(None, [math.cos(half), *(self.w * math.sin(half))])
        else:
            motion = Transform(self.v * float(q))
        out = self.home @ motion
        if self.tip is not None:
            out = out @ self.tip
        return out


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


# ----------------------------------------------------------------------------- USD helpers


def _world_matrix(prim: Usd.Prim) -> np.ndarray:
    """4x4 column-convention world matrix of ``prim`` (with scale)."""
    m = UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    return np.array(m, dtype=np.float64).T


def _rigid(m: np.ndarray) -> tuple[Transform, np.ndarray]:
    """Split a column-convention 4x4 into a rigid Transform and per-axis scale (3,)."""
    lin = m[:3, :3]
    scale = np.linalg.norm(lin, axis=0)
    safe = np.where(scale > 0.0, scale, 1.0)
    rot = lin / safe
    if np.linalg.det(rot) < 0.0:
        rot[:, 0] = -rot[:, 0]
        scale[0] = -scale[0]
    return Transform(m[:3, 3], quat_from_matrix(rot)), scale


def _world_pose(prim: Usd.Prim) -> tuple[Transform, np.ndarray]:
    """Rigid world pose and world scale of ``prim``."""
    return _rigid(_world_matrix(prim))


def _first_target(prim: Usd.Prim, name: str) -> str:
    rel = prim.GetRelationship(name)
    if not rel:
        return ""
    targets = rel.GetTargets()
    return str(targets[0]) if targets else ""


def _local_frame(joint: Usd.Prim, index: int) -> Transform:
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


def _is_link(prim: Usd.Prim) -> bool:
    return bool(prim) and (
        prim.HasAPI(UsdPhysics.RigidBodyAPI) or "IsaacLinkAPI" in prim.GetAppliedSchemas()
    )


def _excluded(joint: Usd.Prim) -> bool:
    attr = joint.GetAttribute("physics:excludeFromArticulation")
    return bool(attr and attr.Get())


def _robot_joints(stage: Usd.Stage, robot_prim: Usd.Prim) -> list[Usd.Prim]:
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


def _find_root(stage: Usd.Stage, robot_prim: Usd.Prim, joints: list[Usd.Prim]) -> Usd.Prim | None:
    """Root link of the robot's tree.

    Order: the robot prim if it is a link, the first robotLinks target, the articulation
    root, a body fixed to the world, else the first rigid body under the robot.
    """
    if _is_link(robot_prim):
        return robot_prim
    rel = robot_prim.GetRelationship("isaac:physics:robotLinks")
    if rel:
        for path in rel.GetTargets():
            prim = stage.GetPrimAtPath(path)
            if _is_link(prim) and "IsaacSiteAPI" not in prim.GetAppliedSchemas():
                return prim
    for prim in Usd.PrimRange(robot_prim):
        if prim.HasAPI(UsdPhysics.ArticulationRootAPI):
            if _is_link(prim):
                return prim
            if prim.IsA(UsdPhysics.Joint):
                for name in ("physics:body0", "physics:body1"):
                    body = stage.GetPrimAtPath(_first_target(prim, name) or "/")
                    if _is_link(body):
                        return body
            break
    for joint in joints:
        b0 = stage.GetPrimAtPath(_first_target(joint, "physics:body0") or "/")
        b1 = stage.GetPrimAtPath(_first_target(joint, "physics:body1") or "/")
        if _is_link(b1) and not _is_link(b0):
            return b1
        if _is_link(b0) and not _is_link(b1):
            return b0
    for prim in Usd.PrimRange(robot_prim):
        if _is_link(prim):
            return prim
    return None


# ----------------------------------------------------------------------------- tree


class _Tree:
    """Link tree with zero-configuration poses and flat arrays for the tree FK kernel."""

    def __init__(self, stage: Usd.Stage, robot_prim: Usd.Prim) -> None:
        self.nodes: list[LinkNode] = []
        self.index: dict[str, int] = {}
        joints = _robot_joints(stage, robot_prim)
        root = _find_root(stage, robot_prim, joints)
        if root is None:
            return
        adjacency: dict[str, list[tuple[Usd.Prim, int]]] = {}
        for joint in joints:
            for slot, name in ((0, "physics:body0"), (1, "physics:body1")):
                path = _first_target(joint, name)
                if path:
                    adjacency.setdefault(path, []).append((joint, slot))
        self._add(LinkNode(prim=root, path=str(root.GetPath())))
        processed: set[str] = set()
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
                    other_path = _first_target(joint, f"physics:body{1 - slot}")
                    if not other_path or other_path in self.index:
                        continue
                    other = stage.GetPrimAtPath(other_path)
                    if not _is_link(other):
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
            pose, scale = _world_pose(node.prim)
            self.current.append(pose)
            self.scales.append(scale)
        for i, node in enumerate(self.nodes):
            if node.parent < 0:
                continue
            joint = node._joint_prim  # type: ignore[attr-defined]
            l0 = _local_frame(joint, 0)
            l1 = _local_frame(joint, 1)
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


# ----------------------------------------------------------------------------- chain


class KinematicChain:
    """Kinematic tree of a robot and, optionally, the joint chain between two prims.

    Args:
        stage: the USD stage.
        robot_prim: robot root prim (IsaacRobotAPI not required).
        start_prim: chain start (link, a prim under a link such as a site, or an ancestor
            of the root link such as the robot prim, which moves with the root link).
        end_prim: chain end (same kinds).
        debug: log build details at DEBUG level.

    Raises:
        SchemaError: invalid joint data (NaN limits, zero quaternions) on the robot.
    """

    def __init__(
        self,
        stage: Usd.Stage,
        robot_prim: Usd.Prim,
        start_prim: Usd.Prim | None = None,
        end_prim: Usd.Prim | None = None,
        *,
        debug: bool = False,
    ) -> None:
        if not robot_prim or not robot_prim.IsValid():
            raise SchemaError(
                str(robot_prim.GetPath()) if robot_prim else "",
                "",
                "robot prim is invalid",
                "an existing prim",
            )
        self._stage = stage
        self._robot_prim = robot_prim
        self._start_prim = start_prim
        self._end_prim = end_prim
        self._debug = debug
        self._tree = _Tree(stage, robot_prim)
        self._joints: list[Joint] = []
        self._arrays_empty()
        if start_prim is not None and end_prim is not None and self._tree.nodes:
            self._build_chain()

    # ------------------------------------------------------------------ properties
    @property
    def stage(self) -> Usd.Stage:
        """The USD stage."""
        return self._stage

    @property
    def robot_prim(self) -> Usd.Prim:
        """The robot prim."""
        return self._robot_prim

    @property
    def start_prim(self) -> Usd.Prim | None:
        """Chain start prim."""
        return self._start_prim

    @property
    def end_prim(self) -> Usd.Prim | None:
        """Chain end prim."""
        return self._end_prim

    @property
    def tree_root(self) -> LinkNode | None:
        """Root node of the kinematic tree (``None`` without links)."""
        return self._tree.nodes[0] if self._tree.nodes else None

    @property
    def tree_nodes(self) -> list[LinkNode]:
        """All tree nodes, parents before children."""
        return list(self._tree.nodes)

    @property
    def joints(self) -> list[Joint]:
        """Movable chain joints (a new list each call)."""
        return list(self._joints)

    @property
    def joint_paths(self) -> list[str]:
        """Joint prim paths in chain order."""
        return [j.prim_path for j in self._joints]

    @property
    def lower(self) -> np.ndarray:
        """Lower joint limits, float64 (n,) [rad or stage units]."""
        return self._lower.copy()

    @property
    def upper(self) -> np.ndarray:
        """Upper joint limits, float64 (n,)."""
        return self._upper.copy()

    @property
    def kernel_arrays(self) -> tuple[np.ndarray, ...]:
        """Packed ``(model (n, 16), tip (12,))`` for the chain FK / Jacobian / IK kernels.

        Every joint frame is pre-rotated so that its axis is +Z (kernel fast path); the end
        pose and Jacobian are unchanged, intermediate frames differ from :meth:`compute_fk`'s.
        """
        return self._arrays

    # ------------------------------------------------------------------ build
    def _arrays_empty(self) -> None:
        self._arrays = (
            np.zeros(0, dtype=np.int64),
            np.zeros((0, 3)),
            np.zeros((0, 3)),
            np.zeros((0, 3, 3)),
            np.zeros(3),
            np.eye(3),
        )
        self._frame_arrays = self._arrays
        self._arrays = _pack(*self._frame_arrays)
        self._lower = np.zeros(0)
        self._upper = np.zeros(0)
        self._limits = np.zeros((2, 0))

    def _resolve(self, prim: Usd.Prim) -> tuple[int, Transform] | None:
        """Tree node of ``prim`` (or of its nearest link ancestor) and the prim's offset.

        The offset is the prim's current pose relative to that node's link frame.
        """
        if not prim or not prim.IsValid():
            return None
        path = str(prim.GetPath())
        if path in self._tree.index:
            return self._tree.index[path], Transform()
        parent = prim.GetParent()
        while parent and parent.IsValid() and not parent.IsPseudoRoot():
            ppath = str(parent.GetPath())
            if ppath in self._tree.index:
                ni = self._tree.index[ppath]
                prim_pose, _ = _world_pose(prim)
                return ni, self._tree.current[ni].inv() @ prim_pose
            parent = parent.GetParent()
        # the robot prim (or another ancestor of the root link, e.g. the converter's default
        # prim that the root is fixed to) moves rigidly with the root link
        root_path = self._tree.nodes[0].prim.GetPath() if self._tree.nodes else None
        if root_path is not None and root_path.HasPrefix(prim.GetPath()):
            prim_pose, _ = _world_pose(prim)
            return 0, self._tree.current[0].inv() @ prim_pose
        return None

    def _build_chain(self) -> None:
        tree = self._tree
        start = self._resolve(self._start_prim)
        end = self._resolve(self._end_prim)
        if start is None or end is None:
            _LOG.debug("chain end prims do not resolve to tree links")
            return
        (si, s_off), (ei, e_off) = start, end
        up_s = tree.ancestors(si)
        up_e = tree.ancestors(ei)
        set_s = set(up_s)
        lca = next((i for i in up_e if i in set_s), None)
        if lca is None:
            raise ValueError("start and end nodes are not connected in the kinematic tree")
        # (node, forward) edges in traversal order
        path: list[tuple[int, bool]] = [(i, False) for i in up_s[: up_s.index(lca)]]
        path += [(i, True) for i in reversed(up_e[: up_e.index(lca)])]
        start_zero = tree.zero[si] @ s_off
        end_zero = tree.zero[ei] @ e_off
        prev = start_zero
        joints: list[Joint] = []
        for ni, forward in path:
            node = tree.nodes[ni]
            if node.jtype == NO_MOTION:
                continue
            if forward:
                frame = tree.zero[node.parent] @ node.pre
                axis = node.axis.copy()
            else:
                frame = tree.zero[ni] @ node.post.inv()
                axis = -node.axis
            home = prev.inv() @ frame
            rev = node.jtype == REVOLUTE
            joints.append(
                Joint(
                    w=axis if rev else np.zeros(3),
                    v=np.zeros(3) if rev else axis,
                    home=home,
                    prim_path=node.joint_path,
                    lower=node.lower,
                    upper=node.upper,
                    forward=forward,
                    is_revolute=rev,
                )
            )
            prev = frame
        if not joints:
            return
        joints[-1].tip = prev.inv() @ end_zero
        self._joints = joints
        n = len(joints)
        types = np.array([REVOLUTE if j.is_revolute else PRISMATIC for j in joints], dtype=np.int64)
        axes = np.ascontiguousarray(
            [j.w if j.is_revolute else j.v for j in joints], dtype=np.float64
        ).reshape(n, 3)
        home_t = np.ascontiguousarray([j.home.t for j in joints]).reshape(n, 3)
        home_r = np.ascontiguousarray([quat_to_matrix(j.home.q) for j in joints]).reshape(n, 3, 3)
        tip = joints[-1].tip
        self._frame_arrays = (
            types,
            axes,
            home_t,
            home_r,
            np.ascontiguousarray(tip.t),
            np.ascontiguousarray(quat_to_matrix(tip.q)),
        )
        self._arrays = _pack(*_canonical_z(*self._frame_arrays))
        self._lower = np.array([j.lower for j in joints], dtype=np.float64)
        self._upper = np.array([j.upper for j in joints], dtype=np.float64)
        self._limits = np.ascontiguousarray(np.vstack([self._lower, self._upper]))
        if self._debug:
            for j in joints:
                _LOG.debug(
                    "joint %s forward=%s home=%s axis=%s",
                    j.prim_path,
                    j.forward,
                    j.home,
                    j.w if j.is_revolute else j.v,
                )

    # ------------------------------------------------------------------ FK
    def _q(self, q: Any) -> np.ndarray:
        arr = np.ascontiguousarray(q, dtype=np.float64)
        n = len(self._joints)
        if arr.ndim != 1 or arr.shape[0] < n:
            raise ValueError(f"expected {n} joint values, got shape {arr.shape}")
        return arr[:n] if arr.shape[0] != n else arr

    def compute_fk(self, q: Any, *, debug: bool = False) -> tuple[Transform, list[Transform]]:
        """End pose and per-joint accumulated frames (reference signature).

        Args:
            q: joint values in chain order [rad or stage units], shape (n,) (longer inputs
                are truncated like the reference's ``zip``).
            debug: unused (kept for signature parity).

        Returns:
            ``(T_end, frames)``: end prim pose in the chain-local frame and the frame after
            each joint's motion (the last includes the tip). Empty chain → identity, ``[]``.
        """
        n = len(self._joints)
        if n == 0:
            return Transform(), []
        qa = self._q(q)
        pos = np.empty((n, 3))
        rot = np.empty((n, 3, 3))
        K.chain_fk_frames_kernel(*self._frame_arrays, qa, pos, rot)
        frames = [Transform(pos[i], quat_from_matrix(rot[i])) for i in range(n)]
        return frames[-1].copy(), frames

    def fk(self, q: Any) -> tuple[np.ndarray, np.ndarray]:
        """Fast end pose: ``(position (3,), quaternion wxyz (4,))`` in the chain-local frame."""
        pos = np.empty(3)
        quat = np.empty(4)
        K.chain_fk_kernel(*self._arrays, self._q(q), pos, quat)
        return pos, quat

    def fk_batch(self, qs: Any) -> tuple[np.ndarray, np.ndarray]:
        """End poses for N configurations.

        Args:
            qs: float64 (N, n) joint values.

        Returns:
            positions (N, 3) and quaternions wxyz (N, 4), chain-local frame.
        """
        qs = np.ascontiguousarray(qs, dtype=np.float64)
        if qs.ndim != 2 or qs.shape[1] != len(self._joints):
            raise ValueError(f"expected shape (N, {len(self._joints)}), got {qs.shape}")
        pos = np.empty((qs.shape[0], 3))
        quat = np.empty((qs.shape[0], 4))
        K.chain_fk_batch_kernel(*self._arrays, qs, pos, quat)
        return pos, quat

    def compute_fk_and_jacobian(
        self, q: Any, *, jacobian: str = "spatial"
    ) -> tuple[Transform, np.ndarray]:
        """End pose and 6 x n Jacobian (rows [ω; v]) in the chain-local frame.

        Args:
            q: joint values, shape (n,).
            jacobian: ``"spatial"`` (reference: linear rows are the velocity of the point at
                the chain origin, ``p_joint × ω``) or ``"point"`` (linear rows are the
                end-effector point velocity; consistent with ``pose_error``).

        Returns:
            ``(T_end, J)`` with J float64 shape (6, n).
        """
        n = len(self._joints)
        if n == 0:
            return Transform(), np.zeros((6, 0))
        pos = np.empty(3)
        quat = np.empty(4)
        jac = np.empty((6, n))
        K.chain_fk_jacobian_kernel(*self._arrays, self._q(q), pos, quat, jac)
        if jacobian == "spatial":
            jac[3:] -= np.cross(jac[:3].T, pos).T
        elif jacobian != "point":
            raise ValueError(f"jacobian must be 'spatial' or 'point', got {jacobian!r}")
        return Transform(pos, quat), jac

    def fk_jacobian_batch(self, qs: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """End poses and point Jacobians for N configurations.

        Args:
            qs: float64 (N, n).

        Returns:
            positions (N, 3), quaternions wxyz (N, 4), Jacobians (N, 6, n), chain-local.
        """
        qs = np.ascontiguousarray(qs, dtype=np.float64)
        n = len(self._joints)
        if qs.ndim != 2 or qs.shape[1] != n:
            raise ValueError(f"expected shape (N, {n}), got {qs.shape}")
        pos = np.empty((qs.shape[0], 3))
        quat = np.empty((qs.shape[0], 4))
        jac = np.empty((qs.shape[0], 6, n))
        K.chain_fk_jacobian_batch_kernel(*self._arrays, qs, pos, quat, jac)
        return pos, quat, jac

    # ------------------------------------------------------------------ tree FK
    def tree_joint_paths(self) -> list[str]:
        """Movable joints of the tree in configuration order.

        DOF-table order when ``runtime.schema.dof`` can build a table, else tree order.
        """
        movable = [n.joint_path for n in self._tree.nodes if n.jtype != NO_MOTION]
        try:
            from runtime.schema.dof import build_dof_table  # type: ignore[import-not-found]
        except ImportError:
            return movable
        try:
            table = build_dof_table(self._stage, self._robot_prim)
        except Exception:  # noqa: BLE001 - fall back to tree order on any schema issue
            return movable
        order = [e.joint_path for e in table.entries if e.joint_path in set(movable)]
        rest = [p for p in movable if p not in set(order)]
        return order + rest

    def tree_arrays(self, joint_paths: list[str] | None = None) -> tuple[np.ndarray, ...]:
        """Arrays for ``tree_fk_kernel`` with link poses in the robot frame.

        Args:
            joint_paths: configuration order; default :meth:`tree_joint_paths`.

        Returns:
            (link_parent, link_qindex, link_jtype, link_axis, pre_t, pre_r, post_t, post_r).
        """
        tree = self._tree
        order = self.tree_joint_paths() if joint_paths is None else list(joint_paths)
        qindex = {p: i for i, p in enumerate(order)}
        nl = len(tree.nodes)
        parent = np.array([n.parent for n in tree.nodes], dtype=np.int64)
        qi = np.array(
            [qindex.get(n.joint_path, -1) if n.jtype != NO_MOTION else -1 for n in tree.nodes],
            dtype=np.int64,
        )
        jtype = np.array([n.jtype for n in tree.nodes], dtype=np.int64)
        axis = np.ascontiguousarray([n.axis for n in tree.nodes], dtype=np.float64).reshape(nl, 3)
        robot, _ = _world_pose(self._robot_prim)
        pres = []
        for n in tree.nodes:
            pres.append(robot.inv() @ tree.current[0] if n.parent < 0 else n.pre)
        pre_t = np.ascontiguousarray([p.t for p in pres]).reshape(nl, 3)
        pre_r = np.ascontiguousarray([quat_to_matrix(p.q) for p in pres]).reshape(nl, 3, 3)
        post_t = np.ascontiguousarray([n.post.t for n in tree.nodes]).reshape(nl, 3)
        post_r = np.ascontiguousarray([quat_to_matrix(n.post.q) for n in tree.nodes]).reshape(
            nl, 3, 3
        )
        # rotate each joint frame so its axis is +Z (kernel fast path): pre·A, Aᵀ·post;
        # links without motion get their whole offset in pre (post = identity)
        for i, n in enumerate(tree.nodes):
            if n.jtype == NO_MOTION or qi[i] < 0:
                jtype[i] = NO_MOTION
                pre_t[i] = pre_t[i] + pre_r[i] @ post_t[i]
                pre_r[i] = pre_r[i] @ post_r[i]
                post_t[i] = 0.0
                post_r[i] = np.eye(3)
                continue
            a = _rotation_z_to(n.axis)
            pre_r[i] = pre_r[i] @ a
            post_t[i] = a.T @ post_t[i]
            post_r[i] = a.T @ post_r[i]
            axis[i] = (0.0, 0.0, 1.0)
        return parent, qi, jtype, axis, pre_t, pre_r, post_t, post_r

    @property
    def link_paths(self) -> list[str]:
        """Tree link paths, parents before children (row order of link poses)."""
        return [n.path for n in self._tree.nodes]

    def compute_link_poses(
        self, q: Any, joint_paths: list[str] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Poses of every tree link in the robot frame (body-pose reporting).

        Args:
            q: configuration, float64 (D,) or (N, D), in ``joint_paths`` order (default
                :meth:`tree_joint_paths`, i.e. DOF-table order) [rad or stage units].
            joint_paths: configuration order.

        Returns:
            positions (L, 3) / (N, L, 3) and quaternions wxyz (L, 4) / (N, L, 4), rows in
            :attr:`link_paths` order, robot frame.
        """
        key = None if joint_paths is None else tuple(joint_paths)
        cache = getattr(self, "_tree_cache", None)
        if cache is None or cache[0] != key:
            order = self.tree_joint_paths() if joint_paths is None else list(joint_paths)
            cache = (key, self.tree_arrays(order), len(order))
            self._tree_cache = cache
        _, arrays, dof = cache
        qa = np.ascontiguousarray(q, dtype=np.float64)
        nl = len(self._tree.nodes)
        if qa.ndim == 1 and qa.shape[0] == dof:
            pos, quat = np.empty((nl, 3)), np.empty((nl, 4))
            K.tree_fk_kernel(*arrays, qa, pos, quat)
            return pos, quat
        if qa.ndim == 2 and qa.shape[1] == dof:
            pos, quat = np.empty((qa.shape[0], nl, 3)), np.empty((qa.shape[0], nl, 4))
            K.tree_fk_batch_kernel(*arrays, qa, pos, quat)
            return pos, quat
        raise ValueError(f"expected shape ({dof},) or (N, {dof}), got {qa.shape}")

    # ------------------------------------------------------------------ joint-state I/O
    def _read_all_joint_states(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for node in self._tree.nodes:
            if node.jtype == NO_MOTION:
                continue
            joint = self._stage.GetPrimAtPath(node.joint_path)
            name = (
                "state:angular:physics:position"
                if node.jtype == REVOLUTE
                else "state:linear:physics:position"
            )
            attr = joint.GetAttribute(name)
            value = attr.Get() if attr else None
            if value is None or not math.isfinite(float(value)):
                continue
            out[node.joint_path] = (
                math.radians(float(value)) if node.jtype == REVOLUTE else float(value)
            )
        return out

    def read_joint_states(self) -> dict[str, float]:
        """Current joint values of the chain joints (rad / stage units) by joint path."""
        allowed = set(self.joint_paths)
        return {k: v for k, v in self._read_all_joint_states().items() if k in allowed}

    def set_joint_attributes(self, joint_dict: dict[str, float]) -> None:
        """Write drive targets and joint states (degrees for revolute) for listed joints."""
        for path, value in joint_dict.items():
            prim = self._stage.GetPrimAtPath(path)
            if not prim:
                continue
            kind = joint_kind(prim)
            if kind == REVOLUTE:
                names = ("drive:angular:physics:targetPosition", "state:angular:physics:position")
                native = float(math.degrees(value))
            elif kind == PRISMATIC:
                names = ("drive:linear:physics:targetPosition", "state:linear:physics:position")
                native = float(value)
            else:
                continue
            for name in names:
                attr = prim.GetAttribute(name)
                if not attr:
                    attr = prim.CreateAttribute(name, Sdf.ValueTypeNames.Float, custom=True)
                attr.Set(native)

    def _propagate(
        self, joint_dict: dict[str, float], all_affected: bool
    ) -> tuple[list[Transform], list[bool]]:
        tree = self._tree
        old = [_world_pose(n.prim)[0] for n in tree.nodes]
        new: list[Transform] = [old[0]]
        moved = [all_affected]
        for i, node in enumerate(tree.nodes[1:], start=1):
            par = node.parent
            if node.joint_path in joint_dict and node.jtype != NO_MOTION:
                motion = tree.motion(node, float(joint_dict[node.joint_path]))
                pose = new[par] @ node.pre @ motion @ node.post
                new.append(pose)
                moved.append(True)
            elif node.fixed and (moved[par] or all_affected):
                new.append(new[par] @ node.pre @ node.post)
                moved.append(True)
            elif moved[par] or all_affected:
                new.append(new[par] @ (old[par].inv() @ old[i]))
                moved.append(True)
            else:
                new.append(old[i])
                moved.append(False)
        return new, moved

    def _write_links(self, poses: list[Transform], which: list[bool]) -> None:
        items = [(self._tree.nodes[i], poses[i]) for i in range(len(poses)) if which[i]]
        items.sort(key=lambda item: item[0].prim.GetPath().pathElementCount)
        for node, pose in items:
            set_world_pose(node.prim, pose)

    def teleport(self, joint_dict: dict[str, float]) -> None:
        """Write joint attributes and move links to the FK pose; the root link stays put.

        Args:
            joint_dict: joint prim path → value (rad / stage units).
        """
        if not joint_dict or not self._tree.nodes:
            return
        self.set_joint_attributes(joint_dict)
        poses, moved = self._propagate(joint_dict, all_affected=False)
        moved[0] = False
        self._write_links(poses, moved)

    def teleport_anchored(
        self, joint_dict: dict[str, float], *, anchor_prim: Usd.Prim | None = None
    ) -> None:
        """Like :meth:`teleport` but keeps ``anchor_prim`` fixed in the world.

        The whole robot (root link included) moves rigidly around the anchor (default: the
        chain start prim).

        Args:
            joint_dict: joint prim path → value (rad / stage units).
            anchor_prim: prim to keep fixed; default the chain start prim.
        """
        anchor = anchor_prim if anchor_prim is not None else self._start_prim
        if not joint_dict or not self._tree.nodes or anchor is None:
            return
        resolved = self._resolve(anchor)
        if resolved is None:
            return
        ai, a_off = resolved
        self.set_joint_attributes(joint_dict)
        full = self._read_all_joint_states()
        full.update(joint_dict)
        anchor_before = _world_pose(self._tree.nodes[ai].prim)[0] @ a_off
        poses, _ = self._propagate(full, all_affected=True)
        anchor_after = poses[ai] @ a_off
        correction = anchor_before @ anchor_after.inv()
        poses = [correction @ p for p in poses]
        self._write_links(poses, [True] * len(poses))


def _rotation_z_to(axis: np.ndarray) -> np.ndarray:
    """A rotation matrix ``A`` with ``A @ [0, 0, 1] == axis`` (unit ``axis``)."""
    z = np.array([0.0, 0.0, 1.0])
    a = np.asarray(axis, dtype=np.float64)
    if np.allclose(a, z):
        return np.eye(3)
    if np.allclose(a, -z):
        return np.diag([1.0, -1.0, -1.0])
    v = np.cross(z, a)
    s = float(np.linalg.norm(v))
    c = float(a[2])
    k = np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]]) / s
    return np.eye(3) + s * k + (1.0 - c) * (k @ k)


def _pack(types, axes, home_t, home_r, tip_t, tip_r) -> tuple[np.ndarray, np.ndarray]:
    """Packed ``(model (n, 16), tip (12,))`` for the chain kernels (see ``_kernels``)."""
    n = types.shape[0]
    model = np.empty((n, 16))
    model[:, 0] = types
    model[:, 1:4] = axes
    model[:, 4:7] = home_t
    model[:, 7:16] = home_r.reshape(n, 9)
    tip = np.concatenate([tip_t, tip_r.reshape(9)])
    return np.ascontiguousarray(model), np.ascontiguousarray(tip)


def _canonical_z(types, axes, home_t, home_r, tip_t, tip_r) -> tuple[np.ndarray, ...]:
    """Rewrite a chain so every joint moves along/about +Z, without changing the end pose.

    With ``A_k @ z = axis_k``: ``home_k' = A_{k-1}^T home_k A_k`` (translation rotated by
    ``A_{k-1}^T``) and ``tip' = A_last^T tip``, since ``Rot(a, q) A = A Rz(q)``.
    """
    n = types.shape[0]
    new_t = np.empty_like(home_t)
    new_r = np.empty_like(home_r)
    prev = np.eye(3)
    for k in range(n):
        a_k = _rotation_z_to(axes[k])
        new_t[k] = prev.T @ home_t[k]
        new_r[k] = prev.T @ home_r[k] @ a_k
        prev = a_k
    z_axes = np.zeros((n, 3))
    z_axes[:, 2] = 1.0
    return (
        types,
        z_axes,
        np.ascontiguousarray(new_t),
        np.ascontiguousarray(new_r),
        np.ascontiguousarray(prev.T @ tip_t),
        np.ascontiguousarray(prev.T @ tip_r),
    )


def set_world_pose(prim: Usd.Prim, pose: Transform) -> None:
    """Place ``prim`` at rigid world ``pose`` keeping its authored scale.

    Authors ``xformOp:translate``, ``xformOp:orient`` and ``xformOp:scale`` (in that order),
    reusing the precision of existing ops (double otherwise); the scale op keeps its authored
    value ((1, 1, 1) when there was none).
    """
    xf = UsdGeom.Xformable(prim)
    parent = prim.GetParent()
    if parent and not parent.IsPseudoRoot():
        parent_m = _world_matrix(parent)
    else:
        parent_m = np.eye(4)
    local = np.linalg.solve(parent_m, pose.matrix())
    local_pose, _ = _rigid(local)
    precision = {}
    scale_value = None
    for op in xf.GetOrderedXformOps():
        precision[op.GetOpType()] = op.GetPrecision()
        if op.GetOpType() == UsdGeom.XformOp.TypeScale and op.GetOpName() == "xformOp:scale":
            scale_value = op.Get()
    xf.ClearXformOpOrder()
    dbl = UsdGeom.XformOp.PrecisionDouble

    def _op(kind: Any, adder: Any) -> UsdGeom.XformOp:
        prec = precision.get(kind, dbl)
        name = {
            UsdGeom.XformOp.TypeTranslate: "xformOp:translate",
            UsdGeom.XformOp.TypeOrient: "xformOp:orient",
            UsdGeom.XformOp.TypeScale: "xformOp:scale",
        }[kind]
        attr = prim.GetAttribute(name)
        if attr and kind not in precision:
            prim.RemoveProperty(name)
        try:
            return adder(prec)
        except Exception:  # noqa: BLE001 - type clash with a stale attribute
            prim.RemoveProperty(name)
            return adder(prec)

    t_op = _op(UsdGeom.XformOp.TypeTranslate, xf.AddTranslateOp)
    o_op = _op(UsdGeom.XformOp.TypeOrient, xf.AddOrientOp)
    s_op = _op(UsdGeom.XformOp.TypeScale, xf.AddScaleOp)
    q = local_pose.q
    if o_op.GetPrecision() == UsdGeom.XformOp.PrecisionFloat:
        t_op.Set(
            Gf.Vec3f(*local_pose.t)
            if t_op.GetPrecision() == UsdGeom.XformOp.PrecisionFloat
            else Gf.Vec3d(*local_pose.t)
        )
        o_op.Set(Gf.Quatf(float(q[0]), Gf.Vec3f(*q[1:])))
    else:
        t_op.Set(
            Gf.Vec3f(*local_pose.t)
            if t_op.GetPrecision() == UsdGeom.XformOp.PrecisionFloat
            else Gf.Vec3d(*local_pose.t)
        )
        o_op.Set(Gf.Quatd(float(q[0]), Gf.Vec3d(*q[1:])))
    if scale_value is None:
        scale_value = (1.0, 1.0, 1.0)
    if s_op.GetPrecision() == UsdGeom.XformOp.PrecisionFloat:
        s_op.Set(Gf.Vec3f(*scale_value))
    elif s_op.GetPrecision() == UsdGeom.XformOp.PrecisionHalf:
        s_op.Set(Gf.Vec3h(*scale_value))
    else:
        s_op.Set(Gf.Vec3d(*scale_value))
