"""Compiled step blocks: whole steps, ``mj_step`` included, without returning to Python.

The fused step (:mod:`runtime.run.fused`) still leaves a Python frame per step: the
``mj_step`` binding call, the engine's warning check, MuJoCo's kinematics calls, the store's
row bookkeeping. A block runs up to ``StepBlocks.block_steps`` whole steps in one call of
:func:`runtime.run._fused_kernels.fused_step_kernel`: the IK targets interpolated between
solves as :meth:`IkDriver.update` sends them, ``mj_step`` and the kinematics through
MuJoCo's C entry points (:mod:`runtime.run._mujoco_native`; a step right after the lab
sensors' post-step ``mj_forward`` reuses it: :mod:`runtime.run._forward_kernels`), the
warning counters compared after every step, the fused step's state, sensors and row, the
row's stamps.

A block ends where the Python loop has something to do: an IK solve that was not solved
ahead (:func:`runtime.run._ik_fast.lookahead`: the driver's solves do not depend on the
physics, so the next intervals' solutions are found back to back before a block, which
crosses their interval starts; a solve that does not converge, or a simulation time other
than the one solved for, ends it), the end of the store's chunk, a MuJoCo warning or
error, contact arrays that must grow, a robot contact that freezes the IK targets. The loop
then finishes that step itself, so the recording is the general path's, bit for bit
(tests). Blocks run only while MuJoCo's arena is at most half used, so that an arena
exhausted inside a block (which MuJoCo reports through ``mju_error``, recorded here by the
handler that ``_mujoco_native`` installs) is improbable; the bindings' own path handles it
as an exception.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import numpy as np

from runtime.errors import SimrtError
from runtime.run import _fused_kernels as F
from runtime.run import _mujoco_native
from runtime.run._ik_fast import commit_ahead, lookahead
from runtime.run._native_kernels import array_address

LOGGER = logging.getLogger("runtime.run")

__all__ = ["StepBlocks"]


class StepBlocks:
    """Blocks of whole steps for one run's :class:`~runtime.run.fused.FusedStep`."""

    # A block's steps: as many as take about BLOCK_SECONDS (a stop signal waits at most one
    # block), from the last block's time per step, between MIN_STEPS and MAX_STEPS. The
    # Python around a block costs 0.1-0.2 ms: a Panda block of 200 steps paid 1 us per step.
    BLOCK_SECONDS = 0.01
    MIN_STEPS, MAX_STEPS = 50, 5000
    # tests set False to record through the fused step alone
    ENABLED = os.environ.get("SIMRT_BLOCKS", "1") != "0"

    def __init__(self, fused: Any, native: dict[str, Any], ik: Any, freeze: list[Any]):
        self.fused = fused
        self.engine = fused.engine
        self.native = native
        self.ik = ik
        # the robot's contact sensors whose contact freezes the IK targets, and their rows
        # in the contact batch (the kernel's copy of ContactSensor.in_contact reads those)
        self.freeze = freeze
        self.freeze_rows = np.array([int(s._index) for s in freeze], np.int64)
        self.block_steps = 200  # (then sized by each block's time per step)
        self.offsets: dict[str, int] | None = None
        self.blk = np.zeros(F.B_SIZE, np.int64)
        self.clean = np.zeros(0, np.int64)
        self.ik_f = np.zeros(0)
        self.ik_i = np.zeros(0, np.int64)
        self.skip_once = False
        self.failed = False
        self._item: dict[str, Any] | None = None
        # the IK solutions the planned block may use: (item, solutions, phase, every)
        self.ahead: tuple[dict[str, Any], list[np.ndarray], int, int] | None = None
        self.ik_seconds = 0.0  # time spent solving ahead

    @classmethod
    def bind(cls, fused: Any, ik: Any, contact_checks_sensors: list[Any]) -> StepBlocks | None:
        """Blocks for ``fused``'s run, or None (steps stay one fused call each).

        Args:
            fused: the run's fused step.
            ik: the run's IK driver (None without IK).
            contact_checks_sensors: the robot's contact sensors (IK's until-contact check).
        """
        native = _mujoco_native.native() if cls.ENABLED else None
        if native is None:
            return None
        contact = fused.units.get("contact")
        for sensor in contact_checks_sensors:
            if contact is None or getattr(sensor, "_batch", None) is not contact:
                return None
        recorder = fused.recorder
        if recorder._steps.dtype != np.int64 or recorder._times.dtype != np.float64:
            return None
        return cls(fused, native, ik, list(contact_checks_sensors))

    # ------------------------------------------------------------------ planning
    def _ready(self) -> bool:
        engine = self.engine
        if self.offsets is None:
            if self.failed:
                return False
            self.offsets = _mujoco_native.layout(engine.data)
            if self.offsets is None:
                self.failed = True  # another MuJoCo layout: no blocks in this run
                LOGGER.debug("compiled step blocks off: mjData layout not verified")
                return False
            blk = self.blk
            blk[F.B_MODEL] = int(engine.model._address)
            blk[F.B_DATA] = int(engine.data._address)
            blk[F.B_FN : F.B_FN + 5] = self.native["functions"]
            blk[F.B_ERROR] = array_address(self.native["error"])
            blk[F.B_OFF_NCON] = self.offsets["ncon"]
            blk[F.B_OFF_NEFC] = self.offsets["nefc"]
            blk[F.B_OFF_TIME] = self.offsets["time"]
            blk[F.B_OFF_EFC_FORCE] = self.offsets["efc_force"]
            blk[F.B_OFF_EFC_TYPE] = self.offsets["efc_type"]
            blk[F.B_OFF_EFC_ID] = self.offsets["efc_id"]
            warnings = engine._warnings  # (int32 counters, 8 bytes apart)
            blk[F.B_WARN] = array_address(warnings)
            blk[F.B_WARN_COUNT] = warnings.shape[0]
            if warnings.strides != (8,) or warnings.dtype != np.int32:
                self.offsets, self.failed = None, True
                return False
            # the counters after the build (the engine's clean snapshot: tobytes() of the
            # strided view, one int32 per counter)
            self.clean = np.frombuffer(engine._no_warnings, np.int32).astype(np.int64)
            if self.clean.shape[0] != warnings.shape[0]:
                self.offsets, self.failed = None, True
                return False
            blk[F.B_WARN_CLEAN] = array_address(self.clean)
            blk[F.B_CTRL] = array_address(engine.data.ctrl) if engine.data.ctrl.size else 0
            # a step after a post-step forward (the lab sensors') reuses it
            reuse = _mujoco_native.reuse_block(engine)
            blk[F.B_REUSE] = array_address(reuse) if reuse is not None else 0
        return True

    def plan(self, k: int, last: int, ik_sent: bool = False) -> int:
        """How many steps from step ``k`` (1-based) one block may take (0: none).

        Args:
            k: the next step.
            last: the run's last step.
            ik_sent: the IK driver's update for step ``k`` is done (a solve step); the
                block sends the same targets again at step ``k``.
        """
        if self.skip_once:
            self.skip_once = False
            return 0
        data = self.engine.data
        if data.maxuse_arena + data.maxuse_stack > data.narena // 2 or not self._ready():
            return 0
        recorder = self.fused.recorder
        n = min(self.block_steps, last - k + 1, recorder.chunk_rows - recorder._row)
        blk = self.blk
        blk[F.B_IK] = 0
        blk[F.B_FREEZE_ROWS] = 0
        ik = self.ik
        self.ahead = None
        if ik is not None and ik.disabled_reason is None and ik.frozen_at is None:
            every = ik.every
            phase = (k - 1) % every
            if phase == 0 and not ik_sent:
                return 0  # an IK solve: the loop's
            item = self._ik_item()
            if item is None:
                return 0
            if ik.until_contact and self.freeze:
                if any(sensor.in_contact() for sensor in self.freeze):
                    return 0  # IkDriver.update freezes at this step: the loop's
                blk[F.B_FREEZE_ROWS] = self.freeze_rows.shape[0]
            spans = 1
            if item["q_to"] is not None:  # targets move from q_from to q_to, interval by interval
                wanted = -(-(phase + n) // every) - 1  # further intervals the block could reach
                ahead, times = ([], [])
                if wanted > 0:
                    engine = self.engine
                    timestep = float(engine.model.opt.timestep)
                    began = time.perf_counter()
                    ahead, times = lookahead(
                        ik, item, wanted, float(engine.data.time), phase, timestep
                    )
                    self.ik_seconds += time.perf_counter() - began
                spans += len(ahead)
                self.ik_f = np.concatenate(
                    [item["q_from"], item["q_to"], *ahead, np.asarray(times, np.float64)]
                )
                blk[F.B_IK] = item["q_to"].shape[0]
                self.ahead = (item, ahead, phase, every)
            n = min(n, spans * every - phase)
            blk[F.B_IK_SPANS] = spans
            blk[F.B_IK_PHASE] = phase
            blk[F.B_IK_EVERY] = every
        return max(n, 0)

    def _ik_item(self) -> dict[str, Any] | None:
        """The IK driver's one item, its index arrays in ``ik_i`` (None: not a block's)."""
        if self._item is None:
            items = self.ik.items
            if len(items) != 1:
                return None
            actuators = getattr(items[0]["send"], "actuators", None)
            indices = np.asarray(items[0]["indices"], np.int64)
            if actuators is None or actuators.shape != indices.shape:
                return None
            self.ik_i = np.concatenate([indices, actuators, self.freeze_rows]).astype(np.int64)
            self._item = items[0]
        return self._item

    # ------------------------------------------------------------------ running
    def run(self, count: int) -> tuple[int, int]:
        """Run a block of ``count`` steps (from :meth:`plan`).

        Returns:
            ``(taken, status)``: steps MuJoCo took, and the block's ``ST_*`` status.
            ``ST_WARNED`` / ``ST_PYTHON``: the last step taken is not recorded yet (the
            loop checks MuJoCo's warnings, then records it through the fused step).

        Raises:
            SimrtError: MuJoCo reported an error (the step is not recorded).
            RuntimeError: a ray hit an actor outside its sensor's path table.
        """
        fused, engine, blk = self.fused, self.engine, self.blk
        recorder = fused.recorder
        si = fused.si
        si[F.S_ROW] = fused.begin_row()
        blk[F.B_STEPS], blk[F.B_TIMES] = fused.stamps
        si[F.S_STEP] = engine._step
        si[F.S_ACC] = bool(engine.compute_accelerations)
        blk[F.B_COUNT] = count
        blk[F.B_CAP_CON] = engine._cap_con
        blk[F.B_CAP_EFC] = engine._cap_efc
        blk[F.B_CAP_VEC] = fused.capacity
        blk[F.B_SCALAR_DOFS] = bool(engine._scalar_dofs)
        empty_f, empty_i = engine._no_efc_f, engine._no_efc_i
        call = fused.call
        began = time.perf_counter()
        try:
            (call.entry or call.record)(
                fused.table, fused.ops, empty_f, empty_i, empty_i, si, fused.sf, blk,
                self.ik_f, self.ik_i,
            )  # fmt: skip
        finally:
            blk[F.B_COUNT] = 0
        taken, status = int(blk[F.B_DONE]), int(blk[F.B_STATUS])
        if taken >= self.MIN_STEPS:  # (a short block's time per step says little)
            per_step = (time.perf_counter() - began) / taken
            wanted = int(self.BLOCK_SECONDS / per_step) if per_step > 0 else self.MAX_STEPS
            self.block_steps = min(self.MAX_STEPS, max(self.MIN_STEPS, wanted))
        if self.ahead is not None and taken:  # the intervals its steps reached
            item, ahead, phase, every = self.ahead
            commit_ahead(self.ik, item, ahead, (phase + taken - 1) // every)
        self.ahead = None
        if status in (F.ST_DONE, F.ST_CONTACT) and taken and si[F.S_CONTACTS] != engine.data.ncon:
            self.failed, self.offsets = True, None  # (the layout check's last line of defence)
            raise SimrtError("compiled step block read a wrong contact count; rerun")
        engine._step += taken
        unrecorded = status in (F.ST_WARNED, F.ST_PYTHON, F.ST_MJ_ERROR, F.ST_BAD_ACTOR)
        recorded = taken - (1 if unrecorded else 0)
        if taken:
            engine._dirty = status in (F.ST_WARNED, F.ST_MJ_ERROR)
        fused.steps += recorded
        recorder.end_rows(recorded)
        if status == F.ST_IK:
            self.skip_once = True  # the Python step sends it (and disables IK)
        if status == F.ST_MJ_ERROR:
            flag, messages = self.native["error"], self.native["messages"]
            flag[0] = 0
            message = messages[-1] if messages else "unknown error"
            messages.clear()
            raise SimrtError(f"MuJoCo error at step {engine._step}: {message}")
        if status == F.ST_BAD_ACTOR:
            raise RuntimeError("ray-cast hit outside the actor table (fused step)")
        return taken, status
