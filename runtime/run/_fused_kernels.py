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

from runtime._jit import JIT_DISABLED, jit
from runtime.engine._kernels import state_kernel
from runtime.sensors._contact_kernels import contact_update_kernel
from runtime.sensors._imu_kernels import imu_read_kernel, imu_update_kernel
from runtime.sensors._raycast_kernels import raycast_batch_step_kernel

# ---- array slots of the table (rows)
T_MJ, T_CON_F, T_CON_I, T_JNT_RANGE, T_TAB_I, T_TAB_F, T_WORK_I, T_WORK_F = range(8)
T_VEC, T_QUAT, T_JOINT, T_IDS, T_COM_LOCAL, T_NO_DTS, T_NO3, T_NO4 = range(8, 16)
T_C_FLOAT, T_C_INT, T_I_INT, T_I_FLOAT, T_GRAVITY_UP, T_IMU_OUT = range(16, 22)
T_R_BLOCK_F, T_R_BLOCK_I, T_R_OUT, T_R_HITS, T_R_HIT_COUNT, T_TARGETS = range(22, 28)
T_FIRST_CHANNEL = 28  # then one row per recorder channel: its chunk buffer

# ---- per-step integers / floats (from S_KERNELS: the part kernels' native addresses)
S_CONTACTS, S_ROW, S_STEP, S_ACC, S_BODIES, S_PARTS, S_KERNELS = range(7)
F_TIME, F_DT = range(2)

# ---- parts present (bits of S_PARTS)
P_CONTACT, P_IMU, P_RAY, P_RAY_BODIES, P_RAY_VELOCITIES = 1, 2, 4, 8, 16

# ---- write operations (rows of ``ops``): kind, then kind-specific columns
OP_CONTACT, OP_IMU, OP_RAY, OP_JOINT, OP_BODY = range(5)
OP_WIDTH = 16

# ---- the channel types the write operations store (checked when the fused step binds)
CHANNEL_TYPES = {
    OP_CONTACT: ("bool", "float64", "int64", "float64", "bool", "int64"),
    OP_IMU: ("bool", "float64", "float64", "float64", "float64", "int64"),
    OP_RAY: (
        "bool", "bool", "int32", "float32", "float32", "float32", "float32", "float64",
        "int64",
    ),
    OP_JOINT: ("float64",) * 4,
    OP_BODY: ("float64",) * 2,
}  # fmt: skip
# the columns of an operation that hold those channels
CHANNEL_COLUMNS = {
    OP_CONTACT: range(2, 8),
    OP_IMU: range(2, 8),
    OP_RAY: range(5, 14),
    OP_JOINT: range(1, 5),
    OP_BODY: range(1, 3),
}

# ---- status
OK, BAD_ACTOR = 0, 1

# ---- the part kernels, called through their compiled native entry (see _call_kernel)
K_STATE, K_CONTACT, K_IMU, K_IMU_READ, K_RAY = range(5)
KERNELS = (
    state_kernel,
    contact_update_kernel,
    imu_update_kernel,
    imu_read_kernel,
    raycast_batch_step_kernel,
)
SI_SIZE = S_KERNELS + len(KERNELS)

if not JIT_DISABLED:
    from numba import carray, types
    from numba.core import cgutils
    from numba.core.errors import TypingError
    from numba.extending import intrinsic

    _F64 = [types.Array(types.float64, n, "C") for n in (1, 2, 3)]
    _I64 = [types.Array(types.int64, n, "C") for n in (1, 2)]
    _I32 = [types.Array(types.int32, n, "C") for n in (1, 2)]
    _F32_1 = types.Array(types.float32, 1, "C")
    _f, _i, _b = types.float64, types.int64, types.boolean
    # the argument types the general path calls each part kernel with (one signature each)
    SIGNATURES = (
        (
            _F64[0], _F64[1], _I32[1], _F64[0], _I32[0], _I32[0], _F64[1], _I64[0], _F64[0],
            _I64[0], _F64[0], _b, _F64[1], _F64[1], _F64[1], _I64[1],
        ),
        (
            _F64[1], _F64[1], _I64[0], _I64[0], _F64[1], _F64[1], _F64[0], _f, _f, _i, _i,
            _F64[1], _I64[1],
        ),
        (_F64[1], _F64[1], _F64[1], _F64[1], _F64[1], _F64[1], _f, _i, _i, _I64[1], _F64[2]),
        (_I64[1], _F64[2], _i, _F64[0], _F64[0], _b, _F64[0]),
        (_F64[1], _I64[1], _F32_1, _f, _F64[1], _F64[1], _F64[1], _F64[1]),
    )  # fmt: skip

    @intrinsic
    def _call_kernel(typingctx, which, address, args):
        """Call part kernel ``which`` at its native ``address`` with the tuple ``args``.

        A direct call would link the part kernel's code into the fused kernel and optimise it
        all again (seconds of LLVM time at every cold start); through its address the fused
        kernel reuses the machine code the general path already loaded or compiled. The
        arguments must have exactly the kernel's compiled types: checked here, at compile
        time, against ``SIGNATURES`` (the addresses are looked up with the same types).
        """
        if not isinstance(which, types.IntegerLiteral) or not isinstance(args, types.BaseTuple):
            return None
        given = tuple(args)
        argtys = tuple(types.unliteral(a) for a in given)
        expected = SIGNATURES[which.literal_value]
        if argtys != expected:
            raise TypingError(f"part kernel {which.literal_value}: {argtys} != {expected}")
        signature = types.none(which, address, args)

        def codegen(context, builder, sig, llargs):
            values = [
                context.cast(builder, builder.extract_value(llargs[2], k), given[k], argtys[k])
                for k in range(len(argtys))
            ]
            fnty = context.call_conv.get_function_type(types.none, argtys)
            callee = builder.inttoptr(llargs[1], fnty.as_pointer())
            status, _ = context.call_conv.call_function(builder, callee, types.none, argtys, values)
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            return context.get_dummy_value()

        return signature, codegen

    def _pointer_to(dtype):
        @intrinsic
        def to_pointer(typingctx, address):
            if not isinstance(address, types.Integer):
                return None
            signature = types.CPointer(dtype)(address)

            def codegen(context, builder, sig, args):
                return builder.inttoptr(args[0], context.get_value_type(sig.return_type))

            return signature, codegen

        return to_pointer

    _f64p = _pointer_to(types.float64)
    _f32p = _pointer_to(types.float32)
    _i64p = _pointer_to(types.int64)
    _i32p = _pointer_to(types.int32)
    _u8p = _pointer_to(types.uint8)
else:  # the fused path is off without the JIT (runtime.run.fused checks)
    carray = _f64p = _f32p = _i64p = _i32p = _u8p = _call_kernel = None
    SIGNATURES = ()


@jit(inline=True)
def _f64_1(t, s, offset, n):  # pragma: no cover
    return carray(_f64p(t[s, 0] + 8 * offset), (n,))


@jit(inline=True)
def _f64_2(t, s, offset, n0, n1):  # pragma: no cover
    return carray(_f64p(t[s, 0] + 8 * offset), (n0, n1))


@jit(inline=True)
def _f64_3(t, s):  # pragma: no cover
    return carray(_f64p(t[s, 0]), (t[s, 1], t[s, 2], t[s, 3]))


@jit(inline=True)
def _i64_1(t, s, offset, n):  # pragma: no cover
    return carray(_i64p(t[s, 0] + 8 * offset), (n,))


@jit(inline=True)
def _i64_2(t, s, offset, n0, n1):  # pragma: no cover
    return carray(_i64p(t[s, 0] + 8 * offset), (n0, n1))


@jit(inline=True)
def _f32_1(t, s, offset, n):  # pragma: no cover
    return carray(_f32p(t[s, 0] + 4 * offset), (n,))


@jit(inline=True)
def _row(t, channel, row):  # pragma: no cover
    """Address of ``row`` of a recorder channel's chunk buffer."""
    s = T_FIRST_CHANNEL + channel
    return t[s, 0] + row * t[s, 1]


@jit(inline=True)
def _zero(t, channel, row):  # pragma: no cover
    """A channel's row = zeros (0, 0.0 and False are zero bytes in every channel type)."""
    s = T_FIRST_CHANNEL + channel
    p = _u8p(t[s, 0] + row * t[s, 1])
    for k in range(t[s, 1]):
        p[k] = 0


@jit(inline=True)
def _copy64(destination, source, n):  # pragma: no cover
    d = _f64p(destination)
    s = _f64p(source)
    for k in range(n):
        d[k] = s[k]


@jit(inline=True)
def _copy32(destination, source, n):  # pragma: no cover
    d = _f32p(destination)
    s = _f32p(source)
    for k in range(n):
        d[k] = s[k]


@jit
def _write_contact(t, op, row):  # pragma: no cover
    """A contact sensor's row (``ContactSensor.reading`` columns), zeros when invalid.

    ``op``: kind, sensor row, then the channels valid (bool), time (float64), step (int64),
    value (float64), in_contact (bool), number_of_contacts (int64).
    """
    i = op[1]
    ints = _i64p(t[T_C_INT, 0] + 8 * i * t[T_C_INT, 2])
    floats = _f64p(t[T_C_FLOAT, 0] + 8 * i * t[T_C_FLOAT, 2])
    valid = ints[1] != 0 and ints[4] != 0
    _u8p(_row(t, op[2], row))[0] = 1 if valid else 0
    if not valid:
        for c in range(3, 8):
            _zero(t, op[c], row)
        return
    _f64p(_row(t, op[3], row))[0] = floats[7]
    _i64p(_row(t, op[4], row))[0] = ints[5]
    _f64p(_row(t, op[5], row))[0] = floats[6]
    _u8p(_row(t, op[6], row))[0] = 1 if ints[2] != 0 else 0
    _i64p(_row(t, op[7], row))[0] = ints[3]


@jit
def _write_imu(t, op, row, gravity, read_address):  # pragma: no cover
    """An IMU's row (``ImuSensor._read_into``), zeros when invalid.

    ``op``: kind, sensor row, then the channels valid (bool), linear_acceleration,
    angular_velocity, orientation, time (float64) and step (int64).
    """
    i = op[1]
    ints = _i64_2(t, T_I_INT, 0, t[T_I_INT, 1], t[T_I_INT, 2])
    valid = ints[i, 6] != 0 and ints[i, 8] != 0
    _u8p(_row(t, op[2], row))[0] = 1 if valid else 0
    if not valid:
        for c in range(3, 8):
            _zero(t, op[c], row)
        return
    out = _f64_1(t, T_IMU_OUT, 0, 11)
    gravity_up = _f64_1(t, T_GRAVITY_UP, 0, 3)
    read = (ints, _f64_3(t, T_I_FLOAT), i, gravity, gravity_up, True, out)
    _call_kernel(K_IMU_READ, read_address, read)
    base = t[T_IMU_OUT, 0]
    _copy64(_row(t, op[3], row), base, 3)
    _copy64(_row(t, op[4], row), base + 24, 3)
    _copy64(_row(t, op[5], row), base + 48, 4)
    _f64p(_row(t, op[6], row))[0] = out[10]
    _i64p(_row(t, op[7], row))[0] = ints[i, 9]


@jit
def _write_ray(t, op, row, time, step):  # pragma: no cover
    """A ray-cast sensor's row from its layout's output block (``_RaycastDirect``).

    ``op``: kind, first ray, end ray, the layout's ray count, the actor-table length (-1:
    no hit paths), then the channels valid (bool), hit (bool), hit_prim_paths (int32, -1:
    none), depths, hit_positions, hit_normals, ray_end_points_world (float32), time
    (float64), step (int64); column 15 the table row of the sensor's per-ray maxRange.
    """
    a = op[1]
    b = op[2]
    r = op[3]
    n = b - a
    table_len = op[4]
    out = t[T_R_OUT, 0]
    depths = _f32p(out + 4 * a)
    max_ranges = _f32p(t[op[15], 0])
    # hit: depth below maxRange (np.less: False for NaN); ids: the actor hit, or -1
    hit = _u8p(_row(t, op[6], row))
    for k in range(n):
        hit[k] = 1 if depths[k] < max_ranges[k] else 0
    if op[7] >= 0:
        ids = _i32p(_row(t, op[7], row))
        for k in range(n):
            ids[k] = -1
        if table_len >= 0:
            # the hit rows ``[ray, actor]`` (a strided view: address, rows, byte strides)
            base = t[T_R_HITS, 0]
            s0 = t[T_R_HITS, 2]
            s1 = t[T_R_HITS, 3]
            count = _i64p(t[T_R_HIT_COUNT, 0])[0]
            for k in range(count):
                ray = _i64p(base + k * s0)[0]
                if ray >= a and ray < b:
                    actor = _i64p(base + k * s0 + s1)[0]
                    if actor < 0 or actor >= table_len:
                        return BAD_ACTOR
                    ids[ray - a] = np.int32(actor)
    _u8p(_row(t, op[5], row))[0] = 1
    _copy32(_row(t, op[8], row), out + 4 * a, n)
    _copy32(_row(t, op[9], row), out + 4 * (r + 3 * a), 3 * n)
    _copy32(_row(t, op[10], row), out + 4 * (4 * r + 3 * a), 3 * n)
    _copy32(_row(t, op[11], row), out + 4 * (10 * r + 3 * a), 3 * n)
    _f64p(_row(t, op[12], row))[0] = np.float64(np.float32(time))
    _i64p(_row(t, op[13], row))[0] = step
    return OK


@jit
def fused_step_kernel(t, ops, efc_force, efc_type, efc_id, si, sf):  # pragma: no cover
    """One step after ``mj_step``: state, every sensor batch, the recording row.

    Args:
        t: the array table, int64 (T_FIRST_CHANNEL + channels, 4): address and shape per
            slot (``T_*``; channel rows: chunk buffer address, elements per row, ``D_*``).
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
        carray(_i32p(t[T_CON_I, 0]), (t[T_CON_I, 1], t[T_CON_I, 2])),
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
        elif kind == OP_BODY:  # positions (B, 3), orientations (B, 4): float64
            _copy64(_row(t, op[1], row), t[T_VEC, 0], 3 * b)
            _copy64(_row(t, op[2], row), t[T_QUAT, 0], 4 * b)
    return OK


def kernel_addresses() -> np.ndarray | None:
    """The part kernels' native entry addresses (``K_*`` order), or None (unavailable).

    Each kernel is compiled (or loaded from the cache) for its ``SIGNATURES`` types if the
    process does not have it yet; the general path has normally done so at the first step.
    """
    out = np.zeros(len(KERNELS), np.int64)
    for k, (kernel, signature) in enumerate(zip(KERNELS, SIGNATURES, strict=True)):
        compiled = kernel.overloads.get(signature)
        if compiled is None:
            kernel.compile(signature)
            compiled = kernel.overloads[signature]
        if compiled.signature.return_type != types.none:
            return None
        address = compiled.library.get_pointer_to_function(compiled.fndesc.llvm_func_name)
        if not address:
            return None
        out[k] = address
    return out
