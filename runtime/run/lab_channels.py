"""A run's Isaac Lab-style sensors (``simrt:lab:*`` prims) recorded as channels.

:meth:`LabChannels.build` makes the scene's lab sensors (:mod:`runtime.sensors.lab`) over the
run's one MuJoCo world; :meth:`LabChannels.define` registers one channel per data field,
the env axis dropped (N = 1): ``"<sensor prim>:<field>"`` (a camera's images
``"<sensor prim>:<image type>"``, their histories ``"<sensor prim>:<image type>_history"``),
``kind`` ``"lab"``, ``field`` the data field (image type), ``unit`` its unit, ``frame`` the
frame its values are expressed in and ``attrs`` with ``sensor_kind`` (``contact``,
``imu``, ``ray_caster``, ``ray_caster_camera``, ``frame_transformer``, ``joint_wrench``),
``units`` and what the field needs to be read: a contact sensor's ``body_paths`` /
``filter_paths``, a ray caster's ``pattern`` (a grid's ``size``, ``resolution`` and
``ordering``) and ``actor_paths`` (what ``ray_hit_ids`` index), a camera's
``image_shape`` and ``intrinsic_matrix``.

After every physics step, :meth:`LabChannels.write` updates the sensors from the engine's
``MjData`` with the step's dt (one :class:`~runtime.run.lab_set.LabSensorSet`: contact
sensors, IMUs, frame transformers, joint wrenches, most ray casters and fixed cameras in
one compiled call) and writes their row in place. When that call updates every sensor of
the run, :attr:`LabChannels.row_parts` hands it to the run's compiled step instead
(:func:`runtime.run._lab_set_kernels.lab_set_part_kernel`: the update and the row's copies
inside the fused step and its step blocks, no Python per step); otherwise
:attr:`LabChannels.row_writers` has the fused step call :meth:`LabChannels.write` after
each step (and the run takes no step blocks). The sensors read the data as it stands after
the run has read its state (post-step positions and velocities, the step's contacts);
when a lab IMU without MuJoCo-computed accelerations or a joint wrench is present,
``mj_forward`` first brings the accelerations up to the post-step state (as the vector
environments do), and the next step reuses it instead of computing the same forward again
(:mod:`runtime.engine.forward_reuse`; in step blocks :mod:`runtime.run._forward_kernels`):
the trajectory is ``mj_step``'s bit for bit (tested). Disabled sensors record no
channels; their reasons go to the run's ``disabled`` sensors.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["LabChannels"]

LOGGER = logging.getLogger("runtime.run")

# field -> (unit, frame); a field not listed is recorded with no unit
_UNITS: dict[str, tuple[str, str]] = {
    "pos_w": ("m", "world"),
    "quat_w": ("wxyz", "world"),
    "net_forces_w": ("N", "world"),
    "force_matrix_w": ("N", "world"),
    "contact_pos_w": ("m", "world"),
    "friction_forces_w": ("N", "world"),
    "last_air_time": ("s", ""),
    "current_air_time": ("s", ""),
    "last_contact_time": ("s", ""),
    "current_contact_time": ("s", ""),
    "projected_gravity_b": ("1", "sensor"),
    "lin_vel_b": ("m/s", "sensor"),
    "ang_vel_b": ("rad/s", "sensor"),
    "lin_acc_b": ("m/s^2", "sensor"),
    "ang_acc_b": ("rad/s^2", "sensor"),
    "ray_hits_w": ("m", "world"),
    "ray_distances": ("m", ""),
    "ray_hit_ids": ("index", ""),
    "quat_w_world": ("wxyz", "world"),
    "quat_w_ros": ("wxyz", "world"),
    "quat_w_opengl": ("wxyz", "world"),
    "intrinsic_matrices": ("px", ""),
    "distance_to_image_plane": ("m", "camera"),
    "distance_to_camera": ("m", "camera"),
    "normals": ("1", "world"),
    "target_pos_source": ("m", "source"),
    "target_quat_source": ("wxyz", "source"),
    "target_pos_w": ("m", "world"),
    "target_quat_w": ("wxyz", "world"),
    "source_pos_w": ("m", "world"),
    "source_quat_w": ("wxyz", "world"),
    "force_b": ("N", "body"),
    "torque_b": ("N*m", "body"),
    "body_incoming_joint_wrench_b": ("N, N*m", "body"),
}


def _base_field(field: str) -> str:
    return field[: -len("_history")] if field.endswith("_history") else field


def _arrays(data: Any) -> list[tuple[str, str, str | None, np.ndarray]]:
    """Arrays with the env axis first of one sensor's data (a camera's images by type).

    Returns:
        ``(channel field, data attribute, image type or None, array)`` per array.
    """
    found: list[tuple[str, str, str | None, np.ndarray]] = []
    for item in dataclasses.fields(data):
        value = getattr(data, item.name)
        if isinstance(value, dict):  # a camera's images (and their histories) by type
            suffix = "_history" if item.name.endswith("_history") else ""
            found += [(f"{key}{suffix}", item.name, key, image) for key, image in value.items()]
        elif isinstance(value, np.ndarray) and value.ndim >= 1 and value.shape[0] == 1:
            found.append((item.name, item.name, None, value))
    return found


def _sensor_attrs(sensor: Any) -> dict[str, Any]:
    """JSON facts every channel of ``sensor`` carries (what its fields index)."""
    attrs: dict[str, Any] = {"sensor_kind": str(sensor.kind)}
    for name in ("body_paths", "filter_paths", "actor_paths", "body_path"):
        value = getattr(sensor, name, None)
        if value is not None and value != "":
            attrs[name] = list(value) if not isinstance(value, str) else value
    pattern = getattr(sensor.config, "pattern_cfg", None)
    if pattern is not None:
        facts = {"pattern": type(pattern).__name__.removesuffix("Pattern").lower()}
        for key in ("resolution", "size", "ordering", "width", "height"):
            value = getattr(pattern, key, None)
            if value is not None:
                facts[key] = (
                    [float(v) for v in value] if isinstance(value, (tuple, list)) else value
                )
        attrs["pattern"] = facts
    names = getattr(sensor.data, "target_frame_names", None)
    if names is not None:
        attrs["target_frame_names"] = list(names)
    if getattr(sensor, "kind", "") == "ray_caster_camera":
        attrs["image_shape"] = [int(n) for n in sensor.data.image_shape]
        attrs["intrinsic_matrix"] = np.asarray(sensor.data.intrinsic_matrices[0]).tolist()
    return attrs


class LabChannels:
    """The lab sensors of one run and their recorder slots.

    Attributes:
        sensors: enabled sensors by sensor prim path.
        set: the :class:`~runtime.run.lab_set.LabSensorSet` of ``sensors`` over the engine's
            ``MjData``.
        forward: ``mj_forward`` runs before each update (a lab IMU without accelerations
            computed in the step, or a joint wrench); the next step reuses it.
        plan: per channel: (recorder slot, sensor, data attribute, image type or None).
    """

    def __init__(self, engine: Any, sensors: Mapping[str, Any], dt: float) -> None:
        self.engine = engine
        self.sensors = dict(sensors)
        self.dt = float(dt)
        self.datas = [engine.data]
        from runtime.run.lab_set import LabSensorSet

        self.set = LabSensorSet(self.sensors, self.datas)
        self.forward = any(
            s.kind == "joint_wrench" or (s.kind == "imu" and not s.step_accelerations)
            for s in self.sensors.values()
        )
        self.plan: list[tuple[int, Any, str, str | None]] = []
        self.part: Any = None  # the compiled step's part (runtime.sensors.kinds.FusedPart)
        self._copies = np.zeros((0, 3), np.int64)

    @property
    def row_writers(self) -> list[tuple[Any, list[int]]]:
        """``[(write, slots)]`` for :meth:`runtime.run.fused.FusedStep.bind`.

        Empty when the compiled step writes the row (:attr:`row_parts`).
        """
        if self.part is not None:
            return []
        return [(self.write, [slot for slot, *_ in self.plan])]

    @property
    def row_parts(self) -> list[tuple[Any, list[int]]]:
        """``[(part, slots)]`` for :meth:`runtime.run.fused.FusedStep.bind`.

        The set's update and the row's copies as a part of the compiled step (empty: the
        run uses :attr:`row_writers`).
        """
        if self.part is None:
            return []
        return [(self.part, [slot for slot, *_ in self.plan])]

    @classmethod
    def build(cls, stage: Any, engine: Any, disabled: dict[str, str]) -> LabChannels | None:
        """The run's lab channels, or None when the scene has no (enabled) lab sensor.

        Args:
            stage: the run's stage.
            engine: the run's engine (lab sensors need MuJoCo's ``model`` and ``data``;
                each update's dt is the model's time step).
            disabled: the run's disabled sensors (prim path -> reason), added to.
        """
        from runtime.sensors.lab import discover_lab_sensors, make_lab_sensor

        specs = discover_lab_sensors(stage)
        if not specs:
            return None
        if not (hasattr(engine, "model") and hasattr(engine, "data")):
            for spec in specs:
                disabled[spec.path] = f"{spec.path}: lab sensors need the MuJoCo engine"
            LOGGER.warning("lab sensors not recorded: the engine is not MuJoCo's")
            return None
        sensors = {}
        for spec in specs:
            if spec.config is None:  # (logged by the discovery)
                disabled[spec.path] = str(spec.error)
                continue
            sensor = make_lab_sensor(engine, spec.config, 1)
            if sensor.disabled_reason is not None:  # (logged by the sensor)
                disabled[spec.path] = f"{spec.path}: {sensor.disabled_reason}"
                continue
            sensors[spec.path] = sensor
        dt = float(engine.model.opt.timestep)
        return cls(engine, sensors, dt) if sensors else None

    def define(self, recorder: Any) -> None:
        """Register one channel per data field of every sensor with the store writer."""
        from runtime.recording import ChannelInfo

        for path, sensor in self.sensors.items():
            common = _sensor_attrs(sensor)
            for field, attribute, key, array in _arrays(sensor.data):
                unit, frame = _UNITS.get(_base_field(field), ("", ""))
                info = ChannelInfo(
                    f"{path}:{field}", tuple(array.shape[1:]), array.dtype.name, path, "lab",
                    field, unit, {**common, "units": unit}, frame,
                )  # fmt: skip
                self.plan.append((recorder.add_channel(info), sensor, attribute, key))
        self.part = self._compiled_part()

    def _compiled_part(self) -> Any:
        """The set's part of the compiled step, or None.

        None: a sensor updated in Python (a camera on a moving body, a ray caster of
        ``PARALLEL_MIN_RAYS`` rays or more over a BVH scene), no MuJoCo entry points for
        ``mj_forward``.
        """
        from runtime.run import _lab_set_kernels
        from runtime.run._mujoco_native import reuse_block
        from runtime.run._native_kernels import array_address
        from runtime.sensors.kinds import FusedPart

        copies = []
        for slot, sensor, attribute, key in self.plan:
            value = getattr(sensor.data, attribute)
            if key is not None:  # (a camera's image of that type)
                value = value[key]
            if not value.flags.c_contiguous or value.shape[0] != 1:
                return None
            copies.append((slot, array_address(value), value[0].nbytes))
        self._copies = np.array(copies, np.int64).reshape(-1, 3)
        forward = None
        if self.forward:  # (through the engine's forward reuse: the next step reuses it)
            engine = self.engine
            block = reuse_block(engine)
            if block is None:
                return None
            forward = (
                array_address(block),
                int(engine.model._address),
                int(engine.data._address),
            )
        blocks = self.set.part_blocks(self.dt, forward, self._copies)
        if blocks is None:
            return None
        kernel = _lab_set_kernels.lab_set_part_kernel
        return FusedPart("lab", self, kernel, blocks[0], blocks[1])

    def write(self, buffers: list[np.ndarray], row: int) -> None:
        """Update every sensor after the step just taken; write its values into ``row``."""
        if self.forward:
            forward = getattr(self.engine, "forward_after_step", None)
            if forward is not None:  # (MujocoEngine: its next step reuses it)
                forward()
            else:  # (another engine over MuJoCo's model and data)
                import mujoco

                mujoco.mj_forward(self.engine.model, self.engine.data)
        self.set.update(self.dt)
        for slot, sensor, attribute, key in self.plan:  # (read each row: data may be rebound)
            value = getattr(sensor.data, attribute)
            buffers[slot][row] = (value if key is None else value[key])[0]
