"""The fused step: state extraction, every sensor batch and the recording row in one call.

:func:`fused_step_kernel` runs, for the step MuJoCo just took, the kernels the general path
calls one by one from Python -- :func:`runtime.engine._kernels.state_kernel`, the contact,
IMU and ray-cast batch kernels -- on the same arrays with the same types, then writes the
step's recording row straight into the store's chunk buffers. The arrays travel as raw
addresses in one int64 table (``(address, n0, n1, n2)`` per slot; :mod:`runtime.run.fused`
keeps every array alive and rebuilds the table when one is replaced): one argument to
convert instead of about sixty, which is most of what the general path's glue costs.

The part kernels are called, not copied: the fused path gives the general path's readings
bit for bit (tests compare whole recordings).
"""

from __future__ import annotations

import numpy as np

from runtime._compile.jit import jit
from runtime.run._forward_kernels import step_reusing
from runtime.run._native_kernels import (
    K_CONTACT,
    K_IMU,
    K_IMU_READ,
    K_PART,
    K_RAY,
    K_STATE,
    KERNELS,
    _call_c,
    _call_kernel,
    _f64p,
    _i32p,
    _i64p,
    raw_array,
    store_fence,
)
from runtime.run._row_kernels import (
    BAD_ACTOR,
    OK,
    OP_BODY,
    OP_CONTACT,
    OP_FIELDS,
    OP_IMU,
    OP_JOINT,
    OP_PART,
    OP_RAY,
    OP_ZERO,
    T_C_FLOAT,
    T_C_INT,
    T_COM_LOCAL,
    T_CON_F,
    T_CON_I,
    T_I_FLOAT,
    T_I_INT,
    T_IDS,
    T_JNT_RANGE,
    T_JOINT,
    T_MJ,
    T_NO3,
    T_NO4,
    T_NO_DTS,
    T_QUAT,
    T_R_BLOCK_F,
    T_R_BLOCK_I,
    T_R_OUT,
    T_TAB_F,
    T_TAB_I,
    T_TARGETS,
    T_VEC,
    T_WORK_F,
    T_WORK_I,
    _copy64,
    _f32_1,
    _f64_1,
    _f64_2,
    _f64_3,
    _i64_1,
    _i64_2,
    _row,
    _write_contact,
    _write_fields,
    _write_imu,
    _write_ray,
    _zero,
)

# ---- per-step integers / floats (from S_KERNELS: the part kernels' native addresses)
S_CONTACTS, S_ROW, S_STEP, S_ACC, S_BODIES, S_PARTS, S_KERNELS = range(7)
F_TIME, F_DT = range(2)

# ---- parts present (bits of S_PARTS); P_KINDS: sensor kinds' own part kernels (``OP_PART``)
P_CONTACT, P_IMU, P_RAY, P_RAY_BODIES, P_RAY_VELOCITIES, P_KINDS = 1, 2, 4, 8, 16, 32


def part_kernels(parts: int) -> set[int]:
    """The part kernels (``K_*``) a step with the ``parts`` bits calls (the state's always)."""
    calls = ((P_CONTACT, (K_CONTACT,)), (P_IMU, (K_IMU, K_IMU_READ)), (P_RAY, (K_RAY,)))
    return {K_STATE, *(k for bit, kernels in calls if parts & bit for k in kernels)}


# ---- a block of whole steps (``blk``): inputs, then B_DONE / B_STATUS written
B_COUNT, B_DONE, B_STATUS, B_MODEL, B_DATA, B_FN = range(6)  # B_FN: 5 MuJoCo functions
B_REUSE = 10  # the engine's forward-reuse block (runtime.run._forward_kernels), or 0
B_ERROR, B_OFF_NCON, B_OFF_NEFC, B_OFF_TIME, B_OFF_EFC_FORCE = range(11, 16)
B_OFF_EFC_TYPE, B_OFF_EFC_ID, B_WARN, B_WARN_COUNT, B_WARN_CLEAN = range(16, 21)
B_CAP_CON, B_CAP_EFC, B_CAP_VEC, B_SCALAR_DOFS, B_STEPS, B_TIMES = range(21, 27)
B_IK, B_IK_PHASE, B_IK_EVERY, B_CTRL, B_FREEZE_ROWS, B_IK_SPANS = range(27, 33)
B_SIZE = 33
# how a block ended: every step done; the last step taken but not recorded (ST_WARNED:
# MuJoCo warned, kinematics not updated; ST_PYTHON: the engine's views must grow first;
# ST_MJ_ERROR: MuJoCo reported an error; ST_BAD_ACTOR: see BAD_ACTOR); ST_IK: the last
# step not taken (a non-finite IK target); ST_CONTACT: recorded, and IK must freeze;
# ST_LOOKAHEAD: the last step not taken (it starts an IK interval solved ahead for another
# simulation time than MuJoCo's: the driver solves it)
ST_DONE, ST_BAD_ACTOR, ST_WARNED, ST_PYTHON, ST_IK, ST_CONTACT, ST_MJ_ERROR = range(7)
ST_LOOKAHEAD = 7

SI_SIZE = S_KERNELS + len(KERNELS)


@jit(nrt=False)
def _step_body(t, ops, efc_force, efc_type, efc_id, si, sf):  # pragma: no cover
    """One step after ``mj_step``: state, every sensor batch, the recording row.

    Args:
        t: the array table, int64 (T_FIRST_CHANNEL + channels, 4): address and shape per
            slot (``T_*``; channel rows: chunk buffer address, bytes per row).
        ops: the row's write operations, int64 (P, OP_WIDTH) (``OP_*`` rows).
        efc_force: (nefc,) MuJoCo constraint forces (or empty).
        efc_type: (nefc,) int32 constraint types (or empty).
        efc_id: (nefc,) int32 constraint object ids (or empty).
        si: int64 ``S_*``: contacts, chunk row, step, accelerations, bodies, parts, then
            the part kernels' native addresses (``K_*`` order; :func:`kernel_addresses`).
        sf: float64 ``F_*``: time, dt.

    Returns:
        ``OK``, or ``BAD_ACTOR`` (a ray hit an actor outside its sensor's path table).
    """
    nc = si[S_CONTACTS]
    row = si[S_ROW]
    step = si[S_STEP]
    acc = si[S_ACC] != 0
    b = si[S_BODIES]
    parts = si[S_PARTS]
    time = sf[F_TIME]
    dt = sf[F_DT]
    lead = 5 * b if acc else 3 * b
    rows = lead + 3 * nc + 1
    vec = _f64_2(t, T_VEC, 0, rows, 3)
    quat = _f64_2(t, T_QUAT, 0, b, 4)
    joint = _f64_2(t, T_JOINT, 0, 3, t[T_JOINT, 2])
    ids = _i64_2(t, T_IDS, 0, 2, nc)
    work_i = _i64_1(t, T_WORK_I, 0, t[T_WORK_I, 1])
    _call_kernel(K_STATE, si[S_KERNELS + K_STATE], (
        _f64_1(t, T_MJ, 0, t[T_MJ, 1]),
        _f64_2(t, T_CON_F, 0, t[T_CON_F, 1], t[T_CON_F, 2]),
        raw_array(_i32p(t[T_CON_I, 0]), (t[T_CON_I, 1], t[T_CON_I, 2])),
        efc_force,
        efc_type,
        efc_id,
        _f64_2(t, T_JNT_RANGE, 0, t[T_JNT_RANGE, 1], 2),
        _i64_1(t, T_TAB_I, 0, t[T_TAB_I, 1]),
        _f64_1(t, T_TAB_F, 0, t[T_TAB_F, 1]),
        work_i,
        _f64_1(t, T_WORK_F, 0, t[T_WORK_F, 1]),
        acc,
        vec,
        quat,
        joint,
        ids,
    ))  # fmt: skip
    kept = work_i[0]
    positions = _f64_2(t, T_VEC, 0, b, 3)
    gravity = _f64_1(t, T_VEC, 3 * (rows - 1), 3)
    minus_one = np.int64(-1)
    if parts & P_CONTACT:
        _call_kernel(K_CONTACT, si[S_KERNELS + K_CONTACT], (
            positions,
            quat,
            _i64_1(t, T_IDS, 0, kept),
            _i64_1(t, T_IDS, nc, kept),
            _f64_2(t, T_VEC, 3 * lead, kept, 3),
            _f64_2(t, T_VEC, 3 * (lead + 2 * nc), kept, 3),
            _f64_1(t, T_NO_DTS, 0, 0),
            dt,
            time,
            step,
            minus_one,
            _f64_2(t, T_C_FLOAT, 0, t[T_C_FLOAT, 1], t[T_C_FLOAT, 2]),
            _i64_2(t, T_C_INT, 0, t[T_C_INT, 1], t[T_C_INT, 2]),
        ))  # fmt: skip
    if parts & P_IMU:
        no3 = _f64_2(t, T_NO3, 0, 0, 3)
        _call_kernel(K_IMU, si[S_KERNELS + K_IMU], (
            quat,
            _f64_2(t, T_COM_LOCAL, 0, b, 3),
            _f64_2(t, T_VEC, 3 * b, b, 3),
            _f64_2(t, T_VEC, 6 * b, b, 3),
            _f64_2(t, T_VEC, 9 * b, b, 3) if acc else no3,
            _f64_2(t, T_VEC, 12 * b, b, 3) if acc else no3,
            time,
            step,
            minus_one,
            _i64_2(t, T_I_INT, 0, t[T_I_INT, 1], t[T_I_INT, 2]),
            _f64_3(t, T_I_FLOAT),
        ))  # fmt: skip
    if parts & P_RAY:
        bodies = parts & P_RAY_BODIES
        velocities = parts & P_RAY_VELOCITIES
        no3 = _f64_2(t, T_NO3, 0, 0, 3)
        _call_kernel(K_RAY, si[S_KERNELS + K_RAY], (
            _f64_2(t, T_R_BLOCK_F, 0, t[T_R_BLOCK_F, 1], t[T_R_BLOCK_F, 2]),
            _i64_2(t, T_R_BLOCK_I, 0, t[T_R_BLOCK_I, 1], t[T_R_BLOCK_I, 2]),
            _f32_1(t, T_R_OUT, 0, t[T_R_OUT, 1]),
            dt,
            positions if bodies else no3,
            quat if bodies else _f64_2(t, T_NO4, 0, 0, 4),
            _f64_2(t, T_VEC, 3 * b, b, 3) if velocities else no3,
            _f64_2(t, T_VEC, 6 * b, b, 3) if velocities else no3,
        ))  # fmt: skip
    if parts & P_KINDS:  # the other kinds' part kernels, each on its own blocks
        for p in range(ops.shape[0]):
            op = ops[p]
            if op[0] == OP_PART:  # kind, native address, float-block row, int-block row
                _call_kernel(K_PART, op[1], (
                    positions,
                    quat,
                    _f64_2(t, T_VEC, 3 * b, b, 3),
                    _f64_2(t, T_VEC, 6 * b, b, 3),
                    time,
                    step,
                    _f64_2(t, op[2], 0, t[op[2], 1], t[op[2], 2]),
                    _i64_2(t, op[3], 0, t[op[3], 1], t[op[3], 2]),
                ))  # fmt: skip
    for p in range(ops.shape[0]):
        op = ops[p]
        kind = op[0]
        if kind == OP_CONTACT:
            _write_contact(t, op, row)
        elif kind == OP_IMU:
            _write_imu(t, op, row, gravity, si[S_KERNELS + K_IMU_READ])
        elif kind == OP_RAY:
            if _write_ray(t, op, row, time, step) != OK:
                return BAD_ACTOR
        elif kind == OP_JOINT:  # positions, velocities, efforts, targets: float64 (D,)
            nd = t[T_JOINT, 2]
            for field in range(3):
                _copy64(_row(t, op[1 + field], row), t[T_JOINT, 0] + 8 * field * nd, nd)
            if op[5] >= 0:
                _copy64(_row(t, op[4], row), t[T_TARGETS, 0], nd)
            else:
                _zero(t, op[4], row)
        elif kind == OP_ZERO:  # count, then the channels of an invalid row
            for c in range(op[1]):
                _zero(t, op[2 + c], row)
        elif kind == OP_BODY:  # positions (B, 3), orientations (B, 4): float64
            _copy64(_row(t, op[1], row), t[T_VEC, 0], 3 * b)
            _copy64(_row(t, op[2], row), t[T_QUAT, 0], 4 * b)
        elif kind == OP_FIELDS:  # a row from a sensor kind's blocks
            _write_fields(t, op, row)
    return OK


@jit(nrt=False)
def fused_step_kernel(t, ops, efc_force, efc_type, efc_id, si, sf, blk, ik_f, ik_i):
    """The fused step: this step's state, sensors and row; or a block of whole steps.

    ``blk[B_COUNT] == 0``: one step after ``mj_step`` (``_step_body`` with the given
    constraint arrays). Otherwise up to ``blk[B_COUNT]`` whole steps: per step the IK
    targets interpolated and sent (``IkDriver.update`` between solves), ``mj_step``, its
    warning check, MuJoCo's position / velocity kinematics (and ``mj_rnePostConstraint``),
    ``_step_body`` and the row's step / time stamps. A step the general path would handle
    differently ends the block with a status (``ST_*``) for the Python loop.

    Args:
        t: the array table (``_step_body``).
        ops: the row's write operations (``_step_body``).
        efc_force: (nefc,) constraint forces of the one step, or an empty float64 array.
        efc_type: (nefc,) int32 constraint types, or an empty int32 array.
        efc_id: (nefc,) int32 constraint object ids, or an empty int32 array.
        si: the step integers (``_step_body``); a block advances ``S_STEP``.
        sf: the step floats (``_step_body``).
        blk: int64 ``B_*``: the block's inputs; ``B_DONE`` / ``B_STATUS`` written (steps
            taken; how the block ended).
        ik_f: float64 (block mode with IK): ``B_IK_SPANS + 1`` solutions of ``B_IK``
            values (the IK item's ``q_from``, ``q_to``, then the solutions of the next
            intervals, solved ahead), then the simulation time each interval after the first
            starts at (the time the driver solved it for).
        ik_i: int64: the item's target indices, actuator indices, then the contact-sensor
            rows whose contact freezes the targets (the last ``B_FREEZE_ROWS`` entries).

    Returns:
        ``OK`` or ``BAD_ACTOR`` (a ray hit an actor outside its sensor's path table).
    """
    count = blk[B_COUNT]
    if count == 0:
        result = _step_body(t, ops, efc_force, efc_type, efc_id, si, sf)
        store_fence()  # (the rows' non-temporal stores: done before Python hands them over)
        return result
    model = blk[B_MODEL]
    data = blk[B_DATA]
    n = blk[B_IK]
    every = blk[B_IK_EVERY]
    times = (blk[B_IK_SPANS] + 1) * n  # ik_f: the solutions, then the solve times ahead
    freeze = blk[B_FREEZE_ROWS]
    acc = si[S_ACC] != 0
    targets = _f64p(t[T_TARGETS, 0])
    ctrl = _f64p(blk[B_CTRL])
    warnings = blk[B_WARN]
    clean = _i64p(blk[B_WARN_CLEAN])
    contact_ints = t[T_C_INT, 0]
    width = t[T_C_INT, 2]
    no_f = efc_force[:0]
    no_i = efc_type[:0]
    row0 = si[S_ROW]
    status = ST_DONE
    done = 0
    for k in range(count):
        if n:  # IkDriver.update between solves: q_from + s (q_to - q_from), then sent
            p = blk[B_IK_PHASE] + k  # (interval `span`: from solution span to span + 1)
            span = p // every
            if span > 0 and p % every == 0:  # the driver solved here: was it for this time?
                if _f64p(data + blk[B_OFF_TIME])[0] != ik_f[times + span - 1]:
                    status = ST_LOOKAHEAD
                    break
            frac = (p % every + 1) / every
            base = span * n
            for j in range(n):
                q = ik_f[base + j] + frac * (ik_f[base + n + j] - ik_f[base + j])
                if not np.isfinite(q):
                    status = ST_IK
                    break
            if status == ST_IK:
                break
            for j in range(n):
                q = ik_f[base + j] + frac * (ik_f[base + n + j] - ik_f[base + j])
                targets[ik_i[j]] = q
                ctrl[ik_i[n + j]] = q
        if blk[B_REUSE] != 0:  # (mj_step, or what it runs after a forward that still holds)
            step_reusing(blk[B_REUSE], model, data)
        else:
            _call_c(blk[B_FN + 0], model, data)  # mj_step
        done += 1
        si[S_STEP] += 1
        if _i64p(blk[B_ERROR])[0]:
            status = ST_MJ_ERROR
            break
        changed = False
        for w in range(blk[B_WARN_COUNT]):
            if _i32p(warnings + 8 * w)[0] != clean[w]:
                changed = True
        if changed:
            status = ST_WARNED
            break
        _call_c(blk[B_FN + 1], model, data)  # mj_kinematics
        _call_c(blk[B_FN + 2], model, data)  # mj_comPos
        _call_c(blk[B_FN + 3], model, data)  # mj_comVel
        if acc:
            _call_c(blk[B_FN + 4], model, data)  # mj_rnePostConstraint
        nc = np.int64(_i32p(data + blk[B_OFF_NCON])[0])
        nefc = np.int64(_i32p(data + blk[B_OFF_NEFC])[0])
        if nc > blk[B_CAP_CON] or nefc > blk[B_CAP_EFC] or nc > blk[B_CAP_VEC]:
            status = ST_PYTHON  # the engine's views grow first
            break
        if nefc:
            force = raw_array(_f64p(_i64p(data + blk[B_OFF_EFC_FORCE])[0]), (nefc,))
            if blk[B_SCALAR_DOFS]:
                kind = raw_array(_i32p(_i64p(data + blk[B_OFF_EFC_TYPE])[0]), (nefc,))
                ids = raw_array(_i32p(_i64p(data + blk[B_OFF_EFC_ID])[0]), (nefc,))
            else:
                kind = no_i
                ids = no_i
        else:
            force = no_f
            kind = no_i
            ids = no_i
        row = row0 + k
        time = _f64p(data + blk[B_OFF_TIME])[0]
        si[S_CONTACTS] = nc
        si[S_ROW] = row
        sf[F_TIME] = time
        if _step_body(t, ops, force, kind, ids, si, sf) != OK:
            status = ST_BAD_ACTOR
            break
        _i64p(blk[B_STEPS] + 8 * row)[0] = si[S_STEP]
        _f64p(blk[B_TIMES] + 8 * row)[0] = time
        if freeze:  # a robot contact sensor in contact: IkDriver freezes its targets
            touching = False
            for c in range(freeze):
                r = contact_ints + 8 * ik_i[ik_i.shape[0] - freeze + c] * width
                if _i64p(r + 8)[0] != 0 and _i64p(r + 32)[0] != 0 and _i64p(r + 16)[0] != 0:
                    touching = True
            if touching:
                status = ST_CONTACT
                break
    blk[B_DONE] = done
    blk[B_STATUS] = status
    store_fence()  # (the rows' non-temporal stores: done before Python hands them over)
    return OK
