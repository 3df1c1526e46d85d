"""The fused step: after ``mj_step``, one compiled call does the rest of the step.

The general path of a step (:mod:`runtime.run.loop`) is ``engine.state()`` →
``SensorRuntime.step(state)`` → every tap's row write → ``StoreWriter.end_row``: a few
compiled kernels, each behind Python glue that converts its arguments, builds views and keeps
books. :class:`FusedStep` replaces it, once the run is in its steady state, with one call of
:func:`runtime.run._fused_kernels.fused_step_kernel`, which runs the same kernels on the same
arrays and writes the recording row in place. Readings are built only if someone asks, after
:meth:`FusedStep.leave` has brought the sensors' bookkeeping up to date.

:meth:`FusedStep.bind` accepts only the case it reproduces exactly: the built-in MuJoCo
engine, every sensor batched by a kind that declares its part of the step and its rows (the
protocol of :mod:`runtime.sensors.kinds`: the built-in contact, IMU and ray-cast parts, at
most one each, or a kind's own part kernel and block fields), every sensor enabled, in its
steady state and recorded by its direct writer (:mod:`runtime.run._direct`); a batch none of
whose sensors ever evaluates (a ray-cast batch whose sensors are disabled or ``enabled``
off) declares its part silent: it is not stepped and its rows are written invalid, as the
general path writes them (:mod:`runtime.run._fused_plan`). Anything else (another engine,
unbatched sensors, hit-path tables that are not the scene's actor table, USD edits during
the run...) keeps the general path, which stays the reference: tests record whole runs both
ways and compare every channel, bit for bit.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from runtime._compile.jit import JIT_DISABLED, CompiledCall
from runtime.run import _fused_kernels as F
from runtime.run import _native_kernels as N
from runtime.run import _row_kernels as R
from runtime.run._fused_plan import plan
from runtime.run._fused_rows import BUILTIN_ROWS, field_ops

LOGGER = logging.getLogger("runtime.run")

__all__ = ["FusedStep"]


class FusedStep:
    """The steady-state step of a run as one compiled call (see the module docstring).

    Build it with :meth:`bind` after the first step; then per step, after ``engine.step()``,
    :meth:`step` (False: it declined, nothing was done: run the general path and
    :meth:`leave`).
    """

    # tests set False to record the general path
    ENABLED = os.environ.get("SIMRT_FUSED", "1") != "0"

    def __init__(self, engine: Any, sensors: Any, recorder: Any) -> None:
        self.engine = engine
        self.sensors = sensors
        self.recorder = recorder
        self.steps = 0  # fused steps since the last leave()
        self.units: dict[str, Any] = {}  # the built-in parts' batches by part name
        self.builtin: dict[str, Any] = {}  # the built-in parts by name
        self.parts: list[Any] = []  # every stepped part (runtime.sensors.kinds.FusedPart)
        self.silent: list[Any] = []  # batches none of whose sensors ever evaluates
        # other kinds' parts, by id of their batch: their blocks' indices in ``extra`` and
        # their part kernels' native addresses
        self.kind_blocks: dict[int, tuple[int, int]] = {}
        self.kind_addresses: dict[int, int] = {}
        self.layout: Any = None
        self.ray_bodies = False  # the ray-cast part moves with bodies
        self.ops = np.zeros((0, R.OP_WIDTH), np.int64)
        # arrays given table rows after the channels: per ray-cast sensor its maxRange row,
        # per other kind's part its float and int blocks
        self.extra: list[np.ndarray] = []
        self.table = np.zeros((0, 4), np.int64)
        self.keep: list[Any] = []  # every array whose address the table holds
        self.si = np.zeros(F.SI_SIZE, np.int64)
        self.sf = np.zeros(2, np.float64)
        self.capacity = 0
        self.vec = self.ids = np.zeros(0)
        self._con_f: Any = None
        self._work_i: Any = None
        self._buffers: Any = None
        self.stamps = (0, 0)  # addresses of the chunk's step and time columns
        self.row_writers: list[Any] = []  # write(buffers, row) after the compiled call
        self.row_parts: list[Any] = []  # parts that write their own channels of the row
        self.writer_slots: set[int] = set()  # the recorder slots they fill
        self.call = CompiledCall(F.fused_step_kernel)
        # block arguments of a single step (a block count of 0)
        self.no_block = (np.zeros(F.B_SIZE, np.int64), np.zeros(0), np.zeros(0, np.int64))

    # ------------------------------------------------------------------ binding
    @classmethod
    def bind(
        cls,
        engine: Any,
        sensors: Any,
        taps: Sequence[Any],
        recorder: Any,
        joint_slots: Mapping[str, int],
        body_slots: Mapping[str, int],
        targets: np.ndarray | None,
        row_writers: Sequence[tuple[Any, Sequence[int]]] = (),
        row_parts: Sequence[tuple[Any, Sequence[int]]] = (),
    ) -> FusedStep | None:
        """The fused step of this run, or None (the general path keeps the run).

        Args:
            engine: the run's engine (only the built-in MuJoCo engine is fused).
            sensors: the run's :class:`~runtime.sensors.runtime.SensorRuntime`, after its
                first step.
            taps: the run's sensor taps (channels defined).
            recorder: the run's store writer (channels defined).
            joint_slots: recorder slots of the joint channels.
            body_slots: recorder slots of the body channels.
            targets: the IK joint-target array recorded each step (None: zeros).
            row_writers: ``(write, slots)`` pairs: ``write(buffers, row)`` fills the
                recorder ``slots`` of each fused row after the compiled call, before the
                row ends (the run's lab sensors, :mod:`runtime.run.lab_channels`).
            row_parts: ``(part, slots)`` pairs: a :class:`~runtime.sensors.kinds.FusedPart`
                whose kernel also fills the recorder ``slots`` of the row itself (the run's
                lab sensors when compiled); it runs after the sensor batches' parts, and
                the fused step writes the addresses of its table and of ``si`` into the
                first two columns of the part's int block (the kernel reads the row
                ``si[S_ROW]`` and the channels' buffers from the table).
        """
        if JIT_DISABLED or not cls.ENABLED or not hasattr(engine, "_state_inputs"):
            return None
        fused = cls(engine, sensors, recorder)
        fused.row_writers = [write for write, _ in row_writers]
        fused.writer_slots = {
            int(slot) for _, slots in (*row_writers, *row_parts) for slot in slots
        }
        fused.row_parts = [part for part, _ in row_parts]
        try:
            ok = plan(fused, taps, joint_slots, body_slots, targets)
        except Exception as error:  # noqa: BLE001 - an unforeseen shape: the general path
            LOGGER.debug("fused step declined: %r", error)
            return None
        if not ok:
            return None
        fused._build_table()  # (first: its parts name the part kernels the step calls)
        for part in fused.row_parts:
            part.ints[0, 0] = N.array_address(fused.table)
            part.ints[0, 1] = N.array_address(fused.si)
        addresses = N.kernel_addresses(F.part_kernels(int(fused.si[F.S_PARTS])))
        if addresses is None:
            return None
        fused.si[F.S_KERNELS :] = addresses
        return fused

    def add_part(self, part: Any) -> bool:
        """Take a batch's part of the step (``batch.fused_part``); False: not a fused case."""
        if part.silent:
            self.silent.append(part.unit)
            return True
        if part.kernel is None:  # a built-in part: at most one batch each
            if part.name not in BUILTIN_ROWS or part.name in self.units:
                return False
            self.units[part.name] = part.unit
            self.builtin[part.name] = part
            if part.name == "ray":
                self.layout, self.ray_bodies = part.data[0], part.data[2]
            self.parts.append(part)
            return True
        floats, ints = part.floats, part.ints
        for block, dtype in ((floats, np.float64), (ints, np.int64)):
            if not isinstance(block, np.ndarray) or block.dtype != dtype or block.ndim != 2:
                return False
            if not block.flags.c_contiguous:
                return False
        if id(part.unit) in self.kind_blocks:
            return False
        address = N.part_address(part.kernel)
        if not address:
            return False
        self.extra += [floats, ints]
        self.kind_blocks[id(part.unit)] = (len(self.extra) - 2, len(self.extra) - 1)
        self.kind_addresses[id(part.unit)] = address
        self.parts.append(part)
        return True

    def builtin_row(self, name: str, sensor: Any, tap: Any) -> list[list[int]] | None:
        """The row operations of a sensor of the built-in part ``name`` (its ``fused_row``)."""
        return BUILTIN_ROWS[name](self, sensor, tap)

    def field_ops(self, tap: Any, fields: Any) -> list[list[int]] | None:
        """The row operations of a sensor that declares its fields (``FusedFields``)."""
        return field_ops(self, tap, fields)

    def _build_table(self) -> None:
        engine = self.engine
        n = R.T_FIRST_CHANNEL + self.channel_count + len(self.extra)
        self.table = np.zeros((n, 4), np.int64)
        self.keep = [None] * n
        b = engine._nb
        self._grow(8)
        self._bind_engine()
        self._set(R.T_JNT_RANGE, np.ascontiguousarray(engine._jnt_range, np.float64))
        self._set(R.T_TAB_I, engine._tab_i)
        self._set(R.T_TAB_F, engine._tab_f)
        self._set(R.T_MJ, engine._mj)
        self._set(R.T_QUAT, np.zeros((b, 4)))
        self._set(R.T_JOINT, np.zeros((3, engine._nd)))
        self._set(R.T_COM_LOCAL, engine._com_local)
        self._set(R.T_NO_DTS, np.zeros(0))
        self._set(R.T_NO3, np.zeros((0, 3)))
        self._set(R.T_NO4, np.zeros((0, 4)))
        self._set(R.T_TARGETS, self.targets)
        parts = F.P_KINDS if self.kind_blocks else 0
        contact = self.builtin.get("contact")
        if contact is not None:
            parts |= F.P_CONTACT
            self._set(R.T_C_FLOAT, contact.floats)
            self._set(R.T_C_INT, contact.ints)
        imu = self.builtin.get("imu")
        if imu is not None:
            parts |= F.P_IMU
            self._set(R.T_I_INT, imu.ints)
            self._set(R.T_I_FLOAT, imu.floats)
            self._set(R.T_GRAVITY_UP, np.ascontiguousarray(self.sensors.gravity_up, np.float64))
            self._set(R.T_IMU_OUT, np.zeros(11))
        lay = self.layout
        if lay is not None:
            parts |= F.P_RAY
            if self.ray_bodies:
                parts |= F.P_RAY_BODIES
            if lay.uses_velocities:
                parts |= F.P_RAY_VELOCITIES
            self._set(R.T_R_BLOCK_F, lay.block_f)
            self._set(R.T_R_BLOCK_I, lay.block_i)
            self._set(R.T_R_OUT, lay.out)
            hits = lay.hits  # (a view of the int block's rows: strided)
            self.keep[R.T_R_HITS] = hits
            self.table[R.T_R_HITS] = (N.array_address(hits), hits.shape[0], *hits.strides)
            self._set(R.T_R_HIT_COUNT, lay.hit_count)
        for k, array in enumerate(self.extra):
            self._set(R.T_FIRST_CHANNEL + self.channel_count + k, array)
        self.si[F.S_BODIES] = b
        self.si[F.S_PARTS] = parts
        self.sf[F.F_DT] = float(engine._dt)
        self._bind_channels(self.recorder._buffers)

    def _set(self, slot: int, array: np.ndarray) -> None:
        if not array.flags.c_contiguous:
            raise ValueError(f"table slot {slot}: not C-contiguous")
        self.keep[slot] = array
        row = self.table[slot]
        row[:] = 0
        row[0] = N.array_address(array)
        row[1 : 1 + array.ndim] = array.shape

    def _grow(self, contacts: int) -> None:
        """Own state buffers for ``contacts`` contacts (the engine's reuse layout)."""
        self.capacity = cap = max(contacts, 2 * self.capacity, 8)
        self.vec = np.zeros((5 * self.engine._nb + 3 * cap + 1, 3))
        self.ids = np.zeros(2 * cap, np.int64)
        self._set(R.T_VEC, self.vec)
        self._set(R.T_IDS, self.ids)

    def _bind_engine(self) -> None:
        """The engine's contact views and scratch (replaced when they grow)."""
        engine = self.engine
        self._con_f, self._work_i = engine._con_f, engine._work_i
        self._set(R.T_CON_F, engine._con_f)
        self._set(R.T_CON_I, engine._con_i)
        self._set(R.T_WORK_I, engine._work_i)
        self._set(R.T_WORK_F, engine._work_f)

    def _bind_channels(self, buffers: list[np.ndarray]) -> None:
        """The chunk buffers rows are written to (a new chunk may bring other buffers)."""
        self._buffers = buffers
        self.stamps = (N.array_address(buffers[-2]), N.array_address(buffers[-1]))  # step, time
        for k, buffer in enumerate(buffers[: self.channel_count]):
            slot = R.T_FIRST_CHANNEL + k
            self.keep[slot] = buffer
            row = self.table[slot]
            # row bytes: C order. Not strides[0]: numpy gives an empty channel (a ray-cast
            # sensor disabled with no rays: shape (rows, 0, 3)) the strides of a row of one,
            # and the kernel would write that many bytes per row past its zero-byte buffer
            width = buffer.itemsize * int(np.prod(buffer.shape[1:], dtype=np.int64))
            row[:] = (N.array_address(buffer), width, 0, 0)

    # ------------------------------------------------------------------ stepping
    def step(self) -> bool:
        """The rest of the step MuJoCo just took: state, sensors, recording row.

        Returns:
            False when the run left the fused case (nothing done: the caller runs the general
            path for this step, after :meth:`leave`).

        Raises:
            RuntimeError: a ray hit an actor outside its sensor's path table.
            RecordingError: the store writer failed.
        """
        if self.sensors._changed_paths:
            return False
        engine = self.engine
        nc, acc, efc_force, efc_type, efc_id = engine._state_inputs()
        if nc > self.capacity:
            self._grow(nc)
        si = self.si
        si[F.S_CONTACTS] = nc
        si[F.S_ROW] = self.begin_row()
        si[F.S_STEP] = step = engine._step
        si[F.S_ACC] = acc
        time = engine.data.time
        self.sf[F.F_TIME] = time
        call = self.call
        if (call.entry or call.record)(
            self.table, self.ops, efc_force, efc_type, efc_id, si, self.sf, *self.no_block
        ):
            raise RuntimeError("ray-cast hit outside the actor table (fused step)")
        for write in self.row_writers:
            write(self._buffers, int(si[F.S_ROW]))
        self.recorder.end_row(step, time)
        self.steps += 1
        return True

    def begin_row(self) -> int:
        """The store's next row, the table bound to its chunk buffers and the engine's views.

        The store may have taken a new chunk's buffers, and the engine may have grown its
        contact views or scratch, since the last step: their addresses are taken again.
        """
        engine = self.engine
        if engine._con_f is not self._con_f or engine._work_i is not self._work_i:
            self._bind_engine()
        buffers, row = self.recorder.begin_row()
        if buffers is not self._buffers:
            self._bind_channels(buffers)
        return row

    def joint_positions(self) -> np.ndarray:
        """A copy of the DOF positions of the last fused step."""
        return self.keep[R.T_JOINT][0].copy()

    def leave(self) -> Any:
        """Bring the sensors' bookkeeping up to the last fused step; its state (or None).

        After this the general path (and readings) can take over.
        """
        if not self.steps:
            return None
        state = self.engine.state(reuse=True)  # (the same kernel on the same data)
        runtime = self.sensors
        runtime.step_count += self.steps
        runtime.last_state = state
        for part in self.parts:
            hook = getattr(part.unit, "fused_leave", None)
            if hook is not None:
                hook(state, self.steps)
        self.steps = 0
        return state
