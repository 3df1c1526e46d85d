"""``RobotPoser``: IK on a robot's chain with a deterministic seed ladder, and pose application.

See docs/guides/kinematics.md#ik. Behaviour beyond the reference (documented divergences):

* The LM solve runs in a Numba kernel with the point Jacobian; the cold-start ladder
  (midpoint, ``n_random`` samples from ``numpy.random.default_rng(0)``, zeros) runs inside
  one kernel call, sequentially, stopping at the first converged seed — the same winner as
  the reference's priority selection.
* If the specified ladder does not converge, an *extended* ladder of ``extended_restarts``
  further deterministic samples (``default_rng(1)``, within limits) is tried with at least
  ``extended_iters`` iterations each (set ``extended_restarts=0`` for the reference ladder
  only). The warning is logged only when this fails too.
* Locked joints (``joint_fixed``) never take ladder values: they are seeded from the cached
  solution, else the current USD joint state, else 0 (spec §8.2 step 7 [REC]).
* Simulation hook: when a *target sink* is attached (``RobotPoser(..., target_sink=f)`` or
  ``poser.attach_engine(engine)``), ``apply_pose`` sends joint position targets instead of
  writing USD. The sink is called as ``f(values, joint_paths)`` with ``values`` a float64
  array (rad / stage units) and ``joint_paths`` the joint prim paths; ``attach_engine``
  wraps any object with ``set_joint_targets(values, names_or_indices)`` (e.g.
  ``runtime.engine.MujocoEngine``, which accepts joint paths).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pxr import Tf, Usd

from runtime.errors import SchemaError
from runtime.kinematics._tree import joint_kind
from runtime.kinematics.chain import KinematicChain
from runtime.kinematics.ik import (
    IKSolver,
    IKSolverLM,
    IKSolverRegistry,
    build_cold_start_seeds,
    check_lm_kwargs,
    ik_lm_batch,
    ik_lm_with_error,
)
from runtime.kinematics.math import Transform, pose_error
from runtime.kinematics.xform import rigid_and_scale, world_matrix

__all__ = [
    "PoseResult",
    "RobotPoser",
    "TargetSink",
    "apply_joint_state",
    "apply_joint_state_anchored",
    "build_cold_start_seeds",
    "validate_robot_schema",
]

_LOG = logging.getLogger(__name__)

#: ``f(values, joint_paths)`` receiving joint position targets while a simulation runs.
TargetSink = Callable[[np.ndarray, list[str]], Any]


@dataclass
class PoseResult:
    """Result of an IK solve or named-pose query.

    Attributes:
        success: the solve converged / the stored pose is valid.
        joints: joint prim path → value [rad or stage units], chain order.
        joint_fixed: joint prim path → locked flag.
        start_link: chain start prim path.
        end_link: chain end prim path.
        target_position: requested target [x, y, z] in the robot-base frame, or None.
        target_orientation: requested target [w, x, y, z] in the robot-base frame, or None.
    """

    success: bool
    joints: dict[str, float] = field(default_factory=dict)
    joint_fixed: dict[str, bool] = field(default_factory=dict)
    start_link: str = ""
    end_link: str = ""
    target_position: list[float] | None = None
    target_orientation: list[float] | None = None


def validate_robot_schema(robot_prim: Usd.Prim) -> bool:
    """True if ``robot_prim`` is valid and carries ``IsaacRobotAPI``."""
    return (
        bool(robot_prim)
        and robot_prim.IsValid()
        and ("IsaacRobotAPI" in robot_prim.GetAppliedSchemas())
    )


_build_cold_start_seeds = build_cold_start_seeds  # (the spec's ladder: runtime.kinematics.ik)


def _send_targets(sink: TargetSink, joint_dict: dict[str, float]) -> None:
    paths = list(joint_dict)
    sink(np.array([float(joint_dict[p]) for p in paths], dtype=np.float64), paths)


class RobotPoser:
    """IK controller bound to one robot (Isaac ``RobotPoser`` API).

    Args:
        stage: USD stage containing the robot.
        robot_prim: robot root prim.
        start_prim: chain start (link or site), optional.
        end_prim: chain end (link or site), optional.
        solver_name: registered IK solver name (default ``"lm"``).
        debug: log chain-building details.
        target_sink: optional ``f(values, joint_paths)``; when set, ``apply_pose`` sends joint
            targets instead of writing USD (simulation running).
        extended_restarts: extra deterministic restarts after the specified ladder fails
            (0 = reference behaviour).
        extended_iters: minimum iterations per extended restart.

    Raises:
        KeyError: unknown solver name.
        SchemaError: the robot prim or a chain end prim does not exist.
    """

    def __init__(
        self,
        stage: Usd.Stage,
        robot_prim: Usd.Prim,
        start_prim: Usd.Prim | None = None,
        end_prim: Usd.Prim | None = None,
        solver_name: str | None = None,
        *,
        debug: bool = False,
        target_sink: TargetSink | None = None,
        extended_restarts: int = 40,
        extended_iters: int = 100,
    ) -> None:
        if not robot_prim or not robot_prim.IsValid():
            raise SchemaError(
                str(robot_prim.GetPath()) if robot_prim else "",
                "",
                "robot prim does not exist",
                "an existing prim",
            )
        self._stage = stage
        self._robot_prim = robot_prim
        self._solver = IKSolverRegistry.get(solver_name)
        self._debug = debug
        self._chain: KinematicChain | None = None
        self._chain_joints: list = []
        self._chain_paths: list[str] = []
        self._chain_ends = ("", "")
        self._last_solution: np.ndarray | None = None
        self._is_revolute: list[bool] = []
        self._target_sink = target_sink
        self._start_pose_cache: tuple[Transform, Transform] | None = None
        # any authored change on the stage may move the start prim: drop the cached pose
        # (Tf keeps only a weak reference to the bound method: the listener does not keep the
        # poser alive, and it is revoked when the poser is collected)
        self._listener = Tf.Notice.Register(
            Usd.Notice.ObjectsChanged, self._on_stage_changed, stage
        )
        self.extended_restarts = int(extended_restarts)
        self.extended_iters = int(extended_iters)
        if start_prim is not None and end_prim is not None:
            self.set_chain(start_prim, end_prim)

    # ------------------------------------------------------------------ properties
    @property
    def stage(self) -> Usd.Stage:
        """The USD stage."""
        return self._stage

    @property
    def robot_prim(self) -> Usd.Prim:
        """The robot root prim."""
        return self._robot_prim

    @property
    def start_prim(self) -> Usd.Prim | None:
        """Chain start prim, or None."""
        return self._chain.start_prim if self._chain else None

    @property
    def end_prim(self) -> Usd.Prim | None:
        """Chain end prim, or None."""
        return self._chain.end_prim if self._chain else None

    @property
    def joints(self) -> list:
        """Copy of the chain's joint list."""
        return self._chain.joints if self._chain else []

    @property
    def chain(self) -> KinematicChain | None:
        """The underlying KinematicChain, or None."""
        return self._chain

    @property
    def solver(self) -> IKSolver:
        """The active IKSolver instance."""
        return self._solver

    @solver.setter
    def solver(self, value: IKSolver) -> None:
        self._solver = value

    @property
    def target_sink(self) -> TargetSink | None:
        """The attached joint-target sink (None = teleport mode)."""
        return self._target_sink

    # ------------------------------------------------------------------ configuration
    def attach_engine(self, engine: Any) -> None:
        """Route ``apply_pose`` to ``engine.set_joint_targets(values, joint_paths)``."""
        self._target_sink = lambda values, paths: engine.set_joint_targets(values, paths)

    def attach_target_sink(self, sink: TargetSink | None) -> None:
        """Attach (or with ``None`` detach) a joint-target sink."""
        self._target_sink = sink

    def set_chain(self, start_prim: Usd.Prim, end_prim: Usd.Prim) -> None:
        """Build a new chain between the two prims and clear the cached solution."""
        self.use_chain(
            KinematicChain(self._stage, self._robot_prim, start_prim, end_prim, debug=self._debug)
        )

    def use_chain(self, chain: KinematicChain) -> None:
        """Use an already built chain (of this stage and robot); clear the cached solution.

        A chain holds no solving state, so one built chain may serve many posers of a stage
        that is not edited in between (batch workers build it once per scene).
        """
        start_prim, end_prim = chain.start_prim, chain.end_prim
        if start_prim is None or end_prim is None:
            raise ValueError("use_chain: the chain has no start or end prim")
        self._chain = chain
        self._last_solution = None
        self._chain_joints = self._chain.joints
        self._chain_paths = [j.prim_path for j in self._chain_joints]
        self._chain_ends = (str(start_prim.GetPath()), str(end_prim.GetPath()))
        self._is_revolute = [j.is_revolute for j in self._chain_joints]
        self._start_pose_cache = None

    def _to_chain_order(self, values: Any) -> np.ndarray:
        if isinstance(values, dict):
            return np.array([float(values.get(j.prim_path, 0.0)) for j in self.joints])
        return np.asarray(values, dtype=np.float64).copy()

    def set_seed(self, seed: dict[str, float] | np.ndarray | list[float] | None) -> None:
        """Set (or with ``None`` clear) the cached solution used as the next seed."""
        self._last_solution = None if seed is None else self._to_chain_order(seed)

    def joints_to_native_values(self, joint_dict: dict[str, float]) -> list[float]:
        """Chain-order values in USD units (degrees for revolute, unchanged for prismatic)."""
        out = []
        for joint in self.joints:
            value = float(joint_dict.get(joint.prim_path, 0.0))
            out.append(math.degrees(value) if joint.is_revolute else value)
        return out

    # ------------------------------------------------------------------ IK
    def _start_pose(self) -> Transform:
        """Current start-prim pose in the robot frame (cached until the stage changes)."""
        assert self._chain is not None
        if self._start_pose_cache is None:
            robot = world_matrix(self._robot_prim)
            start = world_matrix(self._chain.start_prim)
            pose = rigid_and_scale(np.linalg.solve(robot, start))[0]
            self._start_pose_cache = (pose, pose.inv())
        return self._start_pose_cache[0]

    def _start_pose_inv(self) -> Transform:
        self._start_pose()
        assert self._start_pose_cache is not None
        return self._start_pose_cache[1]

    def _on_stage_changed(self, notice: Any, sender: Any) -> None:
        self._start_pose_cache = None

    def _locked_values(self, mask: np.ndarray) -> np.ndarray:
        """Values for locked joints: cache, else current USD state, else 0."""
        assert self._chain is not None
        if self._last_solution is not None and self._last_solution.shape == mask.shape:
            return self._last_solution.copy()
        states = self._chain.read_joint_states()
        return np.array([states.get(j.prim_path, 0.0) for j in self._chain.joints])

    def _attempt_python(
        self, target_local: Transform, q0: np.ndarray, kwargs: dict[str, Any]
    ) -> tuple[np.ndarray, float]:
        assert self._chain is not None
        q = np.asarray(self._solver.solve(self._chain, target_local, q0, **kwargs), dtype=float)
        err = pose_error(target_local, self._chain.compute_fk(q)[0])
        return q, float(np.sqrt(err @ err))

    def _run_seeds(
        self,
        target_local: Transform,
        seeds: list[np.ndarray],
        tolerance: float,
        kwargs: dict[str, Any],
    ) -> tuple[np.ndarray, float, bool]:
        """First converged seed in priority order, else the lowest error (ties → earlier)."""
        assert self._chain is not None
        if type(self._solver) is IKSolverLM:
            check_lm_kwargs(kwargs)
            if len(seeds) == 1:
                fixed = kwargs.get("joint_fixed")
                lm_kwargs = {k: v for k, v in kwargs.items() if k != "joint_fixed"}
                q, err = ik_lm_with_error(
                    self._chain, seeds[0], target_local, joint_fixed=fixed, **lm_kwargs
                )
                return q, err, err < tolerance
            q, err, idx = ik_lm_batch(
                self._chain,
                target_local.t[None],
                target_local.q[None],
                np.asarray(seeds)[None],
                accept_tolerance=tolerance,
                **kwargs,
            )
            return q[0], float(err[0]), bool(idx[0] >= 0)
        best: tuple[np.ndarray, float] | None = None
        for seed in seeds:
            q, err = self._attempt_python(target_local, seed, kwargs)
            if err < tolerance:
                return q, err, True
            if best is None or err < best[1]:
                best = (q, err)
        assert best is not None
        return best[0], best[1], False

    def solve_ik(
        self,
        target: Transform,
        seed: dict[str, float] | np.ndarray | list[float] | None = None,
        *,
        tolerance: float = 1e-4,
        **solver_kwargs: Any,
    ) -> PoseResult:
        """Solve IK for the chain end to reach ``target`` (robot-base frame).

        Seeding: an explicit ``seed`` gives exactly one attempt; otherwise the cached last
        solution is tried first, then the cold-start ladder (and the extended ladder).

        Args:
            target: desired end pose in the robot-base frame.
            seed: initial guess (dict by joint path, or chain-order array), or None.
            tolerance: convergence threshold on the unweighted pose-error norm.
            **solver_kwargs: forwarded to the solver (``lam``, ``iters``, ``tol``, ``w_rot``,
                ``w_pos``, ``max_step``, ``null_space_bias``, ``joint_fixed`` as a dict
                joint path → bool).

        Returns:
            PoseResult; on failure ``joints`` holds the lowest-error attempt.
        """
        chain = self._chain
        if chain is None or not self._chain_joints:
            _LOG.warning(
                "%s: IK not solved: %s",
                self._robot_prim.GetPath(),
                "no chain set (set_chain)" if chain is None else "the chain has no movable joint",
            )
            return PoseResult(success=False)
        joints = self._chain_joints
        paths = self._chain_paths
        jf = solver_kwargs.get("joint_fixed")
        if isinstance(jf, dict):
            mask = np.array([bool(jf.get(p, False)) for p in paths])
        else:
            mask = np.zeros(len(paths), dtype=bool)
        kwargs = dict(solver_kwargs)
        kwargs["joint_fixed"] = mask
        target_local = self._start_pose_inv() @ target

        used_ladder = False
        from_cache = False
        if seed is not None:
            q, err, ok = self._run_seeds(
                target_local, [self._to_chain_order(seed)], tolerance, kwargs
            )
        else:
            cached: tuple[np.ndarray, float, bool] | None = None
            if self._last_solution is not None:
                cached = self._run_seeds(
                    target_local, [self._last_solution.copy()], tolerance, kwargs
                )
                from_cache = True
            if cached is not None and cached[2]:
                q, err, ok = cached
            else:
                used_ladder = True
                ladder = build_cold_start_seeds(joints)
                if mask.any():
                    locked = self._locked_values(mask)
                    ladder = [np.where(mask, locked, s) for s in ladder]
                q, err, ok = self._run_seeds(target_local, ladder, tolerance, kwargs)
                if not ok and self.extended_restarts > 0:
                    extra = build_cold_start_seeds(
                        joints, n_random=self.extended_restarts, rng_seed=1
                    )[1:-1]
                    if mask.any():
                        extra = [np.where(mask, locked, s) for s in extra]
                    ext_kwargs = dict(kwargs)
                    ext_kwargs["iters"] = max(int(kwargs.get("iters", 30)), self.extended_iters)
                    q2, err2, ok2 = self._run_seeds(target_local, extra, tolerance, ext_kwargs)
                    if ok2 or err2 < err:
                        q, err, ok = q2, err2, ok2
                if not ok and cached is not None and cached[1] < err:
                    q, err = cached[0], cached[1]
        if ok:
            self._last_solution = q.copy()
        elif used_ladder:
            _LOG.warning(
                "solve_ik: cold-start IK failed across the seed ladder%s; best pose-error was "
                "%.4f. Pass seed= with a configuration near the expected solution.",
                " (with stale-cache fallback)" if from_cache else "",
                err,
            )
        return PoseResult(
            success=bool(ok),
            joints=dict(zip(paths, np.asarray(q, dtype=np.float64).tolist(), strict=True)),
            joint_fixed=dict(zip(paths, mask.tolist(), strict=True)),
            start_link=self._chain_ends[0],
            end_link=self._chain_ends[1],
            target_position=np.asarray(target.t, dtype=np.float64).tolist(),
            target_orientation=np.asarray(target.q, dtype=np.float64).tolist(),
        )

    def solve_ik_seeded(
        self, target: Transform, seed: np.ndarray, *, tolerance: float = 1e-4
    ) -> tuple[np.ndarray, bool]:
        """One attempt from ``seed``: what ``solve_ik(target, seed=seed)`` computes, as arrays.

        For callers that solve every few steps (the run loop's IK driver): the same solve,
        without building the :class:`PoseResult`'s dictionaries.

        Args:
            target: desired end pose in the robot-base frame.
            seed: initial guess, chain order, float64 (n,).
            tolerance: convergence threshold on the unweighted pose-error norm.

        Returns:
            ``(joints, success)``: chain-order joint values (float64 (n,)) and whether the
            pose error is below ``tolerance``.
        """
        if self._chain is None or not self._chain_joints:
            return np.zeros(0), False
        kwargs = {"joint_fixed": np.zeros(len(self._chain_paths), dtype=bool)}
        target_local = self._start_pose_inv() @ target
        q, _, ok = self._run_seeds(target_local, [self._to_chain_order(seed)], tolerance, kwargs)
        if ok:
            self._last_solution = q.copy()
        return np.asarray(q, dtype=np.float64), bool(ok)

    def solve_ik_batch(
        self,
        target_positions: Any,
        target_orientations: Any,
        seeds: Any = None,
        *,
        tolerance: float = 1e-4,
        **solver_kwargs: Any,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Solve many targets (robot-base frame) in one kernel call.

        Args:
            target_positions: float64 (N, 3), robot-base frame.
            target_orientations: float64 (N, 4) wxyz, robot-base frame.
            seeds: (N, n) near seeds (one attempt each), or None for the cold-start ladder
                followed by the extended ladder.
            tolerance: convergence threshold on the pose-error norm.
            **solver_kwargs: LM keywords (``joint_fixed`` as a bool array in chain order).

        Returns:
            ``(q (N, n), success (N,) bool)``.
        """
        chain = self._chain
        if chain is None or not chain.joints:
            raise ValueError("RobotPoser has no chain with movable joints")
        pos = np.asarray(target_positions, dtype=np.float64).reshape(-1, 3)
        quat = np.asarray(target_orientations, dtype=np.float64).reshape(-1, 4)
        start = self._start_pose_inv()
        if not (np.allclose(start.t, 0.0) and np.allclose(start.q, [1, 0, 0, 0])):
            local = [start @ Transform(p, q) for p, q in zip(pos, quat, strict=True)]
            pos = np.array([t.t for t in local])
            quat = np.array([t.q for t in local])
        if seeds is None:
            ladder = np.array(build_cold_start_seeds(chain.joints))
            if self.extended_restarts > 0:
                extra = np.array(
                    build_cold_start_seeds(
                        chain.joints, n_random=self.extended_restarts, rng_seed=1
                    )[1:-1]
                )
                ladder = np.vstack([ladder, extra])
            jf = solver_kwargs.get("joint_fixed")
            if jf is not None:
                mask = np.asarray(jf, dtype=bool)
                if mask.shape == (len(chain.joints),) and mask.any():
                    # locked joints never take ladder values
                    ladder = np.where(mask, self._locked_values(mask), ladder)
            seeds = ladder
            solver_kwargs.setdefault("iters", self.extended_iters)
        q, _, idx = ik_lm_batch(
            chain, pos, quat, seeds, accept_tolerance=tolerance, **solver_kwargs
        )
        return q, idx >= 0

    # ------------------------------------------------------------------ apply
    def apply_pose(self, joint_dict: dict[str, float] | PoseResult) -> None:
        """Apply joint values, keeping the chain start prim fixed (or send targets).

        Args:
            joint_dict: joint path → value, or a PoseResult (a failed one is refused with
                a warning).
        """
        if self._chain is None:
            return
        if isinstance(joint_dict, PoseResult):
            if not joint_dict.success:
                _LOG.warning(
                    "apply_pose: refusing to apply a failed PoseResult; pass "
                    "result.joints explicitly to apply the best attempt anyway."
                )
                return
            joint_dict = joint_dict.joints
        if self._target_sink is not None:
            _send_targets(self._target_sink, joint_dict)
            return
        if self._chain.start_prim is not None:
            self._chain.teleport_anchored(joint_dict)
        else:
            self._chain.teleport(joint_dict)

    @classmethod
    def apply_pose_by_target(
        cls,
        stage: Usd.Stage,
        robot_prim: Usd.Prim,
        start_prim: Usd.Prim,
        end_prim: Usd.Prim,
        target: Transform,
        seed: Any = None,
    ) -> PoseResult:
        """Solve IK and apply the result (no IsaacRobotAPI → ``PoseResult(success=False)``)."""
        if not validate_robot_schema(robot_prim):
            return PoseResult(success=False)
        poser = cls(stage, robot_prim, start_prim, end_prim)
        result = poser.solve_ik(target, seed=seed)
        if result.success:
            poser.apply_pose(result.joints)
        return result


def apply_joint_state(
    stage: Usd.Stage,
    robot_prim: Usd.Prim,
    joint_dict: dict[str, float],
    *,
    target_sink: TargetSink | None = None,
) -> None:
    """Apply joint values: root-anchored teleport, or targets when ``target_sink`` is given.

    Args:
        stage: USD stage.
        robot_prim: robot root prim.
        joint_dict: joint path → value (rad / stage units).
        target_sink: optional running-simulation sink ``f(values, joint_paths)``.
    """
    if target_sink is not None:
        _send_targets(target_sink, joint_dict)
        return
    KinematicChain(stage, robot_prim).teleport(joint_dict)


def apply_joint_state_anchored(
    stage: Usd.Stage,
    robot_prim: Usd.Prim,
    joint_dict: dict[str, float],
    anchor_prim: Usd.Prim,
    *,
    target_sink: TargetSink | None = None,
) -> None:
    """Apply joint values keeping ``anchor_prim`` fixed (or send targets).

    Args:
        stage: USD stage.
        robot_prim: robot root prim.
        joint_dict: joint path → value (rad / stage units).
        anchor_prim: prim kept at its world pose.
        target_sink: optional running-simulation sink ``f(values, joint_paths)``.
    """
    if target_sink is not None:
        _send_targets(target_sink, joint_dict)
        return
    KinematicChain(stage, robot_prim).teleport_anchored(joint_dict, anchor_prim=anchor_prim)


def is_revolute_joint(stage: Usd.Stage, path: str) -> bool | None:
    """True/False for an existing revolute/other joint prim, None when the prim is missing."""
    prim = stage.GetPrimAtPath(path) if path else None
    if not prim:
        return None
    return joint_kind(prim) == 0
