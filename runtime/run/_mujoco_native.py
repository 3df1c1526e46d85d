"""MuJoCo's C entry points and ``mjData`` fields for compiled step blocks.

A compiled block (:mod:`runtime.run.blocks`) calls ``mj_step`` and the kinematics functions
through their addresses in ``libmujoco`` and reads a few ``mjData`` scalars and pointers
(contact and constraint counts, the constraint arrays, the time) at their byte offsets. The
offsets come from the struct's declaration (``mujoco.introspect``) anchored on fields whose
addresses the Python bindings give, and are accepted only after every pointer field with a
non-empty NumPy view, and the scalars, read back what the bindings read: otherwise (another
MuJoCo layout) there are no blocks and the run steps through the bindings.

Errors: the bindings turn a MuJoCo error (``mju_error``: an exhausted arena, say) into a
Python exception. A direct call has no such handler, and MuJoCo's default one exits the
process; :func:`native` installs a handler that records the message instead (only where no
other handler is set), and the block stops at the step that raised it.
"""

from __future__ import annotations

import ctypes
import logging
import os
from typing import Any

import numpy as np

from runtime.run._native_kernels import array_address

LOGGER = logging.getLogger("runtime.run")

__all__ = ["native", "layout", "reuse_block"]

_FUNCTIONS = ("mj_step", "mj_kinematics", "mj_comPos", "mj_comVel", "mj_rnePostConstraint")
# the post-step forward and the step that reuses it (runtime.run._forward_kernels FN_*)
_REUSE_FUNCTIONS = (
    "mj_step", "mj_forward", "mj_forwardSkip", "mj_checkPos", "mj_checkVel", "mj_checkAcc",
    "mj_Euler", "mj_implicit",
)  # fmt: skip
_CALLBACKS = (
    "mjcb_control", "mjcb_passive", "mjcb_act_dyn", "mjcb_act_gain", "mjcb_act_bias",
    "mjcb_sensor", "mjcb_contactfilter",
)  # fmt: skip
_STATE: dict[str, Any] = {}
# pointer fields a block uses (or that anchor the layout): each must read back as the bindings
_KEY_POINTERS = ("qpos", "qvel", "ctrl", "xpos", "efc_type", "efc_id", "efc_force")


def _library() -> ctypes.CDLL | None:
    import mujoco

    folder = os.path.dirname(mujoco.__file__)
    names = sorted(n for n in os.listdir(folder) if n.startswith("libmujoco.so"))
    if not names:
        return None
    return ctypes.CDLL(os.path.join(folder, names[-1]))  # (the bindings' own, already loaded)


def native() -> dict[str, Any] | None:
    """Function addresses (``_FUNCTIONS``) and the error flag, or None (unavailable).

    Returns:
        ``{"functions": int64 addresses, "forward": mj_forward's address, "reuse": int64
        addresses of ``_REUSE_FUNCTIONS``, "callbacks": int64 addresses of MuJoCo's
        callback pointers, "error": int64 (1,) flag array, "messages": list}``.
    """
    if "native" in _STATE:
        return _STATE["native"]
    found = None
    try:
        lib = _library()
        if lib is not None:
            handler_slot = ctypes.c_void_p.in_dll(lib, "mju_user_error")
            flag = np.zeros(1, np.int64)
            messages: list[str] = []

            @ctypes.CFUNCTYPE(None, ctypes.c_char_p)
            def on_error(message: bytes) -> None:  # (runs inside a block; must return)
                flag[0] = 1
                messages.append(message.decode(errors="replace"))

            if handler_slot.value is None:  # no one else's handler to replace
                handler_slot.value = ctypes.cast(on_error, ctypes.c_void_p).value
                addresses = [
                    ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in _FUNCTIONS
                ]
                forward = ctypes.cast(lib.mj_forward, ctypes.c_void_p).value
                reuse = [
                    ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
                    for name in _REUSE_FUNCTIONS
                ]
                callbacks = [
                    ctypes.addressof(ctypes.c_void_p.in_dll(lib, name)) for name in _CALLBACKS
                ]
                if all(addresses) and forward and all(reuse) and all(callbacks):
                    found = {
                        "functions": np.array(addresses, np.int64),
                        "forward": int(forward),  # (mj_forward: the envs' post-step state)
                        "reuse": np.array(reuse, np.int64),
                        "callbacks": np.array(callbacks, np.int64),
                        "error": flag,
                        "messages": messages,
                        "handler": on_error,  # (kept alive)
                    }
    except (OSError, AttributeError, ValueError) as error:
        LOGGER.debug("MuJoCo entry points unavailable: %r", error)
    _STATE["native"] = found
    return found


def layout(data: Any) -> dict[str, int] | None:
    """Byte offsets of the ``mjData`` fields a block reads, verified on ``data``; or None.

    Every pointer field whose NumPy view is not empty must read back as the view's address
    (the constraint pointers too when there are constraint rows), and the counts and the
    time as the bindings read them.
    """
    try:
        from mujoco.introspect import structs

        fields = [f.name for f in structs.STRUCTS["mjData"].fields]
        kinds = [str(f.type) for f in structs.STRUCTS["mjData"].fields]
        base = int(data._address)
        timer = data.timer.duration
        time_offset = array_address(data.energy) - base - 8  # (time, then energy[2])
        counts = array_address(timer) - base + timer.shape[0] * timer.strides[0]
        first = fields.index("buffer")
        pointers = array_address(data.energy) - base + 8 * data.energy.shape[0]
        offsets = {"time": time_offset}
        for name in ("ncon", "ne", "nf", "nl", "nefc"):
            offsets[name] = counts + 4 * (fields.index(name) - fields.index("ncon"))
        for k in range(first, len(fields)):
            if "*" not in kinds[k]:
                break
            offsets[fields[k]] = pointers + 8 * (k - first)
    except Exception as error:  # noqa: BLE001 - another MuJoCo: no blocks
        LOGGER.debug("mjData layout unavailable: %r", error)
        return None
    matched = 0
    for name, offset in offsets.items():
        if name in ("time", "ncon", "ne", "nf", "nl", "nefc"):
            continue
        view = getattr(data, name, None)
        if isinstance(view, np.ndarray) and view.size:
            if ctypes.c_uint64.from_address(base + offset).value == array_address(view):
                matched += 1
            elif name in _KEY_POINTERS:
                return None  # (the constraint pointers: checked when there are rows)
    read = {n: ctypes.c_int32.from_address(base + offsets[n]).value for n in ("ncon", "nefc")}
    if (
        matched < 50
        or any(name not in offsets for name in _KEY_POINTERS)
        or read["ncon"] != data.ncon
        or read["nefc"] != data.nefc
        or ctypes.c_double.from_address(base + time_offset).value != data.time
    ):
        return None
    if data.ncon:
        contact = ctypes.c_uint64.from_address(base + offsets["contact"]).value
        if contact != int(data.contact.dist.ctypes.data):
            return None
    return offsets


def reuse_block(engine: Any) -> np.ndarray | None:
    """The compiled steps' block (``runtime.run._forward_kernels`` ``R_*``) of ``engine``.

    Over the engine's :class:`~runtime.engine.forward_reuse.ForwardReuse` (its flag, table
    and snapshot); built once and kept there. None: no MuJoCo entry points, or an engine
    without one (the compiled steps then call ``mj_step`` / ``mj_forward`` directly).
    """
    import mujoco

    from runtime.run import _forward_kernels as R

    reuse = getattr(engine, "forward_reuse", None)
    functions = native()
    if reuse is None or functions is None:
        return None
    if reuse.native is not None:
        return reuse.native
    bits = mujoco.mjtEnableBit
    off = (bits.mjENBL_FWDINV, bits.mjENBL_SLEEP, bits.mjENBL_IPC, bits.mjENBL_SPECULATIVE)
    stages = int(mujoco.mjtStage.mjSTAGE_VEL) == R.STAGE_VEL
    kinds = mujoco.mjtIntegrator
    integrators = (kinds.mjINT_EULER, kinds.mjINT_IMPLICIT, kinds.mjINT_IMPLICITFAST)
    enabled = (
        reuse.ENABLED
        and reuse.reason is None
        and sum(int(b) for b in off) == R.ENABLE_OFF
        and stages
        and tuple(int(k) for k in integrators) == (R.INT_EULER, R.INT_IMPLICIT, R.INT_IMPLICITFAST)
    )
    warnings = reuse._warnings
    block = np.zeros(R.R_SIZE, np.int64)
    block[R.R_FLAG] = array_address(reuse.flag)
    block[R.R_TABLE] = array_address(reuse.table) if reuse.table.size else 0
    block[R.R_ROWS] = reuse.table.shape[0]
    block[R.R_SNAPSHOT] = array_address(reuse.snapshot)
    block[R.R_MODEL] = int(engine.model._address)
    block[R.R_DATA] = int(engine.data._address)
    block[R.R_ENABLED] = bool(enabled and reuse.table.size and warnings.strides == (8,))
    block[R.R_OPT] = reuse.opt_address
    block[R.R_OFF_INTEGRATOR] = reuse.opt_offsets.get("integrator", 0)
    block[R.R_OFF_ENABLE] = reuse.opt_offsets.get("enableflags", 0)
    block[R.R_WARN] = array_address(warnings)
    block[R.R_WARN_COUNT] = warnings.shape[0]
    block[R.R_FN : R.R_FN + len(_REUSE_FUNCTIONS)] = functions["reuse"]
    count = len(_CALLBACKS)
    block[R.R_CALLBACKS : R.R_CALLBACKS + count] = functions["callbacks"]
    block[R.R_CALLBACK_COUNT] = count
    reuse.native = block
    return block
