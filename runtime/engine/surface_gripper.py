"""Surface grippers (``IsaacSurfaceGripper`` prims) on the MuJoCo engine.

Behaviour follows docs/sensors/surface-gripper.md (Isaac Sim 6.0.1): close / open / status
(``Open``, ``Closing``, ``Closed``), the grip test per attachment point along its forward
axis within ``maxGripDistance`` (closest-hit rays through :class:`~runtime.sensors.
ray_scene.RayScene`, stepping out of the gripper's own collider by 1 mm), ``retryInterval``,
the 10-step settle window, shear / coaxial release from the constraint force, and the
per-step order of §4. Attaching switches on a weld equality the builder put in the model for
that attachment point (``runtime/engine/_build_grippers.py``): its target site is moved onto
the gripped body at the attach frame (``model.site_bodyid/site_pos/site_quat``) and
``data.eq_active`` is set -- the model is never recompiled.

Use::

    engine = MujocoEngine(stage)
    grippers = SurfaceGripperRuntime(engine)       # after the engine is built
    for k in range(steps):
        engine.step()
        grippers.update()                          # after every engine.step()
        grippers.close_gripper("/World/Robot/SurfaceGripper")   # any time between steps
        record(grippers.readings())                # status + gripped objects per gripper

Choices (labels of the spec):

* Grippers start at the first :meth:`SurfaceGripperRuntime.update` (§1.1): before it every
  path is unknown (status Open, error log, requests return False; T11).
* Unauthored ``maxGripDistance`` uses the schema fallback 0.01 and logs it (E2 [REC]).
* Status never follows USD while running; status write-back includes ``Closing`` (§5.3 REC).
* Distances and force limits are compared in stage units, as the reference compares PhysX
  values (metres and newtons on a metre / kilogram stage).
* The force is the weld's linear constraint force on the gripper (world frame), so a load
  pulling the object away along the forward axis gives a positive coaxial force (§3.6 REC).
* A hit on a static collider (no rigid body) is not attachable (E8 resolved: skipped); other
  links of the same robot are (E8).
* Collisions between the gripper and the gripped body stay on (MuJoCo has no run-time pair
  exclusion); the attach frame leaves a gap of about the hit distance, so they rarely touch.
* USD ``Closed`` at start is treated like ``Open`` (E5: the reference keeps the authored
  joint enabled; here no weld is active before a grip).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

from runtime.engine._build_grippers import EQUALITY, SITE_BODY0, SITE_TARGET
from runtime.engine._build_grippers import attachment_joint_paths as _attachment_joints
from runtime.engine._surface_gripper_usd import UsdWriteBack

__all__ = ["GRIPPER_STATUS", "GripperReading", "SurfaceGripperRuntime"]

LOGGER = logging.getLogger("runtime.engine.surface_gripper")

GRIPPER_STATUS = {"Open": 0, "Closing": 1, "Closed": 2}
"""Status token -> integer (Isaac's ``GripperStatus`` values)."""

SETTLE_STEPS = 10
_AXES = {
    "X": np.array([1.0, 0.0, 0.0]),
    "Y": np.array([0.0, 1.0, 0.0]),
    "Z": np.array([0.0, 0.0, 1.0]),
}
_SELF_STEP = 0.001
_MIN_RAY = 0.001
_MAX_SELF_STEPS = 100000
_EQUALITY_ROW = int(mujoco.mjtConstraint.mjCNSTR_EQUALITY)


@dataclass(frozen=True)
class GripperReading:
    """One gripper's state after a step.

    Attributes:
        path: gripper prim path.
        status: ``"Open"``, ``"Closing"`` or ``"Closed"``.
        status_code: 0 Open, 1 Closing, 2 Closed.
        gripped_objects: rigid-body paths held by an active weld, sorted.
        step: update count when read (0 before the first update).
    """

    path: str
    status: str
    status_code: int
    gripped_objects: tuple[str, ...]
    step: int


@dataclass
class _Point:
    joint: str
    eq: int
    site0: int
    target: int
    body0: int
    body0_path: str
    axis: np.ndarray
    axis_body0: np.ndarray
    clearance: float
    body1: str = ""


@dataclass
class _Gripper:
    path: str
    points: list[_Point]
    status: str = "Open"
    active: set[int] = field(default_factory=set)
    inactive: set[int] = field(default_factory=set)
    settle: list[int] = field(default_factory=list)
    retry_active: bool = False
    retry_elapsed: float = 0.0
    max_grip_distance: float = 0.01
    retry_interval: float = 0.0
    shear_limit: float = -1.0
    coaxial_limit: float = -1.0
    queue: list[tuple[str, int, Any]] = field(default_factory=list)


def _quat_to_matrix(q: np.ndarray) -> np.ndarray:
    out = np.empty(9)
    mujoco.mju_quat2Mat(out, np.asarray(q, dtype=np.float64))
    return out.reshape(3, 3)


def _matrix_to_quat(r: np.ndarray) -> np.ndarray:
    out = np.empty(4)
    mujoco.mju_mat2Quat(out, np.ascontiguousarray(r, dtype=np.float64).reshape(9))
    return out


class SurfaceGripperRuntime:
    """Every ``IsaacSurfaceGripper`` of an engine's stage, stepped beside the engine.

    Args:
        engine: a built :class:`~runtime.engine.MujocoEngine`.
        ray_scene: the :class:`~runtime.rays.scene.RayScene` to grip-test against
            (default: built from the engine's stage and bodies).
        write_to_usd: start with USD write-back on (§5; default off, as in Isaac Sim).

    Raises:
        SchemaError: a gripper prim with invalid attributes (names the prim / attribute).
    """

    def __init__(self, engine: Any, *, ray_scene: Any = None, write_to_usd: bool = False) -> None:
        self.engine = engine
        self.stage = engine.stage
        self._model: mujoco.MjModel = engine.model
        self._data: mujoco.MjData = engine.data
        self._ray_scene = ray_scene
        built = engine.built
        self._body_row = {p: i for i, p in enumerate(built.body_paths) if not built.is_static[i]}
        self._body_id = {p: int(built.body_ids[i]) for p, i in self._body_row.items()}
        self._grippers: dict[str, _Gripper] = {}
        self._started = False
        self._updates = 0
        self._usd = UsdWriteBack(self.stage)
        self._usd.enabled = bool(write_to_usd)
        self._out_d = np.empty(1)
        self._out_a = np.empty(1, np.int64)
        self._out_n = np.empty((1, 3))

    @property
    def ray_scene(self) -> Any:
        """The ray scene of the grip tests (built from the stage on first use)."""
        if self._ray_scene is None:
            from runtime.rays.scene import RayScene

            self._ray_scene = RayScene.from_stage(self.stage, self.engine.body_paths)
        return self._ray_scene

    # ------------------------------------------------------------------ discovery (§1)
    def _start(self) -> None:
        from runtime.schema.readers import read_attachment_point, read_surface_gripper

        for path, joints in _attachment_joints(self.stage).items():
            prim = self.stage.GetPrimAtPath(path)
            info = read_surface_gripper(prim)
            g = _Gripper(path=path, points=[])
            self._read_config(g, info, prim)
            for joint in joints:
                point = self._make_point(path, joint, read_attachment_point)
                if point is not None:
                    g.points.append(point)
            n = len(g.points)
            g.inactive = set(range(n))
            g.settle = [0] * n
            self._grippers[path] = g
            self._usd.ensure_gripped_relationship(prim)
            # USD Closing -> release and Open; Closed -> closed-update from nothing (E5)
            if info.status == "Closed":
                g.status = "Closed"
                self._closed_update(g)
            elif info.status == "Closing":
                g.status = "Closing"
                self._open_update(g)
        self._started = True

    def _read_config(self, g: _Gripper, info: Any, prim: Any) -> None:
        g.max_grip_distance = float(info.max_grip_distance)
        if not prim.GetAttribute("isaac:maxGripDistance").HasAuthoredValue():
            LOGGER.info(
                "%s: isaac:maxGripDistance unauthored; using the schema fallback %g",
                g.path,
                g.max_grip_distance,
            )
        g.retry_interval = float(info.retry_interval)
        g.shear_limit = float(info.shear_force_limit)
        g.coaxial_limit = float(info.coaxial_force_limit)

    def _make_point(self, gripper: str, joint: str, read_attachment_point: Any) -> _Point | None:
        m = self._model
        eq = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_EQUALITY, joint + EQUALITY)
        if eq < 0:
            LOGGER.warning("Gripper %s has no joint at attachment point %s", gripper, joint)
            return None
        site0 = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, joint + SITE_BODY0)
        target = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, joint + SITE_TARGET)
        body0 = int(m.site_bodyid[site0])
        info = read_attachment_point(self.stage.GetPrimAtPath(joint))
        axis = _AXES.get(str(info.forward_axis)[:1].upper(), _AXES["X"])
        return _Point(
            joint=joint,
            eq=eq,
            site0=site0,
            target=target,
            body0=body0,
            body0_path=m.body(body0).name,
            axis=axis,
            axis_body0=_quat_to_matrix(m.site_quat[site0]) @ axis,
            clearance=float(info.clearance_offset),
        )

    # ------------------------------------------------------------------ public API (§2)
    @property
    def gripper_paths(self) -> tuple[str, ...]:
        """Paths of the started grippers (empty before the first update)."""
        return tuple(self._grippers)

    def _find(self, path: Any) -> _Gripper | None:
        return self._grippers.get(str(path))

    def open_gripper(self, path: str) -> bool:
        """Request Open (§3.5): release every point now; True if the gripper exists."""
        g = self._find(path)
        if g is None:
            return False
        if g.status != "Open":
            self._release_all(g)
        return True

    def close_gripper(self, path: str) -> bool:
        """Request Closed (§3.1): first grip attempt now; True if the gripper exists."""
        g = self._find(path)
        if g is None:
            return False
        if g.status in ("Closing", "Closed"):
            return True
        g.status = "Closing"
        g.retry_active = True
        self._closed_update(g)
        if g.retry_interval > 0.0:
            g.retry_elapsed = 0.0
        else:
            g.retry_active = False
        return True

    def set_gripper_action(self, path: str, action: float) -> bool:
        """``action < -0.3`` opens, ``> 0.3`` closes; otherwise (incl. NaN) False."""
        a = float(action)
        if a < -0.3:
            return self.open_gripper(path)
        if a > 0.3:
            return self.close_gripper(path)
        return False

    def get_gripper_status(self, path: str) -> str:
        """Status token; an unknown path logs ``Gripper not found: <path>`` and gives Open."""
        g = self._find(path)
        if g is None:
            LOGGER.error("Gripper not found: %s", path)
            return "Open"
        return g.status

    def get_gripped_objects(self, path: str) -> list[str]:
        """Bodies held by an active weld (recomputed now, §5.2); [] if unknown."""
        g = self._find(path)
        return [] if g is None else self._gripped(g)

    def probe_gripper(self, path: str) -> list[str]:
        """Bodies the gripper's attachment points would grip now (no state change).

        Runs the grip ray test of every attachment point against the current poses without
        attaching, caching clearances or counting settle windows -- e.g. to close "on
        contact" (``if grippers.probe_gripper(p): grippers.close_gripper(p)``).

        Args:
            path: gripper prim path.

        Returns:
            Sorted attachable body paths within reach ([] when unknown or none).
        """
        g = self._find(path)
        if g is None or not g.points:
            return []
        positions, orientations = self._poses()
        hits = set()
        for p in g.points:
            hit = self._ray_test(g, p, positions, orientations, commit=False)
            if hit is not None:
                hits.add(self._model.body(hit[0]).name)
        return sorted(hits)

    def reload_config(self, path: str | None = None) -> None:
        """Re-read ``maxGripDistance`` / ``retryInterval`` / force limits from USD.

        The reference re-reads them on every change notice of the gripper prim (§1.3); here
        call this after editing them during a run (``GripperView`` does). Status is never
        re-read (§5.3 [REC]).

        Args:
            path: one gripper, or None for all.
        """
        from runtime.schema.readers import read_surface_gripper

        for g in self._grippers.values():
            if path is None or g.path == str(path):
                prim = self.stage.GetPrimAtPath(g.path)
                self._read_config(g, read_surface_gripper(prim), prim)

    def set_write_to_usd(self, flag: bool) -> bool:
        """Switch USD write-back (§5) for every gripper; returns True."""
        self._usd.enabled = bool(flag)
        return True

    def open_gripper_batch(self, paths: Sequence[str]) -> list[bool]:
        """:meth:`open_gripper` per path."""
        return [self.open_gripper(p) for p in paths]

    def close_gripper_batch(self, paths: Sequence[str]) -> list[bool]:
        """:meth:`close_gripper` per path."""
        return [self.close_gripper(p) for p in paths]

    def set_gripper_action_batch(
        self, paths: Sequence[str], actions: Sequence[float]
    ) -> list[bool]:
        """:meth:`set_gripper_action` per path; mismatched lengths give []."""
        if len(paths) != len(actions):
            return []
        return [self.set_gripper_action(p, a) for p, a in zip(paths, actions, strict=True)]

    def get_gripper_status_batch(self, paths: Sequence[str]) -> list[int]:
        """Status integers (0 Open, 1 Closing, 2 Closed) per path."""
        return [GRIPPER_STATUS[self.get_gripper_status(p)] for p in paths]

    def get_gripped_objects_batch(self, paths: Sequence[str]) -> list[list[str]]:
        """:meth:`get_gripped_objects` per path."""
        return [self.get_gripped_objects(p) for p in paths]

    def readings(self) -> list[GripperReading]:
        """One :class:`GripperReading` per gripper (discovery order)."""
        return [
            GripperReading(
                g.path, g.status, GRIPPER_STATUS[g.status], tuple(self._gripped(g)), self._updates
            )
            for g in self._grippers.values()
        ]

    def close(self) -> None:
        """Detach everything and remove the runtime's USD opinions (like a stop)."""
        for g in self._grippers.values():
            for p in g.points:
                self._data.eq_active[p.eq] = 0
                p.body1 = ""
        self._usd.clear()

    # ------------------------------------------------------------------ per step (§4)
    def update(self) -> None:
        """Advance the grippers by one physics step; call after every ``engine.step()``.

        Order (§4): discovery on the first call; per gripper the inactive settle
        countdown, the retry timer and the closed- or open-update; then the queued attach /
        detach of every gripper; then the USD writes when enabled.
        """
        if not self._started:
            self._start()
        self._updates += 1
        dt = float(self._model.opt.timestep)
        for g in self._grippers.values():
            for i in g.inactive:
                if g.settle[i] > 0:
                    g.settle[i] -= 1
            if g.status == "Closing" and g.retry_active and g.inactive:
                g.retry_elapsed += dt
                if g.retry_elapsed > g.retry_interval:
                    g.retry_active = False
                    g.retry_elapsed = 0.0
            if g.status in ("Closed", "Closing"):
                if g.retry_active or g.active:
                    self._closed_update(g)
                else:
                    self._open_update(g)
            else:
                self._open_update(g)
        for g in self._grippers.values():
            self._execute(g)
        if self._usd.enabled:
            for g in self._grippers.values():
                self._usd.write(g.path, g.status, self._gripped(g), g.points)

    # ------------------------------------------------------------------ behaviour (§3)
    def _open_update(self, g: _Gripper) -> None:
        if g.active or g.status != "Open":
            self._release_all(g)

    def _release_all(self, g: _Gripper) -> None:
        for i in range(len(g.points)):
            g.queue.append(("detach", i, None))
        g.active.clear()
        g.inactive = set(range(len(g.points)))
        g.status = "Open"
        g.retry_active = False

    def _closed_update(self, g: _Gripper) -> None:
        if not g.points:
            return
        if g.inactive and (g.status == "Closing" or g.retry_active):
            self._grip_attempt(g)
        self._force_check(g)
        if not g.inactive:
            status = "Closed"
        elif g.retry_active:
            status = "Closing"
        elif not g.active:
            status = "Open"
        else:
            status = g.status
        if status != g.status:
            g.status = status
            if status == "Closed":
                g.retry_elapsed = 0.0

    def _poses(self) -> tuple[np.ndarray, np.ndarray]:
        state = self.engine.state(reuse=True)  # fresh kinematics after mj_step
        return state.body_positions, state.body_orientations

    def _attach_frame_world(self, p: _Point) -> tuple[np.ndarray, np.ndarray]:
        """World origin and rotation of the body0 joint frame (fresh kinematics assumed)."""
        d, m = self._data, self._model
        rb = d.xmat[p.body0].reshape(3, 3)
        origin = d.xpos[p.body0] + rb @ m.site_pos[p.site0]
        return origin, rb @ _quat_to_matrix(m.site_quat[p.site0])

    def _grip_attempt(self, g: _Gripper) -> None:
        positions, orientations = self._poses()
        attached = []
        for i in sorted(g.inactive):
            if g.settle[i] > 0:
                g.settle[i] -= 1
                continue
            hit = self._ray_test(g, g.points[i], positions, orientations)
            if hit is not None:
                g.queue.append(("attach", i, hit))
                attached.append(i)
        for i in attached:
            g.inactive.discard(i)
            g.active.add(i)
            g.settle[i] = SETTLE_STEPS

    def _ray_test(
        self,
        g: _Gripper,
        p: _Point,
        positions: np.ndarray,
        orientations: np.ndarray,
        commit: bool = True,
    ) -> tuple[int, np.ndarray, np.ndarray] | None:
        origin_w, rot_w = self._attach_frame_world(p)
        direction = rot_w @ p.axis
        c = p.clearance
        for _ in range(_MAX_SELF_STEPS):
            length = g.max_grip_distance - c
            if length <= 0.0:
                length = _MIN_RAY
            self.ray_scene.cast(
                np.ascontiguousarray((origin_w + c * direction)[None, :]),
                np.ascontiguousarray(direction[None, :]),
                np.array([length]),
                positions,
                orientations,
                self._out_d,
                self._out_a,
                self._out_n,
            )
            actor = int(self._out_a[0])
            if actor < 0 or not math.isfinite(self._out_d[0]):
                return None  # miss: grown clearance discarded (E7)
            hit_path = self.ray_scene.actor_paths[actor]
            if hit_path == p.body0_path:
                c += _SELF_STEP
                continue
            break
        else:  # pragma: no cover - a ray never leaving the gripper
            return None
        t = float(self._out_d[0])
        if commit and c > 0.0 and c != p.clearance:
            p.clearance = c
            self._usd.note_clearance(p.joint, c)
        body = self._body_id.get(hit_path)
        if body is None:
            return None  # static collider or unknown actor: nothing to attach to
        # attach frame A: rotation of W, position p - d (t - c), in the hit body's frame
        a_pos = origin_w - direction * (t - c)
        rb = self._data.xmat[body].reshape(3, 3)
        local_pos = rb.T @ (a_pos - self._data.xpos[body])
        local_quat = _matrix_to_quat(rb.T @ rot_w)
        return body, local_pos, local_quat

    def _force_check(self, g: _Gripper) -> None:
        if g.status == "Open" or not (g.shear_limit > 0.0 or g.coaxial_limit > 0.0):
            return
        released = []
        for i in sorted(g.active):
            if g.settle[i] > 0:
                g.settle[i] -= 1
                continue
            p = g.points[i]
            force = self._constraint_force(p)
            if force is None:
                continue
            rb = self._data.xmat[p.body0].reshape(3, 3)
            direction = rb @ p.axis_body0
            coaxial = float(force @ direction)
            if g.coaxial_limit > 0.0 and coaxial > g.coaxial_limit:
                released.append(i)
            elif (
                g.shear_limit > 0.0 and np.linalg.norm(force - coaxial * direction) > g.shear_limit
            ):
                released.append(i)
        for i in released:
            g.queue.append(("detach", i, None))
            g.active.discard(i)
            g.inactive.add(i)
            g.settle[i] = SETTLE_STEPS
            LOGGER.info(
                "%s: attachment point %s released by its force limit", g.path, g.points[i].joint
            )

    def _constraint_force(self, p: _Point) -> np.ndarray | None:
        """Linear force of the point's weld on the gripper body, world frame, or None."""
        d = self._data
        nefc = d.nefc
        if not d.eq_active[p.eq] or nefc == 0:
            return None
        # equality rows come first among the constraint rows (MuJoCo's row order)
        n = min(nefc, int(d.ne))
        efc_type = d.efc_type[:n]
        rows = np.flatnonzero((efc_type == _EQUALITY_ROW) & (d.efc_id[:n] == p.eq))
        if rows.size < 3:
            return None
        return d.efc_force[rows[:3]].astype(np.float64)

    def _execute(self, g: _Gripper) -> None:
        m, d = self._model, self._data
        for action, i, payload in g.queue:
            p = g.points[i]
            if action == "detach":
                d.eq_active[p.eq] = 0
                continue
            body, local_pos, local_quat = payload
            m.site_bodyid[p.target] = body
            m.site_pos[p.target] = local_pos
            m.site_quat[p.target] = local_quat
            m.site_sameframe[p.target] = 0
            d.eq_active[p.eq] = 1
            p.body1 = m.body(body).name
        g.queue.clear()

    def _gripped(self, g: _Gripper) -> list[str]:
        eq_active = self._data.eq_active
        held = {
            g.points[i].body1 for i in g.active if g.points[i].body1 and eq_active[g.points[i].eq]
        }
        return sorted(held)
