"""IMU sensor (``IsaacImuSensor``, docs/sensors/imu.md).

All IMUs of a runtime are evaluated by one :class:`ImuBatch` kernel call per step.

Modes:

* ``"isaac"`` (default, parity): centre-of-mass velocity rotated into the sensor frame,
  float32 history ring, finite difference over ``Nl`` samples, rolling averages, gravity
  ``R^T g_up`` (4.1 formula: magnitude in m/s^2 divided by ``metersPerUnit``) added at read
  time (rotated with the newest sample's stored float32 orientation, i.e. within float32
  rounding of the reference's ``R^T g_up``). Reproduces the reference's lack of lever-arm
  and rotating-frame terms (4.7).
* ``"physical"`` (opt-in deviation): the specific force of the sensor point,
  ``a = R^T (a_com + alpha x r + w x (w x r) - g)`` with ``r`` the COM-to-sensor vector and
  ``g`` the engine gravity (``PhysicsState.gravity``), float64. Uses the engine's body
  accelerations when the state carries them, else backward differences of the world-frame
  COM and angular velocities (first-order accurate in ``dt``; the first step differences
  against rest at t = 0, like the parity mode's initial fill). The same rolling averages are
  applied to the kinematic acceleration samples.

Configuration (``enabled`` and the three widths) is read at creation and once more at the
first processed step (USD edits notified before that step), then frozen until
:meth:`ImuSensor.reset` (docs/sensors/index.md#configuration).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runtime._compile.jit import CompiledCall
from runtime._quat import rotate_by_parts
from runtime.sensors.base import IMU_MODES, SensorBase
from runtime.sensors.kinds import FusedPart
from runtime.sensors.state import PhysicsState

__all__ = ["ImuBatch", "ImuReading", "ImuSensor", "imu_ring_size"]


def imu_ring_size(widths: tuple[int, int, int]) -> int:
    """Ring size ``B = max(2 * max(Nl, Nw, Nq), 20)`` (docs/sensors/imu.md#configuration).

    Args:
        widths: effective filter widths (each >= 1).

    Returns:
        The history ring size.
    """
    return max(2 * max(widths), 20)


def _identity() -> np.ndarray:
    return np.array([1.0, 0.0, 0.0, 0.0])


@dataclass(frozen=True, eq=False)
class ImuReading:
    """One IMU reading.

    Attributes:
        time: ``t_k`` of the producing step [s] (float32 value in isaac mode); 0 if invalid.
        step: physics step counter of the producing step; 0 when invalid.
        linear_acceleration: (3,), float64, stage units/s^2, sensor frame (gravity reaction
            included when read with ``read_gravity=True``).
        angular_velocity: (3,), float64, rad/s, sensor frame.
        orientation: (4,), float64, wxyz, sensor world orientation.
        is_valid: see docs/sensors/index.md#validity.
    """

    time: float = 0.0
    step: int = 0
    linear_acceleration: np.ndarray = field(default_factory=lambda: np.zeros(3))
    angular_velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    orientation: np.ndarray = field(default_factory=_identity)
    is_valid: bool = False


class ImuBatch:
    """Struct-of-arrays for every IMU of a runtime; one kernel call per step.

    Args:
        runtime: the owning runtime.
        sensors: the IMU sensors (bound or disabled), in order.
    """

    def __init__(self, runtime: Any, sensors: list[ImuSensor]) -> None:
        from runtime.sensors._imu_kernels import imu_read_kernel, imu_update_kernel

        self._read_kernel = imu_read_kernel
        self._call = CompiledCall(imu_update_kernel)
        self.runtime = runtime
        self.sensors = sensors
        n = len(sensors)
        # Packed per-sensor blocks: see runtime.sensors._imu_kernels. ``ints``, ``heads``,
        # ``status`` view the int block; ``floats``, ``prev``, ``readings`` and ``ring``
        # view the float block (re-created when the ring grows).
        self._int_block = np.zeros((n, 10), np.int64)
        self.ints = self._int_block[:, 0:7]
        self.heads = self._int_block[:, 7]
        self.status = self._int_block[:, 8:10]
        self.ints[:, 1:4] = 1
        self.ints[:, 4] = 2
        self.ring_sizes = np.full(n, 20, np.int64)
        self.processed = np.zeros(n, bool)
        self._all_processed = n == 0
        self.physical_gravity = np.array([0.0, 0.0, -9.80665])
        self._float_block: np.ndarray | None = None
        self._allocate_rings(2)
        self.floats[:, 3] = 1.0
        self.readings[:, 6] = 1.0
        self._no_acc = np.zeros((0, 3))
        for i, sensor in enumerate(sensors):
            sensor._attach(self, i)

    @property
    def valid(self) -> np.ndarray:
        """Validity flag per sensor, (S,), int64 (view)."""
        return self.status[:, 0]

    @property
    def steps(self) -> np.ndarray:
        """Step counter of each sensor's last reading, (S,), int64 (view)."""
        return self.status[:, 1]

    @property
    def bodies(self) -> np.ndarray:
        """Parent body index per sensor, (S,), int64 (view)."""
        return self.ints[:, 0]

    @property
    def modes(self) -> np.ndarray:
        """Mode per sensor (0 isaac, 1 physical), (S,), int64 (view)."""
        return self.ints[:, 5]

    @property
    def active(self) -> np.ndarray:
        """Active flag per sensor, (S,), int64 (view)."""
        return self.ints[:, 6]

    @property
    def offset_orientations(self) -> np.ndarray:
        """Sensor orientation in the body frame, (S, 4), wxyz (view)."""
        return self.floats[:, 3:7]

    def _allocate_rings(self, capacity: int) -> None:
        """(Re)allocate the float block for ``capacity`` history slots, keeping its content."""
        old = self._float_block
        block = np.zeros((self.ints.shape[0], 2 + capacity, 14))
        block[:, 2:, 7] = 1.0
        if old is not None:
            block[:, : old.shape[1]] = old
        self._float_block = block
        self.ring_capacity = capacity
        self.floats = block[:, 0, 0:7]
        self.prev = block[:, 0, 7:14]
        self.readings = block[:, 1, 0:11]
        self.ring = block[:, 2:, :]

    def reset_history(self, i: int) -> None:
        """Reset sensor ``i``'s history to the initial fill (t 0, zeros, identity).

        Args:
            i: sensor index in the batch.
        """
        self.ring[i] = 0.0
        self.ring[i, :, 7] = 1.0
        self.heads[i] = 0
        self.prev[i] = 0.0

    def set_widths(self, i: int, widths: tuple[int, int, int]) -> None:
        """Set sensor ``i``'s filter widths (each >= 1).

        A change of the reference ring size ``max(2 max(N), 20)`` resets the history
        (docs/sensors/imu.md#configuration). Only the ``max(Nw, Nq, 2 Nl)`` newest samples are ever
        read, so only that many slots are stored (identical readings, less memory traffic).

        Args:
            i: sensor index in the batch.
            widths: (Nl, Nw, Nq).
        """
        nl, nw, nq = (int(w) for w in widths)
        self.ints[i, 1:4] = (nl, nw, nq)
        size = imu_ring_size((nl, nw, nq))
        span = max(nw, nq, 2 * nl)
        if span > self.ring_capacity:
            self._allocate_rings(span)
        if self.ring_sizes[i] != size or self.ints[i, 4] != span:
            self.ring_sizes[i] = size
            self.ints[i, 4] = span
            self.reset_history(i)

    def update(self, state: PhysicsState, indices: np.ndarray | None = None) -> None:
        """Process one step for the IMUs (all, or ``indices``).

        Args:
            state: the physics state after the step.
            indices: sensor indices to evaluate (K ints); None = all.
        """
        if not self._all_processed:
            self._first_step_config(range(len(self.sensors)) if indices is None else indices)
        lin_acc = state.body_linear_accelerations
        ang_acc = state.body_angular_accelerations
        if lin_acc is None or ang_acc is None:
            lin_acc = ang_acc = self._no_acc
        # time / step go through as they are (the kernel casts them); -1 = all sensors.
        args = (
            state.body_orientations,
            state.body_com_local,
            state.body_linear_velocities,
            state.body_angular_velocities,
            lin_acc,
            ang_acc,
            state.time,
            state.step,
            -1,
            self._int_block,
            self._float_block,
        )
        call = self._call
        if indices is not None:  # one sensor per call: its row replaces the -1
            for i in indices:
                call.kernel(*args[:8], int(i), *args[9:])
        elif state.verified:  # conventions guaranteed: the compiled entry, no type dispatch
            (call.entry or call.record)(*args)
        else:
            call.kernel(*args)
        self.physical_gravity = state.gravity

    def fused_part(self, fused: Any) -> FusedPart | None:
        """The batch's part of the compiled step (None until every IMU took its first step)."""
        if not self._all_processed:
            return None
        return FusedPart("imu", self, floats=self._float_block, ints=self._int_block)

    def fused_leave(self, state: PhysicsState, steps: int) -> None:
        """After ``steps`` compiled steps: the bookkeeping :meth:`update` keeps."""
        self.physical_gravity = state.gravity

    def _first_step_config(self, idx: Any) -> None:
        for i in idx:
            if not self.processed[i]:
                self.sensors[i]._first_processed_step()
                self.processed[i] = True
        self._all_processed = bool(self.processed.all())

    def current_orientations(self, index: Any = slice(None)) -> np.ndarray:
        """Unfiltered world orientation of the newest sample (after the USD round trip).

        Args:
            index: sensor index, slice or index array (default: all sensors).

        Returns:
            (4,) or (K, 4), float64, wxyz (isaac mode: float32 values).
        """
        rows = np.arange(self.ints.shape[0])[index]
        from_ring = (self.ints[rows, 5] == 1) | (self.ints[rows, 3] > 1)
        quats = np.where(
            np.asarray(from_ring)[..., None],
            self.ring[rows, self.heads[rows], 7:11],
            self.readings[rows, 6:10],
        )
        return quats

    def gravity_in_sensor_frames(self, index: Any = slice(None)) -> np.ndarray:
        """Gravity reaction in the sensor frame at the newest sample.

        See docs/sensors/imu.md#configuration, docs/sensors/imu.md#read-time.

        Isaac mode: ``float32(R^T g_up)`` with the stage's ``g_up``; physical mode:
        ``-R^T g`` with the engine gravity of the last step. ``R`` is the sensor's world
        orientation at the newest sample (unfiltered).

        Args:
            index: sensor index, slice or index array (default: all sensors).

        Returns:
            (3,) or (K, 3), float64, stage units/s^2, sensor frame.
        """
        if isinstance(index, (int, np.integer)):
            return np.array(self._gravity_in_sensor_frame(int(index)))
        q = self.current_orientations(index)
        q = q / np.linalg.norm(q, axis=-1, keepdims=True)
        rows = np.arange(self.ints.shape[0])[index]
        physical = np.asarray(self.ints[rows, 5] == 1)[..., None]
        g = np.where(physical, -self.physical_gravity, self.runtime.gravity_up)
        w = q[..., :1]
        u = -q[..., 1:]  # R^T v = rotation by the conjugate quaternion
        out = rotate_by_parts(w, u, g)
        return np.where(physical, out, out.astype(np.float32).astype(np.float64))

    def _gravity_in_sensor_frame(self, i: int) -> list[float]:
        """:meth:`gravity_in_sensor_frames` of one sensor, on Python floats.

        The very same IEEE operations in the same order as the array path (each product,
        sum and float32 cast rounds identically on a scalar; the norm's sum of squares is
        still NumPy's ``add.reduce``, as in ``np.linalg.norm``), hence bit-identical, and
        several times faster for one sensor read per step.
        """
        ints = self.ints
        physical = ints[i, 5] == 1
        if physical or ints[i, 3] > 1:
            q = self.ring[i, self.heads[i], 7:11]
        else:
            q = self.readings[i, 6:10]
        # np.linalg.norm(q, axis=-1) is sqrt(add.reduce(q * q)); NumPy's division keeps its
        # inf / nan semantics for a zero or non-finite norm.
        w, x, y, z = (q / math.sqrt(np.add.reduce(q * q))).tolist()
        g = -self.physical_gravity if physical else self.runtime.gravity_up
        gx, gy, gz = g.tolist()
        ux, uy, uz = -x, -y, -z  # R^T v = rotation by the conjugate quaternion
        # rotate_by_parts: t = 2 (u x g), g + w t + u x t.
        tx = 2.0 * (uy * gz - uz * gy)
        ty = 2.0 * (uz * gx - ux * gz)
        tz = 2.0 * (ux * gy - uy * gx)
        out = [
            gx + w * tx + (uy * tz - uz * ty),
            gy + w * ty + (uz * tx - ux * tz),
            gz + w * tz + (ux * ty - uy * tx),
        ]
        if physical:
            return out
        return np.array(out, np.float32).astype(np.float64).tolist()

    def arrays(self, read_gravity: bool = True) -> dict[str, np.ndarray]:
        """All IMU readings as arrays (read-time processing applied).

        See docs/sensors/imu.md#read-time.

        Args:
            read_gravity: add the gravity reaction to the acceleration.

        Returns:
            ``linear_acceleration`` (S, 3), ``angular_velocity`` (S, 3), ``orientation``
            (S, 4), ``time`` (S,), ``step`` (S,), ``is_valid`` (S,) bool. Invalid rows hold
            the default reading.
        """
        valid = (self.valid != 0) & (self.active != 0)
        isaac = self.modes == 0
        acc = self.readings[:, 0:3].copy()
        if read_gravity:
            grav = self.gravity_in_sensor_frames()
            acc[isaac] = (acc[isaac].astype(np.float32) + grav[isaac].astype(np.float32)).astype(
                np.float64
            )
            acc[~isaac] = acc[~isaac] + grav[~isaac]
        gyro = self.readings[:, 3:6].copy()
        acc[~np.isfinite(acc)] = 0.0
        gyro[~np.isfinite(gyro)] = 0.0
        quat = self.readings[:, 6:10].copy()
        norm = np.linalg.norm(quat, axis=1)
        good = np.isfinite(norm) & (norm > 0.0)
        quat[good] /= norm[good, None]
        quat[~good] = _identity()
        acc[~valid] = 0.0
        gyro[~valid] = 0.0
        quat[~valid] = _identity()
        return {
            "linear_acceleration": acc,
            "angular_velocity": gyro,
            "orientation": quat,
            "time": np.where(valid, self.readings[:, 10], 0.0),
            "step": np.where(valid, self.steps, 0),
            "is_valid": valid,
        }


class ImuSensor(SensorBase):
    """``IsaacImuSensor``: acceleration, angular velocity and orientation (docs/sensors/imu.md).

    Args:
        prim_path: USD path of the ``IsaacImuSensor`` prim.
        mode: ``"isaac"`` (parity, default) or ``"physical"``.
    """

    kind = "imu"
    type_name = "IsaacImuSensor"
    batch_type = ImuBatch

    def __init__(self, prim_path: str, mode: str = "isaac") -> None:
        from runtime.errors import SimrtError

        super().__init__(prim_path)
        if mode not in IMU_MODES:
            raise SimrtError(f"ImuSensor {prim_path}: mode {mode!r} not in {IMU_MODES}")
        self.mode = mode
        self.config: Any = None
        self.body_path = ""
        self._batch: ImuBatch | None = None
        self._index = -1
        self._usd_enabled = True
        self._deleted = False
        self._config_dirty = False
        self._body = 0

    def bind(self, runtime: Any) -> None:
        """Resolve the parent body and read the configuration.

        Args:
            runtime: the owning runtime.

        Raises:
            SchemaError: missing prim, wrong type, no parent rigid body, body not in the
                physics state, or malformed attributes.
        """
        self._runtime = runtime
        self._read_config()

    def _read_config(self) -> None:
        from runtime.errors import SchemaError
        from runtime.schema.readers import read_imu_sensor

        prim = self._runtime.stage.GetPrimAtPath(self.prim_path)
        if not prim or not prim.IsValid():
            raise SchemaError(self.prim_path, "", "prim does not exist", "an IsaacImuSensor")
        config = read_imu_sensor(prim)
        self._body = self._runtime.body_index(config.parent_body)
        self.config = config
        self.body_path = config.parent_body
        self._usd_enabled = config.enabled
        self._push_config()

    def _push_config(self) -> None:
        batch = self._batch
        if batch is None or self.config is None:
            return
        i = self._index
        c = self.config
        batch.ints[i, 0] = self._body
        batch.floats[i, 0:3] = c.translation_in_body
        batch.floats[i, 3:7] = c.orientation_in_body
        batch.ints[i, 5] = IMU_MODES.index(self.mode)
        batch.set_widths(i, c.effective_widths)
        self._on_enabled_changed()

    def _attach(self, batch: ImuBatch, index: int) -> None:
        self._batch = batch
        self._index = index
        self._push_config()
        self._on_enabled_changed()

    def _is_active(self) -> bool:
        return bool(
            self._enabled
            and self._usd_enabled
            and self.disabled_reason is None
            and not self._deleted
            and self.config is not None
        )

    def _on_enabled_changed(self) -> None:
        batch = self._batch
        if batch is None:
            return
        active = 1 if self._is_active() else 0
        if active and not batch.ints[self._index, 6]:
            batch.reset_history(self._index)  # transition to enabled: initial fill (2.5)
        batch.ints[self._index, 6] = active

    def _first_processed_step(self) -> None:
        if self._config_dirty and self.disabled_reason is None and not self._deleted:
            self._config_dirty = False
            self._read_config()

    def on_usd_changed(self) -> None:
        """Note USD edits: deletion and the sensor pose always; configuration before step 1."""
        prim = self._runtime.stage.GetPrimAtPath(self.prim_path)
        if not prim or not prim.IsValid():
            self._deleted = True
            self._on_enabled_changed()
            return
        self._deleted = False
        if self._batch is not None and not self._batch.processed[self._index]:
            self._config_dirty = True
        elif self._batch is not None and self.config is not None:
            # Configuration is frozen, but the sensor pose follows USD edits (2.6).
            from runtime.schema.readers import read_imu_sensor

            config = read_imu_sensor(prim)
            if config.parent_body == self.body_path:
                self._batch.floats[self._index, 0:3] = config.translation_in_body
                self._batch.floats[self._index, 3:7] = config.orientation_in_body
        self._on_enabled_changed()

    def fused_row(self, fused: Any, tap: Any) -> Any:
        """The sensor's recording row in the compiled step (the IMU part's writer)."""
        return fused.builtin_row("imu", self, tap)

    def update(self, state: PhysicsState) -> None:
        """Evaluate this IMU only (the runtime normally evaluates the whole batch).

        Args:
            state: the physics state after the step.
        """
        if self._batch is not None:
            self._batch.update(state, [self._index])

    def _read_into(self, out: np.ndarray, read_gravity: bool = True) -> bool:
        """Read-time processing of the latest reading into ``out`` (see :meth:`reading`).

        Args:
            out: ``[acc(3), gyro(3), quat(4), time]``, shape (11,), float64 (written).
            read_gravity: add the gravity reaction.

        Returns:
            False (``out`` untouched) when the reading is invalid.
        """
        b = self._batch
        i = self._index
        if b is None or not b.ints[i, 6] or not b.status[i, 0]:
            return False
        b._read_kernel(
            b._int_block, b._float_block, i, b.physical_gravity, b.runtime.gravity_up,
            read_gravity, out,
        )  # fmt: skip
        return True

    def reading(self, read_gravity: bool = True) -> ImuReading:
        """The latest reading with read-time processing (docs/sensors/imu.md#read-time).

        Args:
            read_gravity: add the gravity reaction ``R^T g_up`` (isaac) / ``-R^T g``
                (physical) of the latest step.

        Returns:
            The reading (default invalid reading when disabled, deleted or not yet stepped).
        """
        out = np.empty(11)
        if not self._read_into(out, read_gravity):
            return ImuReading()
        b = self._batch
        i = self._index
        reading = object.__new__(ImuReading)  # frozen: skip the per-field setattr cost
        reading.__dict__.update(
            time=float(out[10]),
            step=int(b.status[i, 1]),
            linear_acceleration=out[0:3],
            angular_velocity=out[3:6],
            orientation=out[6:10],
            is_valid=True,
        )
        return reading

    def reset(self) -> None:
        """Fresh history and invalid reading; configuration is read again (stop/start)."""
        batch = self._batch
        if batch is None:
            return
        i = self._index
        batch.status[i] = 0
        batch.processed[i] = False
        batch._all_processed = False
        batch.readings[i, 10] = 0.0
        batch.reset_history(i)
        if self.disabled_reason is None and not self._deleted:
            self._read_config()
