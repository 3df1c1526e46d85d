"""Kinematic tree and chain built from USD physics joints (Isaac ``KinematicChain`` semantics).

``KinematicChain(stage, robot_prim, start_prim=None, end_prim=None)`` builds the link tree
of the robot (UsdPhysics joints, either authoring direction), and, when both end prims are
given, the movable-joint chain between them (docs/guides/kinematics.md#chains). Differences
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

This module is the public path of the pieces it assembles from private modules: the link tree
read from USD (``_tree``), the kernel arrays (``_packing``), joint-state I/O and teleport
(``_joint_state``) and prim world poses (``_xform``).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from pxr import Usd

import runtime.schema  # noqa: F401  (registers the Isaac schemas before any stage)
from runtime._compile.jit import CompiledCall
from runtime._compile.native_call import native_chain_call, no_call
from runtime.errors import SchemaError
from runtime.kinematics import _joint_state
from runtime.kinematics import _kernels as K
from runtime.kinematics._packing import canonical_z, pack_chain, tree_kernel_arrays
from runtime.kinematics._tree import NO_MOTION, PRISMATIC, REVOLUTE, LinkNode, LinkTree
from runtime.kinematics.math import Transform, quat_from_matrix, quat_to_matrix
from runtime.kinematics.xform import world_pose

# single-configuration calls through their compiled entry (no per-call type dispatch)
_FK = CompiledCall(K.chain_fk_kernel)
_FK_JACOBIAN = CompiledCall(K.chain_fk_jacobian_kernel)
_new_transform = object.__new__

__all__ = ["Joint", "KinematicChain", "LinkNode"]

_LOG = logging.getLogger(__name__)


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
        SchemaError: invalid joint data (NaN limits, zero quaternions) on the robot; a chain
            end prim that does not exist (an end not on the robot, or ends without a movable
            joint between them, give an empty chain as in Isaac, with a warning).
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
        self._tree = LinkTree(stage, robot_prim)
        self._joints: list[Joint] = []
        self._arrays_empty()
        if start_prim is not None and end_prim is not None:
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

    @property
    def kernel_limits(self) -> np.ndarray:
        """Lower / upper joint limits for the IK kernels, float64 (2, n) (do not modify)."""
        return self._limits

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
        self._arrays = pack_chain(*self._frame_arrays)
        self._unbind_native()
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
                prim_pose, _ = world_pose(prim)
                return ni, self._tree.current[ni].inv() @ prim_pose
            parent = parent.GetParent()
        # the robot prim (or another ancestor of the root link, e.g. the converter's default
        # prim that the root is fixed to) moves rigidly with the root link
        root_path = self._tree.nodes[0].prim.GetPath() if self._tree.nodes else None
        if root_path is not None and root_path.HasPrefix(prim.GetPath()):
            prim_pose, _ = world_pose(prim)
            return 0, self._tree.current[0].inv() @ prim_pose
        return None

    def _build_chain(self) -> None:
        tree = self._tree
        robot = str(self._robot_prim.GetPath())
        ends = []
        for which, prim in (("start", self._start_prim), ("end", self._end_prim)):
            if not prim or not prim.IsValid():  # (an FK of no joints would return the origin)
                where = str(prim.GetPath()) if prim else ""
                raise SchemaError(where, "", f"chain {which} prim does not exist", "a prim")
            resolved = self._resolve(prim) if tree.nodes else None
            if resolved is None:  # (Isaac's chain is empty then: kept, but said)
                _LOG.warning(
                    "%s: the chain %s prim is not a link of the robot %s (nor under one): "
                    "the chain has no joint",
                    prim.GetPath(),
                    which,
                    robot,
                )
                return
            ends.append(resolved)
        start, end = ends
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
        if not joints:  # (Isaac's chain is empty then: kept, but said)
            _LOG.warning(
                "%s: no movable joint between the chain's start %s and its end: FK is the "
                "identity and IK cannot move it",
                self._end_prim.GetPath(),
                self._start_prim.GetPath(),
            )
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
        self._arrays = pack_chain(*canonical_z(*self._frame_arrays))
        self._unbind_native()
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
    def _unbind_native(self) -> None:
        # native calls over the packed arrays are made at first use (runtime._compile.native_call)
        self.__dict__.pop("fk", None)
        self.__dict__.pop("fk_and_jacobian", None)
        self._fk_jacobian_native: Any = self._bind_fk_jacobian

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
        """Fast end pose: ``(position (3,), quaternion wxyz (4,))`` in the chain-local frame.

        The first call makes ``chain.fk`` the kernel's native call
        (``runtime._compile.native_call``) for a float64 (n,) array ``q``, with this method's
        dispatcher path for anything else: the same results and errors, without the
        dispatcher's cost per call.
        """
        native = native_chain_call(self, K.chain_fk_kernel, 0, self._fk_dispatch)
        if native is not None:
            self.__dict__["fk"] = native
        return self._fk_dispatch(q)

    def _fk_dispatch(self, q: Any) -> tuple[np.ndarray, np.ndarray]:
        pos = np.empty(3)
        quat = np.empty(4)
        model, tip = self._arrays
        # (the compiled entry: every argument is C-contiguous float64, checked by _q)
        (_FK.entry or _FK.record)(model, tip, self._q(q), pos, quat)
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

    def fk_and_jacobian(self, q: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Fast end pose and point Jacobian: ``(position (3,), quaternion wxyz (4,), J (6, n))``.

        ``J``'s rows are [ω; v] with v the end point's velocity, chain-local frame (as
        ``compute_fk_and_jacobian(q, jacobian="point")``). Bound like :meth:`fk`.
        """
        native = native_chain_call(self, K.chain_fk_jacobian_kernel, 6, self._fk_j_dispatch)
        if native is not None and self._joints:
            self.__dict__["fk_and_jacobian"] = native
        return self._fk_j_dispatch(q)

    def _fk_j_dispatch(self, q: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        end, jac = self.compute_fk_and_jacobian(q, jacobian="point")
        return end.t, end.q, jac

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
        result = self._fk_jacobian_native(q)  # None unless q is a float64 (n,) array
        if result is not None and jacobian == "point":
            pos, quat, jac = result
            end = _new_transform(Transform)  # (Transform.adopt, inlined: a hot path)
            end.t = pos
            end.q = quat
            return end, jac
        n = len(self._joints)
        if n == 0:
            return Transform(), np.zeros((6, 0))
        if jacobian not in ("spatial", "point"):
            raise ValueError(f"jacobian must be 'spatial' or 'point', got {jacobian!r}")
        if result is not None:
            pos, quat, jac = result
        else:
            pos = np.empty(3)
            quat = np.empty(4)
            jac = np.empty((6, n))
            model, tip = self._arrays
            (_FK_JACOBIAN.entry or _FK_JACOBIAN.record)(model, tip, self._q(q), pos, quat, jac)
        if jacobian == "spatial":
            jac[3:] -= np.cross(jac[:3].T, pos).T
        return Transform.adopt(pos, quat), jac

    def _bind_fk_jacobian(self, q: Any) -> Any:
        """The first call: bind the native FK + Jacobian call, then make this call with it."""
        native = native_chain_call(self, K.chain_fk_jacobian_kernel, 6)
        self._fk_jacobian_native = native if native is not None and self._joints else no_call
        return self._fk_jacobian_native(q)

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
        order = self.tree_joint_paths() if joint_paths is None else list(joint_paths)
        robot, _ = world_pose(self._robot_prim)
        root_in_robot = robot.inv() @ self._tree.current[0]
        return tree_kernel_arrays(self._tree.nodes, root_in_robot, order)

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
    def read_joint_states(self) -> dict[str, float]:
        """Current joint values of the chain joints (rad / stage units) by joint path."""
        allowed = set(self.joint_paths)
        states = _joint_state.read_joint_states(self._stage, self._tree)
        return {k: v for k, v in states.items() if k in allowed}

    def set_joint_attributes(self, joint_dict: dict[str, float]) -> None:
        """Write drive targets and joint states (degrees for revolute) for listed joints."""
        _joint_state.set_joint_attributes(self._stage, joint_dict)

    def teleport(self, joint_dict: dict[str, float]) -> None:
        """Write joint attributes and move links to the FK pose; the root link stays put.

        Args:
            joint_dict: joint prim path → value (rad / stage units).
        """
        if not joint_dict or not self._tree.nodes:
            return
        self.set_joint_attributes(joint_dict)
        poses, moved = _joint_state.propagate(self._tree, joint_dict, all_affected=False)
        moved[0] = False
        _joint_state.write_link_poses(self._tree, poses, moved)

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
        self.set_joint_attributes(joint_dict)
        _joint_state.move_anchored(self._stage, self._tree, joint_dict, *resolved)
