"""Vector building blocks of the wide-BVH traversal, written as LLVM IR for Numba kernels.

Numba does not vectorise a ray traversal by itself: the loop over a node's children is
unrolled into scalar code, and a leaf's triangles are tested one after the other with a
branch per test. These helpers are Numba intrinsics that emit the vector code directly:

* :func:`wide_box_test` tests one ray against the :data:`NODE_WIDTH` child boxes of a wide
  node (8 lanes) and returns the bit mask of the children it enters;
* :func:`leaf_triangle_test` runs Möller–Trumbore on the :data:`LEAF_WIDTH` triangles of a
  leaf (8 lanes) and returns the bit mask of the accepted hits;
* :func:`lowest_bit` and :func:`prefetch_lines` are ``cttz`` and ``llvm.prefetch``;
* :func:`load_int32` reads an int32 stored inside a float array (a leaf block's face ids);
* :func:`fetch_add` is an atomic add on a counter (the work queue that hands blocks of rays
  to the threads of a parallel cast).

The triangle test does exactly the scalar kernels' operations in the same order, lane by
lane (``(a * b) - (c * d)``, no fused multiply-add), so its distances and its accept /
reject decisions are the scalar test's to the bit. The box test uses fused multiply-adds:
it only decides which children are entered, and its boxes are rounded outward.

With ``SIMRT_DISABLE_JIT=1`` the same names are plain NumPy functions with the same results.

Arrays are C-contiguous; ``base`` is an element offset into the flattened array. A wide
node's boxes are 6 rows of 8 lanes from ``base`` (``lo x, lo y, lo z, hi x, hi y, hi z``),
float32 or float64; a leaf is 9 rows of 8 lanes by coordinate: ``v0, e1, e2`` in float64, or
the corners ``v0, v1, v2`` in float32 (then ``e1 = v1 - v0`` and ``e2 = v2 - v0`` are taken
in float64: the float64 layout's edges to the bit when the corners were float32 values).
"""

from __future__ import annotations

import numpy as np

from runtime._compile.jit import JIT_DISABLED

__all__ = [
    "LEAF_WIDTH",
    "NODE_WIDTH",
    "fetch_add",
    "leaf_triangle_test",
    "load_int32",
    "lowest_bit",
    "prefetch_lines",
    "wide_box_test",
]

NODE_WIDTH = 8
"""Children per wide BVH node (lanes of :func:`wide_box_test`)."""
LEAF_WIDTH = 8
"""Triangles per leaf (lanes of :func:`leaf_triangle_test`): two sibling leaves of the
binary build (at most 4 triangles each) in one block."""

BARY_EPS = 1e-12
"""Barycentric tolerance of the triangle test (the scalar kernels' ``_BARY_EPS``)."""


def _python_box_test(boxes, base, nx, ny, nz, ix, iy, iz, oix, oiy, oiz, t_max, out_t):
    flat = boxes.reshape(-1)
    w = NODE_WIDTH

    def plane(row, inv, oi):
        lanes = flat[base + row * w : base + (row + 1) * w].astype(np.float64)
        return lanes * inv - oi

    with np.errstate(invalid="ignore", over="ignore"):
        t0 = np.maximum(
            np.maximum(plane(nx, ix, oix), plane(ny, iy, oiy)),
            np.maximum(plane(nz, iz, oiz), 0.0),
        )
        t1 = np.minimum(
            np.minimum(plane(3 - nx, ix, oix), plane(5 - ny, iy, oiy)),
            np.minimum(plane(7 - nz, iz, oiz), t_max),
        )
    out_t[:w] = t0
    hit = t0 <= t1
    return int(np.sum(hit.astype(np.int64) << np.arange(w, dtype=np.int64)))


def _python_leaf_test(tris, base, ox, oy, oz, dx, dy, dz, t_best, double_sided, out_t):
    w = LEAF_WIDTH
    rows = tris.reshape(-1)[base : base + 9 * w].reshape(9, w).astype(np.float64)
    if tris.dtype == np.float32:  # corners v0, v1, v2: the edges in float64
        rows[3:6] -= rows[0:3]
        rows[6:9] -= rows[0:3]
    v0x, v0y, v0z, e1x, e1y, e1z, e2x, e2y, e2z = rows
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        px = dy * e2z - dz * e2y
        py = dz * e2x - dx * e2z
        pz = dx * e2y - dy * e2x
        det = e1x * px + e1y * py + e1z * pz
        ok = det != 0.0 if double_sided else ~(det <= 0.0)
        inv = 1.0 / det
        sx = ox - v0x
        sy = oy - v0y
        sz = oz - v0z
        u = (sx * px + sy * py + sz * pz) * inv
        ok &= (u >= -BARY_EPS) & (u <= 1.0 + BARY_EPS)
        qx = sy * e1z - sz * e1y
        qy = sz * e1x - sx * e1z
        qz = sx * e1y - sy * e1x
        v = (dx * qx + dy * qy + dz * qz) * inv
        ok &= (v >= -BARY_EPS) & (u + v <= 1.0 + BARY_EPS)
        t = (e2x * qx + e2y * qy + e2z * qz) * inv
        ok &= (t >= 0.0) & (t < t_best)
    out_t[:w] = t
    return int(np.sum(ok.astype(np.int64) << np.arange(w, dtype=np.int64)))


def _python_lowest_bit(mask):
    mask = int(mask)
    return (mask & -mask).bit_length() - 1


def _python_prefetch(array, offset, lines):
    return None


def _python_load_int32(array, index):
    return int(array.reshape(-1).view(np.int32)[index])


def _python_fetch_add(counter, value):
    previous = int(counter[0])
    counter[0] = previous + value
    return previous


if JIT_DISABLED:
    wide_box_test = _python_box_test
    leaf_triangle_test = _python_leaf_test
    lowest_bit = _python_lowest_bit
    prefetch_lines = _python_prefetch
    fetch_add = _python_fetch_add
    load_int32 = _python_load_int32
else:
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.core.errors import TypingError
    from numba.extending import intrinsic

    _I32 = ir.IntType(32)
    _I64 = ir.IntType(64)
    _F64 = ir.DoubleType()

    def _c_array(name, array_type, dtypes):
        if not (isinstance(array_type, types.Array) and array_type.layout == "C"):
            raise TypingError(f"{name}: expects a C-contiguous array, got {array_type}")
        if array_type.dtype not in dtypes:
            raise TypingError(f"{name}: expects an array of {dtypes}, got {array_type.dtype}")

    def _splat(builder, value, width):
        vector = ir.VectorType(_F64, width)
        one = builder.insert_element(ir.Constant(vector, ir.Undefined), value, ir.Constant(_I32, 0))
        zeros = ir.Constant(ir.VectorType(_I32, width), [0] * width)
        return builder.shuffle_vector(one, ir.Constant(vector, ir.Undefined), zeros)

    def _mask(builder, lanes, width):
        """A <width x i1> comparison as an int64 bit mask (lane k -> bit k)."""
        return builder.zext(builder.bitcast(lanes, ir.IntType(width)), _I64)

    @intrinsic
    def wide_box_test(typingctx, boxes, base, nx, ny, nz, ix, iy, iz, oix, oiy, oiz, t_max, out_t):
        """Entry distances and entered-children mask of one ray at one wide node.

        Args:
            typingctx: Numba's typing context.
            boxes: the wide nodes' boxes, C-contiguous float32 or float64.
            base: element offset of the node's first row.
            nx: row of the near x plane (0 or 3).
            ny: row of the near y plane (1 or 4).
            nz: row of the near z plane (2 or 5).
            ix: inverse ray direction x (``+-1e30`` for a zero component).
            iy: inverse ray direction y.
            iz: inverse ray direction z.
            oix: origin x times ``ix``.
            oiy: origin y times ``iy``.
            oiz: origin z times ``iz``.
            t_max: hits at or beyond this distance do not count.
            out_t: entry distance of each lane, shape (>= 8,), float64 (written).

        Returns:
            Bit ``k`` set when the ray enters child ``k`` before ``t_max``.
        """
        _c_array("wide_box_test", boxes, (types.float32, types.float64))
        _c_array("wide_box_test", out_t, (types.float64,))
        sig = types.int64(boxes, base, nx, ny, nz, ix, iy, iz, oix, oiy, oiz, t_max, out_t)

        def codegen(context, builder, signature, args):
            w = NODE_WIDTH
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            out = context.make_array(signature.args[12])(context, builder, args[12]).data
            base_, nx_, ny_, nz_ = (
                context.cast(builder, v, t, types.int64)
                for v, t in zip(args[1:5], signature.args[1:5], strict=True)
            )
            ix_, iy_, iz_, oix_, oiy_, oiz_, t_max_ = (
                context.cast(builder, v, t, types.float64)
                for v, t in zip(args[5:12], signature.args[5:12], strict=True)
            )
            lane_type = data.type.pointee
            vector = ir.VectorType(_F64, w)
            fma = cgutils.get_or_insert_function(
                builder.module,
                ir.FunctionType(vector, [vector, vector, vector]),
                f"llvm.fma.v{w}f64",
            )

            def plane(row, inverse, scaled_origin):
                offset = builder.add(base_, builder.mul(row, ir.Constant(_I64, w)))
                pointer = builder.bitcast(
                    builder.gep(data, [offset]), ir.VectorType(lane_type, w).as_pointer()
                )
                lanes = builder.load(pointer, align=4 if lane_type != _F64 else 8)
                if lane_type != _F64:
                    lanes = builder.fpext(lanes, vector)
                minus = builder.fneg(_splat(builder, scaled_origin, w))
                return builder.call(fma, [lanes, _splat(builder, inverse, w), minus])

            def larger(a, b):
                return builder.select(builder.fcmp_ordered(">", a, b), a, b)

            def smaller(a, b):
                return builder.select(builder.fcmp_ordered("<", a, b), a, b)

            fx = builder.sub(ir.Constant(_I64, 3), nx_)
            fy = builder.sub(ir.Constant(_I64, 5), ny_)
            fz = builder.sub(ir.Constant(_I64, 7), nz_)
            enter = larger(
                larger(plane(nx_, ix_, oix_), plane(ny_, iy_, oiy_)),
                larger(plane(nz_, iz_, oiz_), ir.Constant(vector, [0.0] * w)),
            )
            leave = smaller(
                smaller(plane(fx, ix_, oix_), plane(fy, iy_, oiy_)),
                smaller(plane(fz, iz_, oiz_), _splat(builder, t_max_, w)),
            )
            builder.store(enter, builder.bitcast(out, vector.as_pointer()), align=8)
            return _mask(builder, builder.fcmp_ordered("<=", enter, leave), w)

        return sig, codegen

    @intrinsic
    def leaf_triangle_test(
        typingctx, tris, base, ox, oy, oz, dx, dy, dz, t_best, double_sided, out_t
    ):
        """Möller–Trumbore on the 8 triangles of a leaf, the scalar test's bits lane by lane.

        Args:
            typingctx: Numba's typing context.
            tris: the leaves' triangles, C-contiguous float64 (``v0, e1, e2``) or float32
                (``v0, v1, v2``).
            base: element offset of the leaf's first row.
            ox: ray origin x, group frame.
            oy: ray origin y.
            oz: ray origin z.
            dx: unit ray direction x, group frame.
            dy: unit ray direction y.
            dz: unit ray direction z.
            t_best: hits at or beyond this distance are rejected.
            double_sided: when False back faces are rejected.
            out_t: hit distance of each lane, shape (>= 8,), float64 (written).

        Returns:
            Bit ``k`` set when triangle ``k`` is hit in ``[0, t_best)``.
        """
        _c_array("leaf_triangle_test", tris, (types.float32, types.float64))
        _c_array("leaf_triangle_test", out_t, (types.float64,))
        sig = types.int64(tris, base, ox, oy, oz, dx, dy, dz, t_best, double_sided, out_t)

        def codegen(context, builder, signature, args):
            w = LEAF_WIDTH
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            out = context.make_array(signature.args[10])(context, builder, args[10]).data
            base_ = context.cast(builder, args[1], signature.args[1], types.int64)
            ox_, oy_, oz_, dx_, dy_, dz_, t_best_ = (
                context.cast(builder, v, t, types.float64)
                for v, t in zip(args[2:9], signature.args[2:9], strict=True)
            )
            two_sided = context.cast(builder, args[9], signature.args[9], types.boolean)
            vector = ir.VectorType(_F64, w)

            lane_type = data.type.pointee

            def row(r):
                offset = builder.add(base_, ir.Constant(_I64, r * w))
                pointer = builder.bitcast(
                    builder.gep(data, [offset]), ir.VectorType(lane_type, w).as_pointer()
                )
                if lane_type == _F64:
                    return builder.load(pointer, align=8)
                return builder.fpext(builder.load(pointer, align=4), vector)

            mul, sub, add = builder.fmul, builder.fsub, builder.fadd
            v0x, v0y, v0z, e1x, e1y, e1z, e2x, e2y, e2z = (row(r) for r in range(9))
            if lane_type != _F64:  # float32 corners v0, v1, v2: the edges in float64
                e1x, e1y, e1z = sub(e1x, v0x), sub(e1y, v0y), sub(e1z, v0z)
                e2x, e2y, e2z = sub(e2x, v0x), sub(e2y, v0y), sub(e2z, v0z)
            dx, dy, dz = (_splat(builder, v, w) for v in (dx_, dy_, dz_))
            px = sub(mul(dy, e2z), mul(dz, e2y))
            py = sub(mul(dz, e2x), mul(dx, e2z))
            pz = sub(mul(dx, e2y), mul(dy, e2x))
            det = add(add(mul(e1x, px), mul(e1y, py)), mul(e1z, pz))
            zero = ir.Constant(vector, [0.0] * w)
            # double sided: det == 0 rejected; single sided: det <= 0 rejected (NaN passes
            # both and is rejected by the barycentric tests, as in the scalar test)
            ok = builder.select(
                two_sided,
                builder.fcmp_unordered("!=", det, zero),
                builder.fcmp_unordered(">", det, zero),
            )
            inverse = builder.fdiv(ir.Constant(vector, [1.0] * w), det)
            sx = sub(_splat(builder, ox_, w), v0x)
            sy = sub(_splat(builder, oy_, w), v0y)
            sz = sub(_splat(builder, oz_, w), v0z)
            u = mul(add(add(mul(sx, px), mul(sy, py)), mul(sz, pz)), inverse)
            low = ir.Constant(vector, [-BARY_EPS] * w)
            high = ir.Constant(vector, [1.0 + BARY_EPS] * w)
            ok = builder.and_(ok, builder.fcmp_ordered(">=", u, low))
            ok = builder.and_(ok, builder.fcmp_ordered("<=", u, high))
            qx = sub(mul(sy, e1z), mul(sz, e1y))
            qy = sub(mul(sz, e1x), mul(sx, e1z))
            qz = sub(mul(sx, e1y), mul(sy, e1x))
            v = mul(add(add(mul(dx, qx), mul(dy, qy)), mul(dz, qz)), inverse)
            ok = builder.and_(ok, builder.fcmp_ordered(">=", v, low))
            ok = builder.and_(ok, builder.fcmp_ordered("<=", add(u, v), high))
            t = mul(add(add(mul(e2x, qx), mul(e2y, qy)), mul(e2z, qz)), inverse)
            ok = builder.and_(ok, builder.fcmp_ordered(">=", t, zero))
            ok = builder.and_(ok, builder.fcmp_ordered("<", t, _splat(builder, t_best_, w)))
            builder.store(t, builder.bitcast(out, vector.as_pointer()), align=8)
            return _mask(builder, ok, w)

        return sig, codegen

    @intrinsic
    def lowest_bit(typingctx, mask):
        """Index of the lowest set bit of a non-zero ``mask`` (``cttz``)."""
        sig = types.int64(mask)

        def codegen(context, builder, signature, args):
            value = context.cast(builder, args[0], signature.args[0], types.int64)
            cttz = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(_I64, [_I64, ir.IntType(1)]), "llvm.cttz.i64"
            )
            return builder.call(cttz, [value, ir.Constant(ir.IntType(1), 1)])

        return sig, codegen

    @intrinsic
    def prefetch_lines(typingctx, array, offset, lines):
        """Prefetch ``lines`` cache lines (a literal int) of ``array`` from element ``offset``."""
        if not isinstance(lines, types.IntegerLiteral):
            raise TypingError("prefetch_lines: the line count must be a literal int")
        _c_array("prefetch_lines", array, (types.float32, types.float64, types.int32, types.int64))
        count = int(lines.literal_value)
        sig = types.void(array, offset, lines)

        def codegen(context, builder, signature, args):
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            at = context.cast(builder, args[1], signature.args[1], types.int64)
            byte = ir.IntType(8).as_pointer()
            start = builder.bitcast(builder.gep(data, [at]), byte)
            fetch = cgutils.get_or_insert_function(
                builder.module,
                ir.FunctionType(ir.VoidType(), [byte, _I32, _I32, _I32]),
                "llvm.prefetch.p0i8",
            )
            for k in range(count):
                line = builder.gep(start, [ir.Constant(_I64, 64 * k)])
                # read, high locality, data cache
                args_ = [line, ir.Constant(_I32, 0), ir.Constant(_I32, 3), ir.Constant(_I32, 1)]
                builder.call(fetch, args_)
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def load_int32(typingctx, array, index):
        """The int32 at int32 index ``index`` of a C-contiguous array's data, as an int64.

        Reads ids stored inside a float64 array (a leaf block's face ids) without a view
        of another type (a view costs reference counting in kernels compiled with Numba's
        runtime).

        Args:
            typingctx: Numba's typing context.
            array: C-contiguous float32, float64, int32 or int64 array.
            index: position counted in int32 values from the start of the data.
        """
        _c_array("load_int32", array, (types.float32, types.float64, types.int32, types.int64))
        if not isinstance(index, types.Integer):
            raise TypingError(f"load_int32: expects an integer index, got {index}")
        sig = types.int64(array, index)

        def codegen(context, builder, signature, args):
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            at = context.cast(builder, args[1], signature.args[1], types.int64)
            pointer = builder.gep(builder.bitcast(data, _I32.as_pointer()), [at])
            return builder.sext(builder.load(pointer, align=4), _I64)

        return sig, codegen

    @intrinsic
    def fetch_add(typingctx, counter, value):
        """Add ``value`` to ``counter[0]`` atomically; returns the value before the add.

        Threads calling it on one counter each get a distinct previous value (``monotonic``
        ordering: the counter only hands out numbers; the results the threads write are
        published by the end of the parallel region).

        Args:
            typingctx: Numba's typing context.
            counter: C-contiguous int64 array; element 0 is the counter.
            value: the integer to add.
        """
        _c_array("fetch_add", counter, (types.int64,))
        if not isinstance(value, types.Integer):
            raise TypingError(f"fetch_add: expects an integer value, got {value}")
        sig = types.int64(counter, value)

        def codegen(context, builder, signature, args):
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            amount = context.cast(builder, args[1], signature.args[1], types.int64)
            return builder.atomic_rmw("add", data, amount, "monotonic")

        return sig, codegen
