"""Turning a MuJoCo instability warning into an :class:`EngineDivergenceError`.

MuJoCo counts warnings in ``MjData.warning[kind]`` (``number``, and ``lastinfo``: the DOF,
or actuator for controls, where it last happened). For ``mjWARN_BADQPOS``,
``mjWARN_BADQVEL`` and ``mjWARN_BADQACC`` (a value that is NaN, inf or above ``mjMAXVAL``
= 1e10) it also resets the whole state, so nothing meaningful is left to record;
``mjWARN_BADCTRL`` zeroes the controls; ``mjWARN_INERTIA`` (near-singular joint-space inertia,
e.g. a body of 1e30 kg beside ones of 1 kg) keeps stepping with meaningless accelerations.
All five are fatal here. ``mjWARN_CONTACTFULL`` / ``mjWARN_CNSTRFULL`` (arena full, some
contacts dropped) are logged by the engine and not fatal.
"""

from __future__ import annotations

import logging
from typing import Any

import mujoco
import numpy as np

from runtime.errors import EngineDivergenceError

__all__ = ["check_warnings", "divergence_error", "is_fatal"]

_LOG = logging.getLogger("runtime.engine")

_W = mujoco.mjtWarning
_FATAL = {
    int(_W.mjWARN_INERTIA): "near-singular inertia matrix (mass or inertia ratios too large)",
    int(_W.mjWARN_BADQPOS): "NaN, inf or huge joint position (MuJoCo reset the state)",
    int(_W.mjWARN_BADQVEL): "NaN, inf or huge joint velocity (MuJoCo reset the state)",
    int(_W.mjWARN_BADQACC): "NaN, inf or huge joint acceleration (MuJoCo reset the state)",
    int(_W.mjWARN_BADCTRL): "NaN, inf or huge control (MuJoCo zeroed the controls)",
}
_WORST = 3  # DOFs / bodies named in the message


def is_fatal(kind: int) -> bool:
    """Whether the MuJoCo warning ``kind`` (an ``mjtWarning`` value) stops a run."""
    return kind in _FATAL


def _dof_labels(engine: Any) -> dict[int, str]:
    """MuJoCo DOF index -> reported DOF name with its USD joint path."""
    labels = {}
    for b in engine.dofs:
        labels[int(b.dof_adr) + max(int(b.ball_axis), 0)] = f"{b.name} ({b.joint_path})"
    return labels


def _body_paths(engine: Any) -> dict[int, str]:
    """MuJoCo body id -> USD body path."""
    built = engine.built
    return {int(i): str(p) for i, p in zip(built.body_ids, built.body_paths, strict=False)}


def divergence_error(engine: Any, kind: int) -> EngineDivergenceError:
    """The error for MuJoCo warning ``kind`` raised during the engine's last step.

    Args:
        engine: the :class:`~runtime.engine.MujocoEngine` (its ``model``, ``data``,
            ``dofs``, ``built`` and step counter).
        kind: the ``mjtWarning`` value whose counter is non-zero.

    Returns:
        The error naming the step, the time, the warning and the DOFs / bodies involved:
        the DOF MuJoCo reported, then (when the state was not reset) the DOFs with the
        largest ``|qacc|``.
    """
    m, d = engine.model, engine.data
    info = int(d.warning[kind].lastinfo)
    dofs: list[int] = []
    if kind == int(_W.mjWARN_BADCTRL):
        if 0 <= info < m.nu and m.actuator_trntype[info] == mujoco.mjtTrn.mjTRN_JOINT:
            dofs.append(int(m.jnt_dofadr[m.actuator_trnid[info, 0]]))
    elif 0 <= info < m.nv:
        dofs.append(info)
    if kind == int(_W.mjWARN_INERTIA) and m.nv:
        qacc = np.abs(np.nan_to_num(np.asarray(d.qacc, np.float64), nan=np.inf))
        for i in np.argsort(-qacc, kind="stable")[:_WORST]:
            if int(i) not in dofs:
                dofs.append(int(i))
    dofs = dofs[:_WORST]
    labels = _dof_labels(engine)
    paths = _body_paths(engine)
    bodies: list[str] = []
    for i in dofs:
        body = paths.get(int(m.dof_bodyid[i]), f"MuJoCo body {int(m.dof_bodyid[i])}")
        if body not in bodies:
            bodies.append(body)
    step = int(engine._step)
    return EngineDivergenceError(
        step=step,
        time=step * float(m.opt.timestep),
        reason=f"MuJoCo {_W(kind).name}: {_FATAL[kind]}",
        dofs=tuple(labels.get(i, f"MuJoCo DOF {i}") for i in dofs),
        bodies=tuple(bodies),
    )


def check_warnings(engine: Any) -> None:
    """Raise for an instability warning of the engine's last step; log the others once.

    Called by :meth:`~runtime.engine.MujocoEngine.step` only when a warning counter is
    non-zero. Capacity warnings (arena full) are logged and their counters cleared.

    Args:
        engine: the engine (its ``data`` and step counter).

    Raises:
        EngineDivergenceError: for ``mjWARN_INERTIA`` / ``BADQPOS`` / ``BADQVEL`` /
            ``BADQACC`` / ``BADCTRL``.
    """
    d = engine.data
    counters = d.warning.number
    for kind in np.flatnonzero(counters):
        if is_fatal(int(kind)):
            raise divergence_error(engine, int(kind))
        _LOG.warning(
            "MuJoCo warning %s at step %d (info %d)",
            _W(int(kind)).name,
            int(engine._step),
            int(d.warning[int(kind)].lastinfo),
        )
        d.warning[int(kind)].number = 0
