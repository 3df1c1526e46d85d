"""One compiled call updates the lab sensors of a set over N worlds.

Contact sensors, IMUs, frame transformers, joint wrenches, ray casters over box scenes (a
height scan over the ground box) and over scenes with moving geometry (a scan that sees the
robot, below ``PARALLEL_MIN_RAYS`` rays), and fixed depth cameras (their pinhole view); other
ray casters and cameras on moving bodies are not here.

:func:`lab_set_kernel` does for every sensor of the set what
:meth:`runtime.sensors.lab.base.LabSensor.update` does in Python: it advances each world's
clock, finds the due worlds, recomputes them from their ``mjData`` and pushes their
histories (element copies, as ``history_push_kernel``). It reads each ``mjData`` at its
address (the byte offsets of :func:`runtime.run._mujoco_native.layout`: counts, the contact
array, ``efc_force`` and the body arrays) and calls the sensors' own per-world kernels
(:mod:`runtime.sensors.lab._lab_kernels`) on views of that memory, so its readings are the
Python path's bit for bit. Frame transformers and joint wrenches, whose Python path is NumPy
quaternion algebra (:mod:`runtime.sensors.lab._math`), are computed here in NumPy's order
of operations (the same doubles); a joint wrench calls libmujoco's ``mj_rnePostConstraint``
where its ``update`` does (the world's own model). A ray caster over a box scene copies the
body's pose of each due world from ``mjData`` into its pose rows and calls its own
``ray_caster_boxes_kernel`` for that world (what its ``_update_boxes`` does, per world). A
ray caster over moving geometry calls its ``ray_caster_scene_kernel`` for the world (its 47
arrays in a table of addresses and sizes, ``SC_TABLE``), as its ``_update_scene`` does. A
fixed camera calls its view's ``view_kernel`` (:class:`runtime.rays.views.PinholeView`) with
the world's ``xpos`` / ``xquat``, as its ``_update_worlds`` does through ``view.update``.

The IMU reads MuJoCo's ``cacc`` when ``mjData`` holds it (``flg_rnepost``); otherwise, where
the Python path calls ``mj_rnePostConstraint`` (every body's acceleration, the contact and
constraint forces), it runs the same recursion along the IMU body's chain only:
``cacc[b] = cacc[parent] + cdof_dot * qvel + cdof * qacc`` over the body's degrees of freedom
with ``cacc[world] = -gravity``, in MuJoCo's order of operations (the same doubles).

Each sensor is one int64 row (``R_*``; addresses and sizes of its arrays) and one float64 row
(``F_*``); the kernel trusts them (:class:`runtime.run.lab_set.LabSensorSet` builds them).

:func:`lab_set_part_kernel` is the same call as a part of ``simrt run``'s compiled step
(:mod:`runtime.run.fused`, the part-kernel arguments of
:data:`runtime.sensors.kinds.PART_SIGNATURE`): ``mj_forward`` first where the run's lab
channels need it, the set's update with the run's dt, then the sensors' values copied into
the step's recording row (:mod:`runtime.run.lab_channels`), so step blocks run lab sensors
too.
"""

from __future__ import annotations

from runtime._compile.jit import JIT_DISABLED, jit
from runtime._compile.numba_compat import build_array
from runtime.rays.kernels import view_kernel
from runtime.run._forward_kernels import forward_and_arm
from runtime.run._fused_kernels import S_CONTACTS, S_ROW
from runtime.run._native_kernels import (
    _call_c,
    _f32p,
    _f64p,
    _i32p,
    _i64p,
    _u8p,
    memcpy,
    raw_array,
)
from runtime.run._row_kernels import T_FIRST_CHANNEL
from runtime.sensors.lab._lab_kernels import (
    contact_update_kernel,
    imu_kernel,
    ray_caster_boxes_kernel,
    ray_caster_scene_kernel,
)

__all__ = ["lab_set_kernel", "lab_set_part_kernel"]

if not JIT_DISABLED:
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def strided_array(typingctx, pointer, shape, strides):
        """An array over ``pointer`` with ``shape`` and byte ``strides`` (tuples), layout A.

        A field of MuJoCo's contact array (one ``mjContact`` struct per contact) as the
        Python bindings show it: the same shape, strides and Numba type.
        """
        if not isinstance(pointer, types.CPointer):
            return None
        if not isinstance(shape, types.BaseTuple) or not isinstance(strides, types.BaseTuple):
            return None
        ndim = len(shape)
        if len(strides) != ndim or not all(
            isinstance(n, types.Integer) for n in (*shape, *strides)
        ):
            return None
        array_type = types.Array(pointer.dtype, ndim, "A")

        def codegen(context, builder, sig, args):
            intp = context.get_value_type(types.intp)
            dims = [
                context.cast(builder, builder.extract_value(args[1], k), shape[k], types.intp)
                for k in range(ndim)
            ]
            steps = [
                context.cast(builder, builder.extract_value(args[2], k), strides[k], types.intp)
                for k in range(ndim)
            ]
            itemsize = context.get_abi_sizeof(context.get_data_type(pointer.dtype))
            return build_array(context, builder, array_type, args[0], dims, steps, intp(itemsize))

        return array_type(pointer, shape, strides), codegen
else:  # (no compiled set without the JIT: runtime.run.lab_set checks)
    strided_array = None

_PERIOD_TOLERANCE = 1e-6  # (runtime.sensors.lab.base: Isaac Lab's slack in the due test)

# ---- a sensor's int64 row: kind, clock arrays, histories, then the kind's own fields
KIND_CONTACT, KIND_IMU, KIND_FRAMES, KIND_WRENCH, KIND_RAY_BOXES, KIND_VIEW = range(6)
KIND_RAY_SCENE = 6
R_KIND, R_N, R_TIMESTAMP, R_LAST, R_OUTDATED, R_ELAPSED, R_HISTORIES = range(7)
R_HISTORY = 7  # up to MAX_HISTORIES x (values address, history address, K, H)
MAX_HISTORIES = 5
R_K = R_HISTORY + 4 * MAX_HISTORIES
# contact
(C_B, C_M, C_GEOM_ENTITY, C_NGEOM, C_SENSOR_SLOT, C_ENTITIES, C_FILTER_SLOT, C_SCRATCH,
 C_NET, C_MATRIX, C_FRICTION, C_POINTS, C_TIMES, C_PYRAMIDAL, C_AIR_TIME, C_POSE,
 C_POSE_BODY, C_POSE_STATIC, C_POS_W, C_QUAT_W) = range(R_K, R_K + 20)  # fmt: skip
# imu
(I_BODY, I_ROOT, I_OFFSET_POS, I_OFFSET_ROT, I_GRAVITY, I_BIAS, I_POS, I_QUAT, I_PROJECTED,
 I_LIN_VEL, I_ANG_VEL, I_LIN_ACC, I_ANG_ACC, I_CHAIN, I_CHAIN_LENGTH, I_CACC,
 I_GRAVITY_ON) = range(R_K, R_K + 17)  # fmt: skip
# frame transformer: the source and the M targets as (body or -1, offset pos, offset rot,
# static pos, static rot) rows of 14 floats / one int
(T_M, T_BODIES, T_FRAMES, T_SOURCE_POS, T_SOURCE_QUAT, T_TARGET_POS_W, T_TARGET_QUAT_W,
 T_TARGET_POS, T_TARGET_QUAT) = range(R_K, R_K + 9)  # fmt: skip
# joint wrench: J child bodies, their roots, the wrench (N, J, 6)
W_J, W_BODIES, W_ROOTS, W_WRENCH = range(R_K, R_K + 4)
# ray caster over a box scene: its body (-1: static), pose rows (N, 3) / (N, 4), offset,
# drift (N, 6), alignment, R pattern rays, the boxes (B, columns) and their actors, the
# outputs, a one-int scratch (the world)
(B_BODY, B_POSITIONS, B_ORIENTATIONS, B_OFFSET_POS, B_OFFSET_ROT, B_DRIFT, B_ALIGNMENT,
 B_RAYS, B_STARTS, B_DIRECTIONS, B_BOXES, B_NBOXES, B_COLUMNS, B_ACTORS, B_POS, B_QUAT,
 B_HITS, B_DISTANCES, B_HIT_IDS, B_ENV) = range(R_K, R_K + 20)  # fmt: skip
# fixed camera: its view's 9 bound arrays (address, length each: wide nodes float32, leaf
# triangles float64, leaf ids int64, float block, int block, plane / camera distances,
# normals float64, hit ids int64), the world's index in the int block, a (1,) int64 scratch
V_ARRAY, V_ENV_AT, V_COUNT = R_K, R_K + 18, R_K + 19
# ray caster over moving geometry: the table (SCENE_ARRAYS, 4) of its kernel's array
# arguments (address, then the shape), its scalars, scratch: (2 N,) pose addresses, (1,) world
(SC_TABLE, SC_BODY, SC_STATIC, SC_ALIGNMENT, SC_DOUBLE_SIDED, SC_ADDRESSES,
 SC_ENV) = range(R_K, R_K + 7)  # fmt: skip
SCENE_ARRAYS = 47
R_SIZE = R_K + 20
# ---- a sensor's float64 row
F_PERIOD, F_THRESHOLD, F_MAX_DISTANCE = range(3)
F_SIZE = 3
# ---- shared int64: mjData byte offsets, mjContact's layout, model sizes
(D_NCON, D_NEFC, D_CONTACT, D_EFC_FORCE, D_XPOS, D_XQUAT, D_CVEL, D_CACC, D_SUBTREE_COM,
 D_QVEL, D_QACC, D_CDOF, D_CDOF_DOT, D_FLG_RNEPOST, CON_SIZE, CON_GEOM, CON_EFC_ADDRESS,
 CON_DIM, CON_FRAME, CON_FRICTION, CON_POS, M_NBODY, M_NV, D_CFRC_INT,
 FN_RNE_POST) = range(25)  # fmt: skip
S_SIZE = 25


@jit(nrt=False)
def lab_set_kernel(rows, floats, worlds, shared, params):  # pragma: no cover - compiled
    """Advance the clocks of every sensor of the set and recompute its due worlds.

    Args:
        rows: int64 (S, R_SIZE): one row per sensor (``R_*``, then the kind's ``C_*``,
            ``I_*``, ``T_*``, ``W_*``, ``B_*`` or ``V_*``).
        floats: float64 (S, F_SIZE): update period [s], contact force threshold [N], ray
            caster's max distance [m].
        worlds: int64 (N, 2): each world's ``mjData`` and ``mjModel`` addresses.
        shared: int64 (S_SIZE,): ``mjData`` byte offsets, ``mjContact`` layout, model sizes.
        params: float64 (2,): dt [s]; 1.0 to recompute every world (``force_recompute``).
    """
    dt = params[0]
    every_world = params[1] != 0.0
    for s in range(rows.shape[0]):
        r = rows[s]
        n = r[R_N]
        timestamp = raw_array(_f64p(r[R_TIMESTAMP]), (n,))
        last = raw_array(_f64p(r[R_LAST]), (n,))
        outdated = raw_array(_u8p(r[R_OUTDATED]), (n,))
        elapsed = raw_array(_f64p(r[R_ELAPSED]), (n,))
        period = floats[s, F_PERIOD]
        for e in range(n):
            timestamp[e] += dt
        every = every_world or period == 0.0
        if not every:
            due = False
            for e in range(n):
                if timestamp[e] - last[e] + _PERIOD_TOLERANCE >= period:
                    outdated[e] = 1
                if outdated[e] != 0:
                    due = True
            if not due:
                continue
        for e in range(n):
            elapsed[e] = timestamp[e] - last[e]
        for e in range(n):
            if not every and outdated[e] == 0:
                continue
            kind = r[R_KIND]
            data = worlds[e, 0]
            if kind == KIND_CONTACT:
                _contact_world(r, floats[s], e, n, elapsed[e], data, shared)
            elif kind == KIND_IMU:
                _imu_world(r, e, n, data, shared)
            elif kind == KIND_FRAMES:
                _frames_world(r, e, n, data, shared)
            elif kind == KIND_WRENCH:
                _wrench_world(r, e, n, data, worlds[e, 1], shared)
            elif kind == KIND_RAY_BOXES:
                _ray_boxes_world(r, floats[s], e, n, data, shared)
            elif kind == KIND_VIEW:
                _view_world(r, e, data, shared)
            else:
                _ray_scene_world(r, e, n, data, shared)
            for h in range(r[R_HISTORIES]):
                k = R_HISTORY + 4 * h
                size, length = r[k + 2], r[k + 3]
                _push_history(
                    raw_array(_f64p(r[k] + 8 * e * size), (size,)),
                    raw_array(_f64p(r[k + 1] + 8 * e * length * size), (length, size)),
                )
            last[e] = timestamp[e]
            outdated[e] = 0


@jit(inline=True)
def _push_history(values, history):  # pragma: no cover - compiled
    """``history_push_kernel`` of one world: entries one back, ``values`` first.

    Element by element (the same copies): its slice assignments may allocate a temporary
    (Numba's overlap check), which a kernel without Numba's runtime cannot compile.
    """
    for h in range(history.shape[0] - 1, 0, -1):
        for k in range(history.shape[1]):
            history[h, k] = history[h - 1, k]
    for k in range(history.shape[1]):
        history[0, k] = values[k]


@jit(nrt=False)
def _contact_world(r, f, e, n, elapsed, data, shared):  # pragma: no cover - compiled
    """World ``e`` of one contact sensor (its ``contact_update_kernel`` on the raw arrays)."""
    ncon = _i32p(data + shared[D_NCON])[0]
    nefc = _i32p(data + shared[D_NEFC])[0]
    contact = _i64p(data + shared[D_CONTACT])[0]
    size = shared[CON_SIZE]
    efc_force = raw_array(_f64p(_i64p(data + shared[D_EFC_FORCE])[0] if nefc else data), (nefc,))
    b, m = r[C_B], r[C_M]
    contact_update_kernel(
        e,
        elapsed,
        strided_array(_i32p(contact + shared[CON_GEOM]), (ncon, 2), (size, 4)),
        strided_array(_i32p(contact + shared[CON_EFC_ADDRESS]), (ncon,), (size,)),
        strided_array(_i32p(contact + shared[CON_DIM]), (ncon,), (size,)),
        strided_array(_f64p(contact + shared[CON_FRAME]), (ncon, 9), (size, 8)),
        strided_array(_f64p(contact + shared[CON_FRICTION]), (ncon, 5), (size, 8)),
        strided_array(_f64p(contact + shared[CON_POS]), (ncon, 3), (size, 8)),
        efc_force,
        r[C_PYRAMIDAL] != 0,
        raw_array(_i64p(r[C_GEOM_ENTITY]), (r[C_NGEOM],)),
        raw_array(_i64p(r[C_SENSOR_SLOT]), (r[C_ENTITIES],)),
        raw_array(_i64p(r[C_FILTER_SLOT]), (r[C_ENTITIES],)),
        f[F_THRESHOLD],
        r[C_AIR_TIME] != 0,
        raw_array(_f64p(r[C_SCRATCH]), (b, m)),
        raw_array(_f64p(r[C_NET]), (n, b, 3)),
        raw_array(_f64p(r[C_MATRIX]), (n, b, m, 3)),
        raw_array(_f64p(r[C_FRICTION]), (n, b, m, 3)),
        raw_array(_f64p(r[C_POINTS]), (n, b, m, 3)),
        raw_array(_f64p(r[C_TIMES]), (4, n, b)),
    )
    if r[C_POSE] == 0:
        return
    xpos = _f64p(_i64p(data + shared[D_XPOS])[0])
    xquat = _f64p(_i64p(data + shared[D_XQUAT])[0])
    pose_body = raw_array(_i64p(r[C_POSE_BODY]), (b,))
    static = raw_array(_f64p(r[C_POSE_STATIC]), (b, 7))
    pos = raw_array(_f64p(r[C_POS_W]), (n, b, 3))
    quat = raw_array(_f64p(r[C_QUAT_W]), (n, b, 4))
    for i in range(b):
        body = pose_body[i]
        for k in range(3):
            pos[e, i, k] = static[i, k] if body < 0 else xpos[3 * body + k]
        for k in range(4):
            quat[e, i, k] = static[i, 3 + k] if body < 0 else xquat[4 * body + k]


@jit(nrt=False)
def _imu_world(r, e, n, data, shared):  # pragma: no cover - compiled
    """World ``e`` of one IMU (its ``imu_kernel``; ``cacc`` along its chain if not in mjData)."""
    nbody = shared[M_NBODY]
    cacc = raw_array(_f64p(_i64p(data + shared[D_CACC])[0]), (nbody, 6))
    if _u8p(data + shared[D_FLG_RNEPOST])[0] == 0:
        cacc = raw_array(_f64p(r[I_CACC]), (nbody, 6))
        _chain_acceleration(r, data, shared, cacc)
    imu_kernel(
        e,
        r[I_BODY],
        r[I_ROOT],
        raw_array(_f64p(r[I_OFFSET_POS]), (3,)),
        raw_array(_f64p(r[I_OFFSET_ROT]), (4,)),
        raw_array(_f64p(_i64p(data + shared[D_XPOS])[0]), (nbody, 3)),
        raw_array(_f64p(_i64p(data + shared[D_XQUAT])[0]), (nbody, 4)),
        raw_array(_f64p(_i64p(data + shared[D_CVEL])[0]), (nbody, 6)),
        cacc,
        raw_array(_f64p(_i64p(data + shared[D_SUBTREE_COM])[0]), (nbody, 3)),
        raw_array(_f64p(r[I_GRAVITY]), (3,)),
        raw_array(_f64p(r[I_BIAS]), (3,)),
        raw_array(_f64p(r[I_POS]), (n, 3)),
        raw_array(_f64p(r[I_QUAT]), (n, 4)),
        raw_array(_f64p(r[I_PROJECTED]), (n, 3)),
        raw_array(_f64p(r[I_LIN_VEL]), (n, 3)),
        raw_array(_f64p(r[I_ANG_VEL]), (n, 3)),
        raw_array(_f64p(r[I_LIN_ACC]), (n, 3)),
        raw_array(_f64p(r[I_ANG_ACC]), (n, 3)),
    )


@jit(nrt=False)
def _chain_acceleration(r, data, shared, cacc):  # pragma: no cover - compiled
    """``cacc`` rows of the IMU body's chain, as ``mj_rnePostConstraint`` computes them.

    ``chain`` rows (root first): body, first dof, dof count; the world's row is
    ``(0, 0, 0, -gravity)`` (zeros with gravity disabled). Per body: the parent's row plus
    ``cdof_dot * qvel`` then plus ``cdof * qacc``, each product summed over the body's dofs
    from zero skipping zero factors (one dof: the plain product), as MuJoCo does.
    """
    nv = shared[M_NV]
    chain = raw_array(_i64p(r[I_CHAIN]), (r[I_CHAIN_LENGTH], 3))
    gravity = raw_array(_f64p(r[I_GRAVITY]), (3,))
    on = r[I_GRAVITY_ON] != 0
    for k in range(3):
        cacc[0, k] = 0.0
        cacc[0, 3 + k] = -gravity[k] if on else 0.0
    qvel = raw_array(_f64p(_i64p(data + shared[D_QVEL])[0]), (nv,))
    qacc = raw_array(_f64p(_i64p(data + shared[D_QACC])[0]), (nv,))
    cdof = raw_array(_f64p(_i64p(data + shared[D_CDOF])[0]), (nv, 6))
    cdof_dot = raw_array(_f64p(_i64p(data + shared[D_CDOF_DOT])[0]), (nv, 6))
    parent = 0
    for c in range(chain.shape[0]):
        body, first, count = chain[c, 0], chain[c, 1], chain[c, 2]
        for k in range(6):
            a = _dof_product(cdof_dot, qvel, first, count, k)
            a = cacc[parent, k] + a
            cacc[body, k] = a + _dof_product(cdof, qacc, first, count, k)
        parent = body


@jit(inline=True)
def _dof_product(motion, rate, first, count, k):  # pragma: no cover - compiled
    """Component ``k`` of MuJoCo's ``mj_mulDofVec``: sum of ``motion[dof] * rate[dof]``."""
    if count == 1:
        return motion[first, k] * rate[first]
    total = 0.0
    for i in range(first, first + count):
        if rate[i] != 0.0:
            total += motion[i, k] * rate[i]
    return total


@jit(inline=True)
def _rotate(qw, qx, qy, qz, vx, vy, vz):  # pragma: no cover - compiled
    """``runtime.sensors.lab._math.quat_rotate`` of one vector, in its order of operations.

    ``t = 2 cross(u, v)``, ``v + w t + cross(u, t)`` with NumPy's ``cross`` (each
    component ``a_i b_j - a_j b_i``).
    """
    tx = 2.0 * (qy * vz - qz * vy)
    ty = 2.0 * (qz * vx - qx * vz)
    tz = 2.0 * (qx * vy - qy * vx)
    return (
        vx + qw * tx + (qy * tz - qz * ty),
        vy + qw * ty + (qz * tx - qx * tz),
        vz + qw * tz + (qx * ty - qy * tx),
    )


@jit(inline=True)
def _multiply(aw, ax, ay, az, bw, bx, by, bz):  # pragma: no cover - compiled
    """``runtime.sensors.lab._math.quat_multiply`` of two quaternions, in its order."""
    return (
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    )


@jit(inline=True)
def _frame_pose(frame, xpos, xquat, body):  # pragma: no cover - compiled
    """World pose of one frame row: its body's pose (or the static one) moved by the offset.

    ``frame``: offset pos (3), offset rot (4), static pos (3), static rot (4).
    """
    if body < 0:
        px, py, pz = frame[7], frame[8], frame[9]
        qw, qx, qy, qz = frame[10], frame[11], frame[12], frame[13]
    else:
        px, py, pz = xpos[3 * body], xpos[3 * body + 1], xpos[3 * body + 2]
        k = 4 * body
        qw, qx, qy, qz = xquat[k], xquat[k + 1], xquat[k + 2], xquat[k + 3]
    ox, oy, oz = _rotate(qw, qx, qy, qz, frame[0], frame[1], frame[2])
    q = _multiply(qw, qx, qy, qz, frame[3], frame[4], frame[5], frame[6])
    return px + ox, py + oy, pz + oz, q


@jit(nrt=False)
def _frames_world(r, e, n, data, shared):  # pragma: no cover - compiled
    """World ``e`` of one frame transformer (as its ``_update_world``, the same doubles)."""
    m = r[T_M]
    bodies = raw_array(_i64p(r[T_BODIES]), (m + 1,))
    frames = raw_array(_f64p(r[T_FRAMES]), (m + 1, 14))
    xpos = _f64p(_i64p(data + shared[D_XPOS])[0])
    xquat = _f64p(_i64p(data + shared[D_XQUAT])[0])
    source_pos = raw_array(_f64p(r[T_SOURCE_POS]), (n, 3))
    source_quat = raw_array(_f64p(r[T_SOURCE_QUAT]), (n, 4))
    target_pos_w = raw_array(_f64p(r[T_TARGET_POS_W]), (n, m, 3))
    target_quat_w = raw_array(_f64p(r[T_TARGET_QUAT_W]), (n, m, 4))
    target_pos = raw_array(_f64p(r[T_TARGET_POS]), (n, m, 3))
    target_quat = raw_array(_f64p(r[T_TARGET_QUAT]), (n, m, 4))
    sx, sy, sz, sq = _frame_pose(frames[0], xpos, xquat, bodies[0])
    source_pos[e, 0], source_pos[e, 1], source_pos[e, 2] = sx, sy, sz
    for k in range(4):
        source_quat[e, k] = sq[k]
    cw, cx, cy, cz = sq[0], -sq[1], -sq[2], -sq[3]  # (the conjugate)
    for t in range(m):
        tx, ty, tz, tq = _frame_pose(frames[t + 1], xpos, xquat, bodies[t + 1])
        target_pos_w[e, t, 0], target_pos_w[e, t, 1], target_pos_w[e, t, 2] = tx, ty, tz
        for k in range(4):
            target_quat_w[e, t, k] = tq[k]
        lx, ly, lz = _rotate(cw, cx, cy, cz, tx - sx, ty - sy, tz - sz)
        target_pos[e, t, 0], target_pos[e, t, 1], target_pos[e, t, 2] = lx, ly, lz
        lq = _multiply(cw, cx, cy, cz, tq[0], tq[1], tq[2], tq[3])
        for k in range(4):
            target_quat[e, t, k] = lq[k]


@jit(nrt=False)
def _wrench_world(r, e, n, data, model, shared):  # pragma: no cover - compiled
    """World ``e`` of one joint wrench sensor, as its ``_update_world``.

    ``mj_rnePostConstraint`` of the world's own model first when ``mjData`` lacks it.
    """
    if _u8p(data + shared[D_FLG_RNEPOST])[0] == 0:
        _call_c(shared[FN_RNE_POST], model, data)
    j = r[W_J]
    bodies = raw_array(_i64p(r[W_BODIES]), (j,))
    roots = raw_array(_i64p(r[W_ROOTS]), (j,))
    wrench = raw_array(_f64p(r[W_WRENCH]), (n, j, 6))
    cfrc = _f64p(_i64p(data + shared[D_CFRC_INT])[0])
    xpos = _f64p(_i64p(data + shared[D_XPOS])[0])
    xquat = _f64p(_i64p(data + shared[D_XQUAT])[0])
    com = _f64p(_i64p(data + shared[D_SUBTREE_COM])[0])
    for i in range(j):
        b = bodies[i]
        root = roots[i]
        cx, cy, cz = cfrc[6 * b], cfrc[6 * b + 1], cfrc[6 * b + 2]
        fx, fy, fz = cfrc[6 * b + 3], cfrc[6 * b + 4], cfrc[6 * b + 5]
        lx = com[3 * root] - xpos[3 * b]
        ly = com[3 * root + 1] - xpos[3 * b + 1]
        lz = com[3 * root + 2] - xpos[3 * b + 2]
        tx = cx + (ly * fz - lz * fy)
        ty = cy + (lz * fx - lx * fz)
        tz = cz + (lx * fy - ly * fx)
        qw, qx, qy, qz = xquat[4 * b], -xquat[4 * b + 1], -xquat[4 * b + 2], -xquat[4 * b + 3]
        wrench[e, i, 0], wrench[e, i, 1], wrench[e, i, 2] = _rotate(qw, qx, qy, qz, fx, fy, fz)
        wrench[e, i, 3], wrench[e, i, 4], wrench[e, i, 5] = _rotate(qw, qx, qy, qz, tx, ty, tz)


@jit(nrt=False)
def _ray_boxes_world(r, f, e, n, data, shared):  # pragma: no cover - compiled
    """World ``e`` of one ray caster over a box scene (as its ``_update_boxes``)."""
    body = r[B_BODY]
    positions = raw_array(_f64p(r[B_POSITIONS]), (n, 3))
    orientations = raw_array(_f64p(r[B_ORIENTATIONS]), (n, 4))
    if body >= 0:  # (a static body's rows keep its pose)
        xpos = _f64p(_i64p(data + shared[D_XPOS])[0])
        xquat = _f64p(_i64p(data + shared[D_XQUAT])[0])
        for k in range(3):
            positions[e, k] = xpos[3 * body + k]
        for k in range(4):
            orientations[e, k] = xquat[4 * body + k]
    envs = raw_array(_i64p(r[B_ENV]), (1,))
    envs[0] = e
    rays = r[B_RAYS]
    boxes = r[B_NBOXES]
    ray_caster_boxes_kernel(
        envs,
        positions,
        orientations,
        raw_array(_f64p(r[B_OFFSET_POS]), (3,)),
        raw_array(_f64p(r[B_OFFSET_ROT]), (4,)),
        raw_array(_f64p(r[B_DRIFT]), (n, 6)),
        r[B_ALIGNMENT],
        raw_array(_f64p(r[B_STARTS]), (rays, 3)),
        raw_array(_f64p(r[B_DIRECTIONS]), (rays, 3)),
        f[F_MAX_DISTANCE],
        raw_array(_f64p(r[B_BOXES]), (boxes, r[B_COLUMNS])),
        raw_array(_i64p(r[B_ACTORS]), (boxes,)),
        raw_array(_f64p(r[B_POS]), (n, 3)),
        raw_array(_f64p(r[B_QUAT]), (n, 4)),
        raw_array(_f64p(r[B_HITS]), (n, rays, 3)),
        raw_array(_f64p(r[B_DISTANCES]), (n, rays)),
        raw_array(_i64p(r[B_HIT_IDS]), (n, rays)),
    )


@jit(nrt=False)
def _view_world(r, e, data, shared):  # pragma: no cover - compiled
    """World ``e`` of one fixed camera (its view's ``view.update(e, xpos, xquat)``)."""
    nbody = shared[M_NBODY]
    a = V_ARRAY
    block_i = raw_array(_i64p(r[a + 8]), (r[a + 9],))
    block_i[r[V_ENV_AT]] = e
    view_kernel(
        raw_array(_f64p(_i64p(data + shared[D_XPOS])[0]), (nbody, 3)),
        raw_array(_f64p(_i64p(data + shared[D_XQUAT])[0]), (nbody, 4)),
        raw_array(_f32p(r[a]), (r[a + 1],)),
        raw_array(_f64p(r[a + 2]), (r[a + 3],)),
        raw_array(_i64p(r[a + 4]), (r[a + 5],)),
        raw_array(_f64p(r[a + 6]), (r[a + 7],)),
        block_i,
        raw_array(_f64p(r[a + 10]), (r[a + 11],)),
        raw_array(_f64p(r[a + 12]), (r[a + 13],)),
        raw_array(_f64p(r[a + 14]), (r[a + 15],)),
        raw_array(_i64p(r[a + 16]), (r[a + 17],)),
        raw_array(_i64p(r[V_COUNT]), (1,)),
    )


@jit(inline=True)
def _f1(t, k):  # pragma: no cover - compiled
    return raw_array(_f64p(t[k, 0]), (t[k, 1],))


@jit(inline=True)
def _f2(t, k):  # pragma: no cover - compiled
    return raw_array(_f64p(t[k, 0]), (t[k, 1], t[k, 2]))


@jit(inline=True)
def _f3(t, k):  # pragma: no cover - compiled
    return raw_array(_f64p(t[k, 0]), (t[k, 1], t[k, 2], t[k, 3]))


@jit(inline=True)
def _i1(t, k):  # pragma: no cover - compiled
    return raw_array(_i64p(t[k, 0]), (t[k, 1],))


@jit(inline=True)
def _i2(t, k):  # pragma: no cover - compiled
    return raw_array(_i64p(t[k, 0]), (t[k, 1], t[k, 2]))


@jit(nrt=False)
def _ray_scene_world(r, e, n, data, shared):  # pragma: no cover - compiled
    """World ``e`` of one ray caster over moving geometry (as its ``_update_scene``).

    ``SC_TABLE`` rows, in ``ray_caster_scene_kernel``'s order of array arguments (the four
    scalars in the row): scene rows, scene ids, scene poses (2), body poses (2), offset (2),
    drift, starts, directions, max distances, the cast's buffers (5) and scratch (2), the
    wide BVH (nodes float32 3-D, leaf triangles, leaf ids), the scene's group, face and
    solid arrays (19), its group poses and world boxes (3), the outputs (5).
    """
    t = raw_array(_i64p(r[SC_TABLE]), (SCENE_ARRAYS, 4))
    addresses = raw_array(_i64p(r[SC_ADDRESSES]), (2 * n,))
    addresses[2 * e] = _i64p(data + shared[D_XPOS])[0]
    addresses[2 * e + 1] = _i64p(data + shared[D_XQUAT])[0]
    envs = raw_array(_i64p(r[SC_ENV]), (1,))
    envs[0] = e
    ray_caster_scene_kernel(
        envs, addresses, r[SC_BODY], r[SC_STATIC] != 0,
        _i1(t, 0), _i1(t, 1), _f2(t, 2), _f2(t, 3), _f2(t, 4), _f2(t, 5), _f1(t, 6), _f1(t, 7),
        _f2(t, 8), r[SC_ALIGNMENT], _f2(t, 9), _f2(t, 10), _f1(t, 11), _f2(t, 12), _f2(t, 13),
        _f1(t, 14), _i1(t, 15), _f2(t, 16), _i1(t, 17), _i1(t, 18),
        raw_array(_f32p(t[19, 0]), (t[19, 1], t[19, 2], t[19, 3])),
        _f1(t, 20), _i2(t, 21), _i1(t, 22), _f2(t, 23), _i1(t, 24), _i1(t, 25), _i1(t, 26),
        _f2(t, 27), _i1(t, 28), _i1(t, 29), _f2(t, 30), _f2(t, 31), _f2(t, 32), _i2(t, 33),
        _f2(t, 34), _f2(t, 35), _i1(t, 36), _i2(t, 37), _f2(t, 38), r[SC_DOUBLE_SIDED] != 0,
        _f2(t, 39), _f2(t, 40), _f2(t, 41), _f2(t, 42), _f2(t, 43), _f3(t, 44), _f2(t, 45),
        _i2(t, 46),
    )  # fmt: skip


# ---- the part kernel's int64 block (one row): the fused step's table and step integers
# (written by it), the set's arrays, the world's forward-reuse block (P_FORWARD, 0: no
# mj_forward; runtime.run._forward_kernels) with the world, the copies (channel, source
# address, bytes) of the recording row
(P_TABLE, P_SI, P_ROWS, P_SENSORS, P_FLOATS, P_WORLDS, P_NWORLDS, P_SHARED, P_PARAMS,
 P_FORWARD, P_MODEL, P_DATA, P_COPIES, P_NCOPIES) = range(14)  # fmt: skip
P_SIZE = 14
# its float64 block (one row): the update's dt [s]
P_DT = 0


@jit(nrt=False)
def lab_set_part_kernel(
    positions, orientations, velocities, angular, time, step, floats, ints
):  # pragma: no cover - compiled
    """The set's update as a part of the compiled step, and its recording row.

    After ``mj_forward`` (``P_FORWARD``: through the engine's forward-reuse block, which it
    arms for the next step), ``si[S_CONTACTS]`` is the contact count ``mjData`` then holds.

    Args:
        positions: body positions of the step (unused: the set reads ``mjData``).
        orientations: unused.
        velocities: unused.
        angular: unused.
        time: simulation time [s] (unused).
        step: the step (unused).
        floats: float64 (1, 1): ``P_DT``.
        ints: int64 (1, P_SIZE): ``P_*``.
    """
    b = ints[0]
    shared = raw_array(_i64p(b[P_SHARED]), (S_SIZE,))
    if b[P_FORWARD] != 0:  # (the post-step accelerations; the next step reuses them)
        forward_and_arm(b[P_FORWARD], b[P_MODEL], b[P_DATA])
        # the contact count mjData now holds (the step block compares it with the bindings')
        _i64p(b[P_SI])[S_CONTACTS] = _i32p(b[P_DATA] + shared[D_NCON])[0]
    params = raw_array(_f64p(b[P_PARAMS]), (2,))
    params[0] = floats[0, P_DT]
    params[1] = 0.0
    n = b[P_NWORLDS]
    lab_set_kernel(
        raw_array(_i64p(b[P_ROWS]), (b[P_SENSORS], R_SIZE)),
        raw_array(_f64p(b[P_FLOATS]), (b[P_SENSORS], F_SIZE)),
        raw_array(_i64p(b[P_WORLDS]), (n, 2)),
        shared,
        params,
    )
    table = b[P_TABLE]
    row = _i64p(b[P_SI])[S_ROW]
    copies = raw_array(_i64p(b[P_COPIES]), (b[P_NCOPIES], 3))
    for c in range(copies.shape[0]):
        slot = _i64p(table + 32 * (T_FIRST_CHANNEL + copies[c, 0]))  # (address, row bytes)
        memcpy(slot[0] + row * slot[1], copies[c, 1], copies[c, 2])
