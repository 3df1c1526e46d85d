"""The part kernels' native entry points, and raw pointers, for the fused kernels.

The fused step calls the general path's compiled kernels (state extraction, the contact,
IMU and ray-cast batch kernels) through their native entry addresses
(:func:`_call_kernel`), so their code is neither typed nor optimised again inside the fused
kernel; and it reads arrays, MuJoCo's fields and C functions by address (the ``_*p``
pointer casts, :func:`_call_c`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from runtime._compile.jit import JIT_DISABLED
from runtime._compile.numba_compat import build_array, native_address
from runtime.engine._kernels import state_kernel
from runtime.sensors._contact_kernels import contact_update_kernel
from runtime.sensors._imu_kernels import imu_read_kernel, imu_update_kernel
from runtime.sensors._raycast_kernels import raycast_batch_step_kernel

# the part kernels, called through their compiled native entry (see _call_kernel)
K_STATE, K_CONTACT, K_IMU, K_IMU_READ, K_RAY = range(5)
KERNELS = (
    state_kernel,
    contact_update_kernel,
    imu_update_kernel,
    imu_read_kernel,
    raycast_batch_step_kernel,
)
# a sensor kind's own part kernel (not built in: its address comes with its ``OP_PART``)
K_PART = len(KERNELS)

if not JIT_DISABLED:
    from numba import types
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
        # K_PART: body positions, orientations, linear and angular velocities, time, step,
        # the kind's float64 and int64 blocks (runtime.sensors.kinds.PART_SIGNATURE)
        (_F64[1], _F64[1], _F64[1], _F64[1], _f, _i, _F64[1], _I64[1]),
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

    @intrinsic
    def _call_c(typingctx, function, model, data):
        """``function(model, data)``: a ``void (const mjModel*, mjData*)`` C function."""
        if not all(isinstance(a, types.Integer) for a in (function, model, data)):
            return None

        def codegen(context, builder, sig, args):
            from llvmlite import ir

            pointer = ir.IntType(8).as_pointer()
            fnty = ir.FunctionType(ir.VoidType(), [pointer, pointer])
            callee = builder.inttoptr(args[0], fnty.as_pointer())
            builder.call(callee, [builder.inttoptr(a, pointer) for a in args[1:]])
            return context.get_dummy_value()

        return types.none(function, model, data), codegen

    @intrinsic
    def raw_array(typingctx, pointer, shape):
        """A C-ordered array over ``pointer`` with ``shape`` (a tuple of integers).

        Numba's ``carray`` without its runtime: the array owns nothing and needs no
        reference counting, so kernels compiled without Numba's runtime (``jit(nrt=False)``)
        can take it; ``carray`` is a compiled function returning an array, which they
        cannot call.
        """
        if not isinstance(pointer, types.CPointer) or not isinstance(shape, types.BaseTuple):
            return None
        if not all(isinstance(n, types.Integer) for n in shape):
            return None
        ndim = len(shape)
        array_type = types.Array(pointer.dtype, ndim, "C")

        def codegen(context, builder, sig, args):
            intp = context.get_value_type(types.intp)
            dims = [
                context.cast(builder, builder.extract_value(args[1], k), shape[k], types.intp)
                for k in range(ndim)
            ]
            itemsize = context.get_abi_sizeof(context.get_data_type(pointer.dtype))
            strides = [intp(itemsize)] * ndim
            for k in range(ndim - 2, -1, -1):
                strides[k] = builder.mul(strides[k + 1], dims[k + 1])
            return build_array(context, builder, array_type, args[0], dims, strides, intp(itemsize))

        return array_type(pointer, shape), codegen

    @intrinsic
    def memcpy(typingctx, destination, source, size):
        """Copy ``size`` bytes from address ``source`` to address ``destination``.

        LLVM's ``memcpy`` (the C library's, vectorised): a row of a 720-ray lidar is
        28 KB; an element loop over raw pointers copies it two to three times slower.
        """
        if not all(isinstance(a, types.Integer) for a in (destination, source, size)):
            return None

        def codegen(context, builder, sig, args):
            from llvmlite import ir

            pointer = ir.IntType(8).as_pointer()
            intp = context.get_value_type(types.intp)
            cgutils.raw_memcpy(
                builder, builder.inttoptr(args[0], pointer), builder.inttoptr(args[1], pointer),
                context.cast(builder, args[2], sig.args[2], types.intp), intp(1),
            )  # fmt: skip
            return context.get_dummy_value()

        return types.none(destination, source, size), codegen

    @intrinsic
    def memcpy_stream(typingctx, destination, source, size):
        """``memcpy`` with non-temporal stores; ``destination`` 64-byte aligned.

        For rows written into a chunk buffer that nothing reads before the writer thread
        compresses the chunk: the stores bypass the cache instead of evicting the step's
        working set (MuJoCo's data, the ray scene) and reading each line first. They are
        weakly ordered: the calling kernel ends with :func:`store_fence`.
        """
        if not all(isinstance(a, types.Integer) for a in (destination, source, size)):
            return None

        def codegen(context, builder, sig, args):
            from llvmlite import ir

            i64 = ir.IntType(64)
            block = ir.VectorType(i64, 8)  # 64 bytes
            dst, src, n = (
                context.cast(builder, a, t, types.int64)
                for a, t in zip(args, sig.args, strict=True)
            )
            blocks = builder.lshr(n, i64(6))
            hint = builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)])
            with cgutils.for_range(builder, blocks) as loop:
                offset = builder.shl(loop.index, i64(6))
                value = builder.load(
                    builder.inttoptr(builder.add(src, offset), block.as_pointer()), align=1
                )
                store = builder.store(
                    value, builder.inttoptr(builder.add(dst, offset), block.as_pointer()), align=64
                )
                store.set_metadata("nontemporal", hint)
            done = builder.shl(blocks, i64(6))
            pointer = ir.IntType(8).as_pointer()
            cgutils.raw_memcpy(
                builder, builder.inttoptr(builder.add(dst, done), pointer),
                builder.inttoptr(builder.add(src, done), pointer), builder.sub(n, done), i64(1),
            )  # fmt: skip
            return context.get_dummy_value()

        return types.none(destination, source, size), codegen

    @intrinsic
    def store_fence(typingctx):
        """A full memory fence: every earlier store, non-temporal ones too, is visible.

        Non-temporal stores are weakly ordered: a kernel that wrote rows with
        :func:`memcpy_stream` calls this once before it returns (the rows are handed to the
        store's writer thread only after that), not after every copy, which would wait for
        each copy to reach memory.
        """

        def codegen(context, builder, sig, args):
            builder.fence("seq_cst")
            return context.get_dummy_value()

        return types.none(), codegen

    _f64p = _pointer_to(types.float64)
    _f32p = _pointer_to(types.float32)
    _i64p = _pointer_to(types.int64)
    _i32p = _pointer_to(types.int32)
    _u8p = _pointer_to(types.uint8)
else:  # the fused path is off without the JIT (runtime.run.fused checks)
    raw_array = memcpy = memcpy_stream = store_fence = _call_kernel = _call_c = None
    _f64p = _f32p = _i64p = _i32p = _u8p = None
    SIGNATURES = ()


def array_address(array: np.ndarray) -> int:
    """The address of ``array``'s first element (for the fused step's address tables)."""
    return int(array.__array_interface__["data"][0])


def kernel_addresses(needed: Iterable[int] = range(len(KERNELS))) -> np.ndarray | None:
    """The part kernels' native entry addresses (``K_*`` order), or None (unavailable).

    Each kernel the run calls is compiled (or loaded from the cache) for its ``SIGNATURES``
    types if the process does not have it yet; the general path has normally done so at
    the first step. The others' addresses are 0: a scene without ray-cast sensors never
    compiles the ray-cast step kernel.

    Args:
        needed: the ``K_*`` kernels the run's step calls
            (:func:`runtime.run._fused_kernels.part_kernels`).
    """
    needed = set(needed)
    out = np.zeros(len(KERNELS), np.int64)
    for k, kernel in enumerate(KERNELS):
        if k not in needed:
            continue
        address = _address(kernel, SIGNATURES[k])
        if not address:
            return None
        out[k] = address
    return out


def part_address(kernel: object) -> int:
    """The native entry address of a sensor kind's part kernel (``K_PART`` types), or 0.

    Args:
        kernel: a ``runtime._compile.jit.jit`` kernel taking ``SIGNATURES[K_PART]`` and
            returning nothing (compiled here for those types if it is not yet).
    """
    return _address(kernel, SIGNATURES[K_PART])


def _address(kernel: object, signature: tuple) -> int:
    compiled = kernel.overloads.get(signature)
    if compiled is None:
        kernel.compile(signature)
        compiled = kernel.overloads[signature]
    if compiled.signature.return_type != types.none:
        return 0
    return int(native_address(compiled) or 0)
