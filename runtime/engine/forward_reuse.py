"""The next step reuses the post-step ``mj_forward`` that readers of accelerations ask for.

Isaac Lab-style IMUs and joint wrenches read the accelerations of the state *after* a step,
so runs and vector environments call ``mj_forward`` after it. MuJoCo's ``mj_step`` is
``mj_checkPos``, ``mj_checkVel``, ``mj_forward``, ``mj_checkAcc``, (the forward / inverse
comparison when ``mjENBL_FWDINV`` is set) and the integrator; its ``mj_forward`` computes
from the same inputs as that post-step one (the warm start ``qacc_warmstart`` is written by
the integrator, not by ``mj_forward``), so the next step can skip it:

* every input unchanged since the post-step forward: ``mj_checkPos``, ``mj_checkVel``,
  ``mj_checkAcc`` and the integrator (``mj_Euler``; ``mj_implicit`` for the implicit and
  implicitfast integrators);
* only acceleration-stage inputs changed (``ctrl``, ``qfrc_applied``, ``xfrc_applied``):
  ``mj_forwardSkip(mjSTAGE_VEL)`` (actuation, accelerations, constraint forces and the
  acceleration sensors; a tenth to a third of ``mj_forward``), then the same;
* anything else: plain ``mj_step``.

The inputs compared, bit for bit, with copies taken right after the forward (one snapshot,
:attr:`ForwardReuse.table`; the compiled steps of :mod:`runtime.run` read the same table):

* ``mjData`` state: ``qpos``, ``qvel``, ``act``, ``qacc_warmstart`` (the solver's warm
  start), ``mocap_pos``, ``mocap_quat``, ``eq_active``, ``userdata`` (callbacks may read
  it), ``plugin_state`` and ``time`` (which also changes with any step taken meanwhile);
* ``mjData`` acceleration-stage inputs: ``ctrl``, ``qfrc_applied``, ``xfrc_applied``;
* ``mjModel``: the whole ``mjOption`` struct (time step, gravity, integrator, flags, solver
  settings, ...) and the arrays randomization writes (:data:`~runtime.engine.snapshot.
  MODEL_FIELDS`: masses, inertias, friction, drive gains) with ``dof_damping``,
  ``dof_armature``, ``dof_frictionloss`` and ``jnt_stiffness``. Other model writes between
  steps must call :meth:`ForwardReuse.invalidate` (the engine's ``reset`` and the batch
  randomization do).

Plain ``mj_step`` also whenever the reuse is unsure: the RK4 or discrete integrator (their
steps evaluate the dynamics themselves), ``mjENBL_FWDINV`` (the step compares forward and
inverse dynamics), ``mjENBL_SLEEP``, ``mjENBL_IPC`` or ``mjENBL_SPECULATIVE``, a MuJoCo
callback set (``mjcb_control``, ``mjcb_passive``, ``mjcb_act_*``, ``mjcb_sensor``,
``mjcb_contactfilter``), a model with flexes, plugins, history buffers (delays) or
plastic state, and any step not preceded by :meth:`ForwardReuse.forward` (the flag is
cleared by every step). When ``mj_checkPos`` / ``mj_checkVel`` report bad values (MuJoCo
then resets the data) the step runs the full ``mj_forward`` before the integrator, as
``mj_step`` does. Tests compare trajectories with plain ``mj_step`` bit for bit.

``SIMRT_FORWARD_REUSE=0`` turns the reuse off (benchmarks compare both).
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import numpy as np

from runtime.engine.snapshot import MODEL_FIELDS

__all__ = ["ForwardReuse", "ARMED", "STATE_FIELDS", "ACC_FIELDS", "GUARD_FIELDS"]

ARMED = 1
"""The flag's value while ``mjData`` holds the forward of the snapshot's inputs."""
STATE_FIELDS = (
    "qpos", "qvel", "act", "qacc_warmstart", "mocap_pos", "mocap_quat", "eq_active",
    "userdata", "plugin_state",
)  # fmt: skip
"""``mjData`` inputs of every stage (and ``time``)."""
ACC_FIELDS = ("ctrl", "qfrc_applied", "xfrc_applied")
"""``mjData`` inputs of the acceleration stage only."""
GUARD_FIELDS = (*MODEL_FIELDS, "dof_damping", "dof_armature", "dof_frictionloss", "jnt_stiffness")
"""``mjModel`` arrays compared (with ``opt``)."""
# table columns: source address, snapshot offset, bytes, group
GROUP_ACC, GROUP_STATE = 0, 1
_CALLBACKS = ("control", "passive", "act_dyn", "act_gain", "act_bias", "sensor", "contactfilter")
_SIZES = {"mjtNum": 8, "int": 4, "mjtByte": 1, "mjtBool": 1, "float": 4}


def _view(address: int, size: int) -> np.ndarray:
    """A uint8 array over ``size`` bytes at ``address`` (the owner keeps it alive)."""
    return np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(address))


def option_layout(model: Any) -> tuple[int, int, dict[str, int]] | None:
    """``(address, size, field offsets)`` of the model's ``mjOption`` struct, or None.

    From the struct's declaration (``mujoco.introspect``) anchored on ``opt.gravity`` (a
    view the bindings give) and accepted only when the scalars read back as the bindings
    read them.
    """
    try:
        from mujoco.introspect import structs

        offsets: dict[str, int] = {}
        offset = 0
        for field in structs.STRUCTS["mjOption"].fields:
            text = str(field.type)
            base = text.split()[0]
            count = 1
            for extent in text[len(base) :].replace("[", " ").replace("]", " ").split():
                count *= int(extent)
            size = _SIZES[base]
            offset += -offset % size
            offsets[field.name] = offset
            offset += size * count
        opt = model.opt
        address = int(opt.gravity.ctypes.data) - offsets["gravity"]
    except Exception:  # noqa: BLE001 - another MuJoCo: no reuse
        return None
    for name in ("timestep", "impratio", "tolerance"):
        if ctypes.c_double.from_address(address + offsets[name]).value != getattr(opt, name):
            return None
    for name in ("integrator", "solver", "iterations", "disableflags", "enableflags", "cone"):
        if ctypes.c_int32.from_address(address + offsets[name]).value != int(getattr(opt, name)):
            return None
    return address, offset, offsets


class ForwardReuse:
    """One engine's post-step forward and the step that reuses it (module docstring).

    Args:
        model: the engine's ``mujoco.MjModel``.
        data: its ``mujoco.MjData``.

    Attributes:
        flag: int64 (1,): :data:`ARMED` while ``data`` holds the forward of the snapshot's
            inputs; every step clears it (the compiled steps read and write it too).
        table: int64 (K, 4): per compared array its address, offset in the snapshot, bytes
            and group (``GROUP_ACC`` rows first, then ``GROUP_STATE``).
        snapshot: uint8: the inputs at the last :meth:`forward` (8-byte aligned entries).
        reason: why the reuse is off for this model (None: on).
        opt_address / opt_offsets: the ``mjOption`` struct's address and field offsets.
        native: the compiled steps' block (``runtime.run``: built once, kept here).
    """

    ENABLED = os.environ.get("SIMRT_FORWARD_REUSE", "1") != "0"

    def __init__(self, model: Any, data: Any) -> None:
        self.model = model
        self.data = data
        self.flag = np.zeros(1, np.int64)
        self.native: Any = None
        self.reason = self._unsupported()
        self.opt_address = 0
        self.opt_offsets: dict[str, int] = {}
        rows: list[tuple[int, int, int]] = []  # (address, bytes, group)
        self._sources: list[np.ndarray] = []
        if self.reason is None:
            layout = option_layout(model)
            time_address = int(data.energy.ctypes.data) - 8  # (time, then energy[2])
            if layout is None or ctypes.c_double.from_address(time_address).value != data.time:
                self.reason = "the mjOption / mjData layout was not verified"
            else:
                self.opt_address, opt_size, self.opt_offsets = layout
                arrays = [(getattr(data, name), GROUP_ACC) for name in ACC_FIELDS]
                arrays += [(getattr(data, name), GROUP_STATE) for name in STATE_FIELDS]
                arrays += [(getattr(model, name), GROUP_STATE) for name in GUARD_FIELDS]
                for array, group in arrays:
                    if array.size:
                        rows.append((int(array.ctypes.data), int(array.nbytes), group))
                rows.append((time_address, 8, GROUP_STATE))
                rows.append((self.opt_address, opt_size, GROUP_STATE))
                rows.sort(key=lambda row: row[2])  # (the acceleration-stage group first)
                if not all(a.flags.c_contiguous for a, _ in arrays if a.size):
                    self.reason, rows = "a compared MuJoCo array is not contiguous", []
        table = np.zeros((len(rows), 4), np.int64)
        offset = split = 0
        parts: list[Any] = []
        for k, (address, size, group) in enumerate(rows):
            table[k] = (address, offset, size, group)
            view = _view(address, size)
            self._sources.append(view)
            parts.append(view)
            pad = -size % 8
            if pad:
                parts.append(bytes(pad))
            offset += size + pad
            if group == GROUP_ACC:
                split = offset
        self._split = split  # (the snapshot's acceleration-stage bytes come first)
        self.table = table
        self.snapshot = np.zeros(max(offset, 8), np.uint8)
        self._parts = parts
        self._warnings = data.warning.number  # (a view: MuJoCo's warning counters)

    def _unsupported(self) -> str | None:
        m, d = self.model, self.data
        for name, count in (
            ("flexes", m.nflex), ("plugins", m.nplugin), ("history buffers", d.history.size),
            ("plastic state", d.plastic.size),
        ):  # fmt: skip
            if count:
                return f"the model has {name}"
        return None

    # ------------------------------------------------------------------ the Python path
    def forward(self) -> None:
        """``mj_forward`` of the state the last step left; the next :meth:`step` reuses it."""
        import mujoco

        mujoco.mj_forward(self.model, self.data)
        if self.ENABLED and self.reason is None:
            self.snapshot[:] = np.frombuffer(b"".join(self._parts), np.uint8)
            self.flag[0] = ARMED
        else:
            self.flag[0] = 0

    def invalidate(self) -> None:
        """Forget the last forward (the model or the data were written in a way not compared)."""
        self.flag[0] = 0

    def step(self) -> None:
        """One physics step: MuJoCo's ``mj_step``, reusing the last :meth:`forward` if it can."""
        import mujoco

        m, d = self.model, self.data
        flag = self.flag
        if flag[0] != ARMED:
            mujoco.mj_step(m, d)
            return
        flag[0] = 0
        integrate = self._integrator(mujoco)
        if integrate is None:
            mujoco.mj_step(m, d)
            return
        now = b"".join(self._parts)
        before = self.snapshot.tobytes()
        split = self._split
        if now[split:] != before[split:]:
            mujoco.mj_step(m, d)
            return
        counters = self._warnings.tobytes()
        mujoco.mj_checkPos(m, d)
        mujoco.mj_checkVel(m, d)
        if self._warnings.tobytes() != counters:  # (bad values: MuJoCo reset the data)
            mujoco.mj_forward(m, d)
        elif now[:split] != before[:split]:
            mujoco.mj_forwardSkip(m, d, mujoco.mjtStage.mjSTAGE_VEL, 0)
        mujoco.mj_checkAcc(m, d)
        integrate(m, d)

    def _integrator(self, mujoco: Any) -> Any:
        """The integrator function ``mj_step`` would call after its forward, or None."""
        opt = self.model.opt
        kinds = mujoco.mjtIntegrator
        bits = mujoco.mjtEnableBit
        off = (bits.mjENBL_FWDINV, bits.mjENBL_SLEEP, bits.mjENBL_IPC, bits.mjENBL_SPECULATIVE)
        if opt.enableflags & sum(int(b) for b in off):
            return None
        if any(getattr(mujoco, f"get_mjcb_{name}")() is not None for name in _CALLBACKS):
            return None
        integrator = opt.integrator
        if integrator == kinds.mjINT_EULER:
            return mujoco.mj_Euler
        if integrator in (kinds.mjINT_IMPLICIT, kinds.mjINT_IMPLICITFAST):
            return mujoco.mj_implicit
        return None
