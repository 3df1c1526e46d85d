"""Views of MuJoCo's own memory used by :class:`~runtime.engine.mujoco_engine.MujocoEngine`.

The state kernel reads ``MjData`` through one float64 view of its buffer and MuJoCo's
contact structs through a view of the start of the arena (where MuJoCo keeps
``d.contact``); this mixin builds and validates those views and the kernel's tables.
"""

from __future__ import annotations

import ctypes
import logging

import mujoco
import numpy as np

from runtime.engine import _kernels as K
from runtime.errors import SimrtError

__all__ = ["MjDataViews"]

_LOG = logging.getLogger("runtime.engine")

# MjData arrays read by state_kernel, in the order of the H_XPOS ... H_QFRC_PASSIVE slots
_MJ_ARRAYS = (
    "xpos",
    "xquat",
    "xipos",
    "subtree_com",
    "cvel",
    "cacc",
    "qpos",
    "qvel",
    "qfrc_actuator",
    "qfrc_passive",
)


class MjDataViews:
    """Mixin of :class:`MujocoEngine`: the MjData buffer / contact views and kernel tables.

    Uses the engine's ``model``, ``data``, ``built``, ``dofs`` and index arrays.
    """

    # ------------------------------------------------------------------ setup helpers

    def _map_data_buffer(self) -> None:
        """One float64 view over the MjData buffer region holding the arrays state() reads.

        ``mj_makeData`` places every fixed-size ``mjData`` array in one allocation
        (``nbuffer`` bytes) that lives as long as the ``MjData``; one view plus offsets
        saves ten array arguments per kernel call.
        """
        arrays = [getattr(self.data, name) for name in _MJ_ARRAYS]
        present = [a for a in arrays if a.size]  # empty arrays (nq = 0) have no address
        base = min(a.ctypes.data for a in present)
        end = max(a.ctypes.data + a.nbytes for a in present)
        for name, a in zip(_MJ_ARRAYS, arrays, strict=True):
            if (
                a.dtype != np.float64
                or not a.flags.c_contiguous
                or (a.size and (a.ctypes.data - base) % 8)
            ):
                raise SimrtError(f"unexpected MjData.{name} layout (MuJoCo {mujoco.__version__})")
        if end - base > self.data.nbuffer:
            raise SimrtError(f"MjData arrays span more than nbuffer (MuJoCo {mujoco.__version__})")
        n = (end - base) // 8
        self._mj = np.ctypeslib.as_array((ctypes.c_double * n).from_address(base))
        self._mj_offsets = [(a.ctypes.data - base) // 8 if a.size else 0 for a in arrays]
        for off, a in zip(self._mj_offsets, arrays, strict=True):  # the view is the data
            if a.size and not np.shares_memory(self._mj[off : off + a.size], a):
                raise SimrtError("MjData buffer view does not alias the MjData arrays")

    def _build_tables(self) -> None:
        """Pack the per-engine constants of :func:`state_kernel` into ``tab_i`` / ``tab_f``."""
        m, built = self.model, self.built
        nb = len(built.body_paths)
        nd = len(self.dofs)
        head = np.zeros(K.H_SIZE, dtype=np.int64)
        parts: list[np.ndarray] = [head]
        size = K.H_SIZE

        def add(slot: int, *arrays: np.ndarray) -> None:
            nonlocal size
            head[slot] = size
            for a in arrays:
                parts.append(np.asarray(a, dtype=np.int64).reshape(-1))
                size += parts[-1].size

        add(K.H_BODY_MAP, self._rows, self._ids, self._roots)
        add(K.H_GEOM_BODY, built.geom_body_index)
        add(K.H_DOF_MAP, self._q_adr, self._v_adr, self._ball)
        add(K.H_JNT_MAP, self._jnt_type, self._jnt_qposadr, self._jnt_dofadr)
        head[K.H_NBODY] = m.nbody
        head[K.H_B] = nb
        head[K.H_K] = len(self._rows)
        head[K.H_D] = nd
        head[K.H_NJNT] = m.njnt
        head[K.H_NV] = m.nv
        head[K.H_NQ] = m.nq
        head[K.H_NGEOM] = m.ngeom
        for slot, off in zip(range(K.H_XPOS, K.H_QFRC_PASSIVE + 1), self._mj_offsets, strict=True):
            head[slot] = off
        head[K.H_LIMIT_TYPE] = self._limit_type
        head[K.H_FRICTION_TYPE] = self._friction_type
        head[K.H_SLIDE] = int(mujoco.mjtJoint.mjJNT_SLIDE)
        head[K.H_HINGE] = int(mujoco.mjtJoint.mjJNT_HINGE)
        head[K.H_PYRAMIDAL] = int(self._pyramidal)
        head[K.H_SCALAR_DOFS] = len(self._scalar)
        self._tab_i = np.ascontiguousarray(np.concatenate(parts))
        self._tab_f = np.ascontiguousarray(
            np.concatenate(
                [
                    np.asarray(built.static_positions, dtype=np.float64).reshape(-1),
                    np.asarray(built.static_orientations, dtype=np.float64).reshape(-1),
                    self._gravity,
                    self._sign,
                    [float(m.opt.timestep)],
                ]
            )
        )
        self._jnt_range = m.jnt_range
        self._nb = nb
        self._nd = nd

    def _unmap_contacts(self) -> None:
        self._con_f = np.zeros((0, 1))
        self._con_i = np.zeros((0, 1), dtype=np.int32)
        self._con_base = 0
        self._con_seen = 0

    def _map_contacts(self, nc: int) -> None:
        """View MuJoCo's contact array (the start of the MjData arena) as float64 / int32 rows.

        MuJoCo keeps ``d.contact`` at the start of its arena (``parena = ncon *
        sizeof(mjContact)``), so the views stay valid for the life of the ``MjData``. They
        are re-validated whenever more contacts than ever before are present.
        """
        con = self.data.contact
        size = int(con.dist.strides[0])
        base = int(con.dist.ctypes.data)
        if base != self._con_base:
            if self._con_base:
                _LOG.warning("MuJoCo moved its contact array; re-mapping")
            cap = int(self.model.narena) // size
            if size % 8 or cap < nc:
                raise SimrtError(f"unexpected mjContact layout (MuJoCo {mujoco.__version__})")
            raw = (ctypes.c_char * (cap * size)).from_address(base)
            self._con_f = np.frombuffer(raw, dtype=np.float64).reshape(cap, size // 8)
            self._con_i = np.frombuffer(raw, dtype=np.int32).reshape(cap, size // 4)
            cols = {}
            for name, width in (("pos", 8), ("frame", 8), ("friction", 8)):
                cols[name] = (getattr(con, name).ctypes.data - base) // width
            for name in ("geom", "dim", "efc_address", "exclude"):
                cols[name] = (getattr(con, name).ctypes.data - base) // 4
            tab = self._tab_i
            tab[K.H_CON_POS] = cols["pos"]
            tab[K.H_CON_FRAME] = cols["frame"]
            tab[K.H_CON_FRICTION] = cols["friction"]
            tab[K.H_CON_GEOM] = cols["geom"]
            tab[K.H_CON_DIM] = cols["dim"]
            tab[K.H_CON_EFC_ADDRESS] = cols["efc_address"]
            tab[K.H_CON_EXCLUDE] = cols["exclude"]
            self._con_base = base
            # the views read what MuJoCo's own accessors read
            if not (
                np.array_equal(self._con_f[:nc, cols["pos"] : cols["pos"] + 3], con.pos)
                and np.array_equal(self._con_i[:nc, cols["geom"] : cols["geom"] + 2], con.geom)
                and np.array_equal(self._con_i[:nc, cols["efc_address"]], con.efc_address)
            ):
                raise SimrtError("contact view does not match MjData.contact")
        self._con_seen = nc

    def _grow(self, nc: int, nefc: int) -> None:
        """Map more contacts / enlarge the kernel scratch for ``nc`` contacts, ``nefc`` rows.

        Afterwards ``nc <= _cap_con`` and ``nefc <= _cap_efc`` (the per-call fast check).
        """
        if nc > self._con_seen:
            self._map_contacts(nc)
        if nc > self._work_con or nefc > self._work_efc:
            self._work_con = max(nc, 2 * self._work_con, 8)
            self._work_efc = max(nefc, 2 * self._work_efc, 8)
            self._work_i = np.zeros(1 + 5 * self._work_con + 2 * self._work_efc, dtype=np.int64)
            self._work_f = np.zeros(self.model.nv + 17 * self._work_con)
        self._cap_con = min(self._work_con, self._con_seen)
        self._cap_efc = self._work_efc
