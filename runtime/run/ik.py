"""IK: waypoint schedules interpolated over time, and the driver turning them into targets.

The driver re-solves every ``ik_every`` steps from the previous solution and hands the joint
targets to the engine's drives.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from runtime.errors import SimrtError
from runtime.run._ik_fast import SeededSolve, slerp
from runtime.run.config import IkWaypoint

LOGGER = logging.getLogger("runtime.run")

__all__ = ["end_effector_chain", "IkDriver", "IkSchedule", "build_schedules"]


class IkSchedule:
    """Time-interpolated target of one link.

    Args:
        link: end link name or path.
        waypoints: this link's waypoints (any order; sorted by time, stable).
    """

    def __init__(self, link: str, waypoints: Sequence[IkWaypoint]) -> None:
        if not waypoints:
            raise ValueError(f"IK schedule for {link!r} has no waypoints")
        self.link = link
        self.waypoints = tuple(sorted(waypoints, key=lambda w: w.time))
        # Python floats: target_values' arithmetic is the same IEEE as NumPy's, cheaper
        self._time_list = [float(w.time) for w in self.waypoints]
        self._position_list = [tuple(float(v) for v in w.position) for w in self.waypoints]

    def needs_start_orientation(self) -> bool:
        """True when a waypoint leaves its orientation to the start orientation."""
        return any(w.orientation is None for w in self.waypoints)

    def target(
        self, time: float, start_orientation: Sequence[float] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Target pose at ``time``.

        Args:
            time: simulation time [s].
            start_orientation: (w, x, y, z) used for waypoints without orientation.

        Returns:
            ``(position (3,), orientation (4,) wxyz)`` in the robot-base frame.
        """
        position, orientation = self.target_values(time, start_orientation)
        return np.array(position, dtype=np.float64), np.array(orientation, dtype=np.float64)

    def target_values(
        self, time: float, start_orientation: Sequence[float] | None = None
    ) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """:meth:`target` as Python floats: ``((x, y, z), (w, x, y, z))`` (the IK driver's)."""
        start_q = (1.0, 0.0, 0.0, 0.0) if start_orientation is None else start_orientation

        def quat(index: int) -> tuple[float, ...]:
            q = self.waypoints[index].orientation
            return tuple(float(v) for v in (start_q if q is None else q))

        times = self._time_list
        if time <= times[0]:
            lo = hi = 0
        elif time >= times[-1]:
            lo = hi = len(times) - 1
        else:
            hi = bisect.bisect_right(times, time)
            lo = hi - 1
        p_lo = self._position_list[lo]
        if lo == hi:
            return p_lo, quat(lo)
        p_hi = self._position_list[hi]
        span = times[hi] - times[lo]
        s = 0.0 if span <= 0 else (time - times[lo]) / span
        position = tuple(a + s * (b - a) for a, b in zip(p_lo, p_hi, strict=True))
        return position, slerp(quat(lo), quat(hi), s)


def build_schedules(waypoints: Iterable[IkWaypoint]) -> list[IkSchedule]:
    """Group waypoints by link (first-appearance order) into schedules."""
    grouped: dict[str, list[IkWaypoint]] = {}
    for waypoint in waypoints:
        grouped.setdefault(waypoint.link, []).append(waypoint)
    return [IkSchedule(link, items) for link, items in grouped.items()]


# ---------------------------------------------------------------------------- IK driving


def _resolve_link(stage: Any, robot_prim: Any, link: str) -> str:
    from runtime.errors import SchemaError

    if link.startswith("/"):
        prim = stage.GetPrimAtPath(link)
        if not prim or not prim.IsValid():
            raise SchemaError(link, "", "IK target link does not exist")
        return link
    from pxr import Usd

    matches = [
        str(p.GetPath())
        for p in Usd.PrimRange(robot_prim)
        if p.GetName() == link and p.GetTypeName() not in ("Mesh", "Cube", "Sphere")
    ]
    if not matches:
        raise SchemaError(
            str(robot_prim.GetPath()),
            "",
            f"IK target link {link!r} not found under the robot",
            "a link prim name or full path",
        )
    return matches[0]


def _root_link(stage: Any, robot_prim: Any) -> str:
    """First link of the robot: the articulation-root body, else the first robot link."""
    from pxr import Usd, UsdPhysics

    for prim in Usd.PrimRange(robot_prim):
        if prim.HasAPI(UsdPhysics.ArticulationRootAPI) and prim.HasAPI(UsdPhysics.RigidBodyAPI):
            return str(prim.GetPath())
    try:
        from runtime.schema.utils import get_all_robot_links

        links = get_all_robot_links(stage, robot_prim)
        if links:
            return str(links[0].GetPath())
    except Exception:  # noqa: BLE001 - fall through to the rigid-body walk
        pass
    for prim in Usd.PrimRange(robot_prim):
        if prim.HasAPI(UsdPhysics.RigidBodyAPI):
            return str(prim.GetPath())
    from runtime.errors import SchemaError

    raise SchemaError(str(robot_prim.GetPath()), "", "robot has no rigid-body link for IK")


def _pose_in(stage: Any, frame_prim: Any, prim: Any, transform_type: Any) -> Any:
    """Rigid pose of ``prim`` in ``frame_prim``'s frame (authored USD transforms)."""
    from pxr import Usd, UsdGeom

    cache = UsdGeom.XformCache(Usd.TimeCode.Default())
    frame = np.array(cache.GetLocalToWorldTransform(frame_prim)).T  # column convention
    world = np.array(cache.GetLocalToWorldTransform(prim)).T
    m = np.linalg.solve(frame, world)
    u, _, vt = np.linalg.svd(m[:3, :3])  # drop any scale
    m[:3, :3] = u @ vt
    return transform_type.from_matrix(m)


def end_effector_chain(stage: Any, robot_prim: Any, link: str) -> tuple[Any, Any]:
    """The IK chain from the robot's root link to ``link``, and its start pose.

    Args:
        stage: the stage.
        robot_prim: the robot prim.
        link: the end-effector link (a prim name under the robot, or a path).

    Returns:
        ``(chain, start_in_robot)``: the :class:`~runtime.kinematics.chain.KinematicChain`
        (targets are given in its start frame, the root link's) and that frame's pose in
        the robot prim's frame (a :class:`~runtime.kinematics.math.Transform`).

    Raises:
        SchemaError: the link is not under the robot.
        SimrtError: no movable joint between the root link and ``link``.
    """
    from runtime.kinematics.chain import KinematicChain
    from runtime.kinematics.math import Transform

    root = _root_link(stage, robot_prim)
    end = _resolve_link(stage, robot_prim, link)
    chain = KinematicChain(
        stage, robot_prim, stage.GetPrimAtPath(root), stage.GetPrimAtPath(str(end))
    )
    if not chain.joint_paths:
        raise SimrtError(f"{end}: no movable joints between {root} and the IK link")
    return chain, _pose_in(stage, robot_prim, stage.GetPrimAtPath(root), Transform)


class IkDriver:
    """Solves IK on the schedules and sends joint targets to the engine."""

    def __init__(
        self,
        stage: Any,
        robot_prim: Any,
        dof_table: Any,
        schedules: Sequence[IkSchedule],
        engine: Any,
        every: int,
        until_contact: bool,
        chains: dict[tuple[str, str], Any] | None = None,
    ) -> None:
        from runtime.kinematics.math import Transform
        from runtime.kinematics.poser import RobotPoser

        self._transform = Transform
        self.engine = engine
        self.every = max(int(every), 1)
        self.until_contact = until_contact
        self.frozen_at: float | None = None
        self._dt: float | None = None  # the step size update() was given
        self.disabled_reason: str | None = None
        self.failures = 0
        self.ladders = 0
        self.solves = 0
        root = _root_link(stage, robot_prim)
        self.items: list[dict[str, Any]] = []
        for schedule in schedules:
            end = _resolve_link(stage, robot_prim, schedule.link)
            key = (str(root), str(end))
            built = chains.get(key) if chains is not None else None
            if built is not None:  # (a caller's memo: the stage was not edited since)
                poser = RobotPoser(stage, robot_prim)
                poser.use_chain(built)
            else:
                poser = RobotPoser(
                    stage, robot_prim, stage.GetPrimAtPath(root), stage.GetPrimAtPath(end)
                )
                if chains is not None and poser.chain is not None:
                    chains[key] = poser.chain
            chain = poser.chain
            if chain is None or not chain.joint_paths:
                raise SimrtError(f"{end}: no movable joints between {root} and the IK link")
            indices = np.array([dof_table.index_of(p) for p in chain.joint_paths], np.int64)
            start_in_robot = _pose_in(stage, robot_prim, stage.GetPrimAtPath(root), Transform)
            self.items.append(
                {
                    "schedule": schedule,
                    "poser": poser,
                    "chain": chain,
                    "indices": indices,
                    "index_list": [int(i) for i in indices],
                    "send": _target_sender(engine, [int(i) for i in indices]),
                    # the poser's joint order is the chain's: its array answer can be used
                    "seeded": list(poser._chain_paths) == list(chain.joint_paths),
                    "start_orientation": None,
                    "q_from": None,
                    "q_to": None,
                    "end": end,
                    "start_in_robot": start_in_robot,
                    "failing": False,
                    "fast": None,  # its SeededSolve, made at the first seeded solve
                }
            )
        self.targets = np.full(len(dof_table.entries), np.nan)

    def update(
        self, step: int, time: float, dt: float, joint_positions: np.ndarray, in_contact: bool
    ) -> bool:
        """Send this step's joint targets; returns True when targets were sent.

        Every ``every`` steps IK is solved for the schedule's target at the end of the next
        block (``time + every * dt``); within the block the joint targets move linearly from
        the previously sent targets to that solution, so the drives see a smooth reference.
        With ``until_contact`` the targets freeze at the first contact.

        Args:
            step: the step about to be taken (1-based).
            time: simulation time before the step [s].
            dt: step size [s].
            joint_positions: current DOF positions (DOF-table order).
            in_contact: whether a robot contact sensor reports contact.
        """
        self._dt = dt
        if self.until_contact and in_contact and self.frozen_at is None:
            self.frozen_at = time
        if self.frozen_at is not None:
            return False  # hold the last targets sent
        phase = (step - 1) % self.every
        sent = False
        for item in self.items:
            if phase == 0:
                self._solve(item, time + self.every * dt, joint_positions)
            if item["q_to"] is None:
                continue
            s = (phase + 1) / self.every
            q = item["q_from"] + s * (item["q_to"] - item["q_from"])
            self.targets[item["indices"]] = q
            item["send"](q)
            sent = True
        return sent

    def solves_at(self, step: int) -> bool:
        """Whether :meth:`update` solves IK at ``step`` (not disabled, not frozen).

        The loop then updates first, and a compiled block may take the step with the
        targets just sent.
        """
        return (
            self.disabled_reason is None and self.frozen_at is None and (step - 1) % self.every == 0
        )

    def update_or_disable(
        self,
        step: int,
        time: float,
        dt: float,
        joint_positions: np.ndarray,
        contact_checks: Sequence[Any],
    ) -> None:
        """:meth:`update` with ``in_contact`` from ``contact_checks``; errors disable IK.

        A failing IK must not stop the run: the error is logged, the joint targets keep
        their last values, and :attr:`disabled_reason` says why.
        """
        in_contact = self.until_contact and any(check() for check in contact_checks)
        try:
            self.update(step, time, dt, joint_positions, in_contact)
        except Exception as error:  # noqa: BLE001 - a failing IK must not stop the run
            self.disabled_reason = f"IK disabled at step {step}: {error!r}"
            LOGGER.error("%s; the joint targets keep their last values", self.disabled_reason)

    def _solve(self, item: dict[str, Any], t_goal: float, joint_positions: np.ndarray) -> None:
        q_now = np.asarray(joint_positions, dtype=np.float64)[item["indices"]]
        if item["start_orientation"] is None and item["schedule"].needs_start_orientation():
            # robot-base frame orientation at run start (only waypoints without an
            # orientation use it; skipping it otherwise saves the FK-frames kernel compile)
            local, _ = item["chain"].compute_fk(q_now)  # end pose in the chain's start frame
            start_in_robot = item["start_in_robot"]
            item["start_orientation"] = np.asarray((start_in_robot @ local).q, np.float64)
        position, orientation = item["schedule"].target_values(t_goal, item["start_orientation"])
        target = None  # (a Transform, made where the poser's own calls need it)
        seed = item["q_to"] if item["q_to"] is not None else q_now
        poser = item["poser"]
        if item["seeded"]:  # one LM attempt from the seed (solve_ik(seed=), as arrays)
            if item["fast"] is None:
                item["fast"] = SeededSolve(poser)
            answer = item["fast"].solve(position, orientation, seed)
            if answer is None:
                target = self._transform(position, orientation)
                answer = poser.solve_ik_seeded(target, np.asarray(seed, np.float64))
            q, success = answer
            result = None
        else:
            target = self._transform(position, orientation)
            result = poser.solve_ik(target, seed=seed)
            success = result.success
        self.solves += 1
        if success:
            item["failing"] = False
        else:
            self.failures += 1
            # The cold-start ladder (and the poser's extended ladder: 40 restarts) only runs
            # on the first failure of a streak: while the target stays out of reach of the
            # previous solution, re-running it every `every` steps would cost far more than
            # the step loop and, starting from the same seeds, fail the same way.
            if not item["failing"] or item["q_to"] is None:
                item["failing"] = True
                self.ladders += 1
                if target is None:
                    target = self._transform(position, orientation)
                result = poser.solve_ik(target)  # cached solution, then the ladder
                success = result.success
            if not success and item["q_to"] is not None:
                item["q_from"] = item["q_to"]
                return  # keep tracking the last good solution
            item["failing"] = not success
        if result is not None:
            q = np.array([result.joints[p] for p in item["chain"].joint_paths], np.float64)
        item["q_from"] = item["q_to"] if item["q_to"] is not None else q_now
        item["q_to"] = q


def _target_sender(engine: Any, indices: list[int]) -> Any:
    """``send(q)``: the engine's per-step target setter for ``indices``, or its generic call."""
    make = getattr(engine, "joint_target_setter", None)
    if make is not None:
        try:
            return make(indices)
        except SimrtError:
            pass  # e.g. a DOF without a drive: the first update raises it and disables IK
    return lambda q: engine.set_joint_targets(q, indices)
