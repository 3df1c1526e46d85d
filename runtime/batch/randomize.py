"""Per-episode randomization: seeded draws, and their application to a MuJoCo engine.

:func:`episode_seed` derives an episode's seed from the batch's base seed and the episode id
(``numpy.random.SeedSequence(base, spawn_key=(episode,))``), so an episode's draws do not
depend on which worker runs it, in which order, or how many episodes the batch has.
:func:`draw_parameters` turns a :class:`~runtime.batch.spec.Randomization` and that seed
into plain JSON data (the episode's *parameters*, stored in its recording and in the
manifest); :func:`apply_parameters` puts them into an engine whose model and data are in
their authored state. Re-running an episode applies the stored parameters without drawing
again, so a re-run is exact.

Draws, in this order from one ``numpy.random.default_rng(seed)``:

1. ``imu_mode``: uniformly among the spec's modes (only when more than one is listed).
2. joints: every hinge / slide DOF with finite limits, in DOF-table order:
   ``q = clip(q_authored + fraction * (upper - lower) / 2 * U(-1, 1), lower, upper)``; the
   DOF's position drive (if any) gets the same target, so the robot holds the pose.
3. IK waypoints, in spec order: the position uniformly in the box; the orientation is the
   nominal one rotated by an angle drawn uniformly in ``[0, cone]`` about an axis drawn
   uniformly on the unit sphere (right-multiplied: a rotation in the link frame).
4. objects, in spec order: the free body's authored position plus an offset drawn in the
   box; its orientation turned by a yaw drawn in ``[-yaw, yaw]`` about the up axis
   (opposite to gravity).
5. scales, in the order mass, friction, drive gain: one factor each, uniformly in
   ``[low, high]``. Mass scales every body's mass and inertia; friction every geom's
   sliding friction; drive gain the stiffness and damping of every fixed-gain affine-bias
   actuator (the USD drives' position / velocity servos).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from runtime import _quat
from runtime.batch.spec import Randomization
from runtime.engine.snapshot import ModelSnapshot
from runtime.errors import SimrtError

__all__ = ["ModelSnapshot", "apply_parameters", "draw_parameters", "episode_seed"]


def episode_seed(base_seed: int, episode: int) -> int:
    """The seed of one episode (a 63-bit integer, stored in the manifest).

    Args:
        base_seed: the batch's seed.
        episode: the episode id.

    Returns:
        ``SeedSequence(base_seed, spawn_key=(episode,))``'s first 64-bit word, halved.
    """
    sequence = np.random.SeedSequence(int(base_seed), spawn_key=(int(episode),))
    return int(sequence.generate_state(1, np.uint64)[0] >> np.uint64(1))


def _axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    return np.array([math.cos(angle / 2), *(math.sin(angle / 2) * axis)])


def _free_joint(engine: Any, path: str) -> int:
    """The qpos address of the free joint of body ``path``."""
    import mujoco

    model = engine.model
    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, path)
    if body < 0:
        raise SimrtError(f"randomize.objects: {path}: not a rigid body of the scene")
    joint = int(model.body_jntadr[body])
    if joint < 0 or model.jnt_type[joint] != mujoco.mjtJoint.mjJNT_FREE:
        raise SimrtError(f"randomize.objects: {path}: not a free body (it has joints)")
    return int(model.jnt_qposadr[joint])


def _floats(values: Any) -> list[float]:
    return [float(v) for v in np.asarray(values, dtype=np.float64).reshape(-1)]


def draw_parameters(
    randomization: Randomization, seed: int, engine_for: Callable[[str | None], Any]
) -> dict[str, Any]:
    """Draw one episode's parameters.

    Args:
        randomization: what to draw.
        seed: the episode seed (:func:`episode_seed`).
        engine_for: ``engine_for(imu_mode)`` -> an engine of the scene in its authored
            state (read for DOF limits, authored joint positions and free-body poses).

    Returns:
        JSON-serialisable parameters: ``imu_mode`` (or None: the scene's),
        ``joints`` {DOF name: position}, ``ik_targets`` [{link, position, orientation,
        time}], ``objects`` {path: {position, orientation}}, ``scales`` {name: factor};
        keys of what is not randomized are left out.

    Raises:
        SimrtError: a named object is not a free body, an IK link ... is unknown later.
    """
    rng = np.random.default_rng(int(seed))
    params: dict[str, Any] = {"imu_mode": None}
    modes = randomization.imu_modes
    if len(modes) == 1:
        params["imu_mode"] = modes[0]
    elif modes:
        params["imu_mode"] = modes[int(rng.integers(len(modes)))]
    engine = engine_for(params["imu_mode"])
    built = engine.built
    if randomization.joints is not None:
        fraction = randomization.joints.fraction
        joints: dict[str, float] = {}
        for b in engine.dofs:
            if b.ball_axis >= 0 or not (math.isfinite(b.lower) and math.isfinite(b.upper)):
                continue
            authored = b.sign * float(built.initial_qpos[b.qpos_adr])
            u = float(rng.uniform(-1.0, 1.0))
            q = authored + fraction * 0.5 * (b.upper - b.lower) * u
            joints[b.name] = float(min(max(q, b.lower), b.upper))
        params["joints"] = joints
    if randomization.ik:
        targets = []
        for draw in randomization.ik:
            position = rng.uniform(np.array(draw.box_min), np.array(draw.box_max))
            orientation = None
            if draw.orientation is not None:
                q = np.array(draw.orientation, dtype=np.float64)
                q = q / np.linalg.norm(q)
                if draw.cone_deg > 0.0:
                    axis = rng.normal(size=3)
                    axis = axis / max(float(np.linalg.norm(axis)), 1e-300)
                    angle = float(rng.uniform(0.0, math.radians(draw.cone_deg)))
                    q = _quat.multiply(q, _axis_angle(axis, angle))
                orientation = _floats(q)
            targets.append(
                {
                    "link": draw.link,
                    "position": _floats(position),
                    "orientation": orientation,
                    "time": float(draw.time),
                }
            )
        params["ik_targets"] = targets
    if randomization.objects:
        up = -np.array(engine.model.opt.gravity, dtype=np.float64)
        norm = float(np.linalg.norm(up))
        up = up / norm if norm > 0 else np.array([0.0, 0.0, 1.0])
        objects = {}
        for draw in randomization.objects:
            adr = _free_joint(engine, draw.path)
            offset = rng.uniform(np.array(draw.offset_min), np.array(draw.offset_max))
            yaw = float(rng.uniform(-1.0, 1.0)) * math.radians(draw.yaw_deg)
            authored_q = np.array(built.initial_qpos[adr + 3 : adr + 7], dtype=np.float64)
            objects[draw.path] = {
                "position": _floats(built.initial_qpos[adr : adr + 3] + offset),
                "orientation": _floats(_quat.multiply(_axis_angle(up, yaw), authored_q)),
            }
        params["objects"] = objects
    scales = {}
    for name in ("mass", "friction", "drive_gain"):
        bounds = getattr(randomization.scales, name)
        if bounds is not None:
            scales[name] = float(rng.uniform(bounds[0], bounds[1]))
    if scales:
        params["scales"] = scales
    return params


def apply_parameters(engine: Any, params: dict[str, Any]) -> None:
    """Apply an episode's parameters to an engine in its authored state.

    Args:
        engine: a :class:`~runtime.engine.mujoco_engine.MujocoEngine` right after its
            build or ``reset()`` (model arrays authored, see :class:`ModelSnapshot`).
        params: parameters from :func:`draw_parameters` (or a manifest).

    Raises:
        SimrtError: an unknown DOF or object, or a malformed parameter.
    """
    import mujoco

    model, data = engine.model, engine.data
    reuse = getattr(engine, "forward_reuse", None)
    if reuse is not None:  # (the model and state are written: no step reuses a forward)
        reuse.invalidate()
    scales = params.get("scales") or {}
    if "mass" in scales:
        model.body_mass[1:] *= scales["mass"]
        model.body_inertia[1:] *= scales["mass"]
    if "friction" in scales:
        model.geom_friction[:, 0] *= scales["friction"]
    if "drive_gain" in scales:
        servo = (model.actuator_gaintype == mujoco.mjtGain.mjGAIN_FIXED) & (
            model.actuator_biastype == mujoco.mjtBias.mjBIAS_AFFINE
        )
        model.actuator_gainprm[servo, 0] *= scales["drive_gain"]
        model.actuator_biasprm[servo, :3] *= scales["drive_gain"]
    joints = params.get("joints") or {}
    for name, value in joints.items():
        index = int(engine.resolve_dofs([name], 1)[0])
        b = engine.dofs[index]
        data.qpos[b.qpos_adr] = b.sign * float(value)
        data.qvel[b.dof_adr] = 0.0
        if b.drive_mode == "position":
            engine.set_joint_targets([float(value)], [index])
    for path, pose in (params.get("objects") or {}).items():
        adr = _free_joint(engine, path)
        position = np.asarray(pose["position"], dtype=np.float64)
        orientation = np.asarray(pose["orientation"], dtype=np.float64)
        if position.shape != (3,) or orientation.shape != (4,):
            raise SimrtError(f"episode parameters: objects[{path!r}]: malformed pose {pose!r}")
        data.qpos[adr : adr + 3] = position
        data.qpos[adr + 3 : adr + 7] = orientation
    mujoco.mj_forward(model, data)
