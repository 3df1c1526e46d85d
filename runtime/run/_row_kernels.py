"""The fused step's recording-row writers: a sensor's fields straight into the chunk row.

Arrays and chunk buffers are reached through the fused step's address table (``T_*`` rows:
address and shape; a channel's row: its chunk buffer's address and bytes per row).
"""

from __future__ import annotations

import numpy as np

from runtime._compile.jit import jit
from runtime.run._native_kernels import (
    K_IMU_READ,
    _call_kernel,
    _f32p,
    _f64p,
    _i32p,
    _i64p,
    _u8p,
    memcpy,
    memcpy_stream,
    raw_array,
)

# ---- array slots of the table (rows)
T_MJ, T_CON_F, T_CON_I, T_JNT_RANGE, T_TAB_I, T_TAB_F, T_WORK_I, T_WORK_F = range(8)
T_VEC, T_QUAT, T_JOINT, T_IDS, T_COM_LOCAL, T_NO_DTS, T_NO3, T_NO4 = range(8, 16)
T_C_FLOAT, T_C_INT, T_I_INT, T_I_FLOAT, T_GRAVITY_UP, T_IMU_OUT = range(16, 22)
T_R_BLOCK_F, T_R_BLOCK_I, T_R_OUT, T_R_HITS, T_R_HIT_COUNT, T_TARGETS = range(22, 28)
T_FIRST_CHANNEL = 28  # then one row per recorder channel: its chunk buffer

# ---- write operations (rows of ``ops``): kind, then kind-specific columns
# OP_ZERO: a sensor that never evaluates in the run (disabled), its row invalid: zeros
OP_CONTACT, OP_IMU, OP_RAY, OP_JOINT, OP_BODY, OP_ZERO = range(6)
# a kind's own part kernel (run before the row writes), and a row written from its blocks
OP_PART, OP_FIELDS = 6, 7
OP_WIDTH = 16
# OP_FIELDS: kind, float-block row, int-block row, sensor index, valid column (int block),
# field count, then per field its channel and source: column << 2 | FIELD_* (at most
# FIELDS_PER_OP fields per operation)
FIELD_F64, FIELD_I64, FIELD_BOOL = range(3)
FIELDS_PER_OP = (OP_WIDTH - 6) // 2

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


@jit(inline=True)
def _f64_1(t, s, offset, n):  # pragma: no cover
    return raw_array(_f64p(t[s, 0] + 8 * offset), (n,))


@jit(inline=True)
def _f64_2(t, s, offset, n0, n1):  # pragma: no cover
    return raw_array(_f64p(t[s, 0] + 8 * offset), (n0, n1))


@jit(inline=True)
def _f64_3(t, s):  # pragma: no cover
    return raw_array(_f64p(t[s, 0]), (t[s, 1], t[s, 2], t[s, 3]))


@jit(inline=True)
def _i64_1(t, s, offset, n):  # pragma: no cover
    return raw_array(_i64p(t[s, 0] + 8 * offset), (n,))


@jit(inline=True)
def _i64_2(t, s, offset, n0, n1):  # pragma: no cover
    return raw_array(_i64p(t[s, 0] + 8 * offset), (n0, n1))


@jit(inline=True)
def _f32_1(t, s, offset, n):  # pragma: no cover
    return raw_array(_f32p(t[s, 0] + 4 * offset), (n,))


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
    """``n`` float64 values from address ``source`` to address ``destination``."""
    memcpy(destination, source, 8 * n)


@jit(inline=True)
def _stream32(destination, source, n):  # pragma: no cover
    """``n`` float32 values from address ``source`` into a chunk row at ``destination``.

    Non-temporal stores when the row is 64-byte aligned (the kernel ends with a fence).
    """
    if destination % 64 == 0 and n >= 64:
        memcpy_stream(destination, source, 4 * n)
    else:
        memcpy(destination, source, 4 * n)


@jit(nrt=False)
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


@jit(nrt=False)
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


@jit(nrt=False)
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
    _stream32(_row(t, op[8], row), out + 4 * a, n)
    _stream32(_row(t, op[9], row), out + 4 * (r + 3 * a), 3 * n)
    _stream32(_row(t, op[10], row), out + 4 * (4 * r + 3 * a), 3 * n)
    _stream32(_row(t, op[11], row), out + 4 * (10 * r + 3 * a), 3 * n)
    _f64p(_row(t, op[12], row))[0] = np.float64(np.float32(time))
    _i64p(_row(t, op[13], row))[0] = step
    return OK


@jit(nrt=False)
def _write_fields(t, op, row):  # pragma: no cover
    """A sensor's row from its kind's blocks (``OP_FIELDS``), zeros when invalid.

    ``op``: kind, the table rows of the kind's float64 and int64 blocks (one row per
    sensor), the sensor's row, the int column that holds its validity, the field count,
    then per field its channel and its source (``column << 2 | FIELD_*``): float64 values
    from the float block, int64 values or bools (``!= 0``) from the int block, as many as
    the channel holds.
    """
    index = op[3]
    floats = t[op[1], 0] + 8 * index * t[op[1], 2]
    ints = t[op[2], 0] + 8 * index * t[op[2], 2]
    valid = _i64p(ints + 8 * op[4])[0] != 0
    for k in range(op[5]):
        channel = op[6 + 2 * k]
        if not valid:
            _zero(t, channel, row)
            continue
        source = op[7 + 2 * k]
        column = source >> 2
        size = t[T_FIRST_CHANNEL + channel, 1]
        destination = _row(t, channel, row)
        if source & 3 == FIELD_F64:
            memcpy(destination, floats + 8 * column, size)
        elif source & 3 == FIELD_I64:
            memcpy(destination, ints + 8 * column, size)
        else:
            out = _u8p(destination)
            values = _i64p(ints + 8 * column)
            for e in range(size):
                out[e] = 1 if values[e] != 0 else 0
