"""Kernels called through their native entry point (``runtime._compile._native``, a C module).

For the one-configuration kinematics calls (``chain.fk(q)``: a few hundred nanoseconds of
arithmetic) most of a Python call of a Numba kernel is the call itself: the dispatcher,
the unboxing of every array, the allocation of the outputs in Python. A
:func:`native_kernel` binds a compiled kernel's constant arrays once, checks each call's
input arrays exactly in C (dtype, byte order, shape, C order, alignment), allocates the
outputs there and calls the same machine code the dispatcher runs, so the results are the
dispatcher's bit for bit.

Everything here is optional: without the compiled module (no C compiler when the package
was built), with the JIT disabled, or when the kernel's compiled signature is not one of
plain arrays without a return value, :func:`native_kernel` returns None and callers use
the dispatcher. A call whose inputs do not match returns None too (the caller then
converts its inputs, or raises, through the dispatcher path), or calls the fallback the
caller gave.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from runtime._compile import numba_compat as compat
from runtime._compile.jit import JIT_DISABLED

__all__ = ["native_kernel", "native_chain_call", "no_call", "NATIVE_AVAILABLE", "In", "Out"]

try:
    from runtime._compile._native import NativeKernel as _NativeKernel
except ImportError:  # built without a C compiler
    _NativeKernel = None

NATIVE_AVAILABLE = (
    _NativeKernel is not None
    and not JIT_DISABLED
    and os.environ.get("SIMRT_NATIVE_CALLS", "1") != "0"
)


class In:
    """An input array of a native call: checked per call (dtype, shape, C order)."""

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype: Any, shape: Sequence[int]) -> None:
        self.dtype = np.dtype(dtype)
        self.shape = tuple(int(s) for s in shape)


class Out(In):
    """An output array of a native call: allocated per call and returned."""

    __slots__ = ()


def native_kernel(
    kernel: Any, arguments: Sequence[Any], fallback: Callable[..., Any] | None = None
) -> Callable[..., Any] | None:
    """``kernel`` as a native call: bound arrays fixed, :class:`In` arrays given per call.

    Args:
        kernel: a Numba dispatcher (``runtime._compile.jit.jit``) whose arguments are all arrays and
            that returns nothing.
        arguments: per kernel argument: a C-contiguous array (bound: kept and passed to
            every call; its contents may change, not its memory), :class:`In` or
            :class:`Out`.
        fallback: called with a call's own arguments when they do not match (else the
            call returns None).

    Returns:
        ``call(*inputs)``: the new output array (one :class:`Out`) or a tuple of them, or
        ``fallback(*inputs)`` / None when an input does not match. None instead of ``call``
        when native calls are unavailable (see the module docstring).
    """
    if not NATIVE_AVAILABLE:
        return None
    examples = []
    plan: list[Any] = []
    for argument in arguments:
        if isinstance(argument, In):
            examples.append(np.zeros(argument.shape, argument.dtype))
            role = "out" if isinstance(argument, Out) else "in"
            plan.append((role, argument.dtype, argument.shape))
        else:
            array = np.asarray(argument)
            if array is not argument or not array.flags.c_contiguous:
                return None  # a bound array must be the caller's own, unchanged object
            examples.append(array)
            plan.append(array)
    try:
        from numba import types

        compiled = compat.compiled_overload(kernel, tuple(examples), compile=True)
        if compiled.signature.return_type != types.none or not all(
            isinstance(t, types.Array) and t.layout == "C" for t in compiled.signature.args
        ):
            return None
        address = compat.native_address(compiled)
        if not address:
            return None
        return _NativeKernel(address, tuple(plan), fallback)
    except Exception:  # noqa: BLE001 - any Numba internals mismatch: use the dispatcher
        return None


def native_chain_call(
    chain: Any, kernel: Any, jacobian_rows: int, fallback: Callable[..., Any] | None = None
) -> Callable[..., Any] | None:
    """A chain kernel ``kernel(model, tip, q, pos, quat[, jac])`` as a native call of ``q``.

    Args:
        chain: a ``KinematicChain`` (its packed ``kernel_arrays`` are bound).
        kernel: the single-configuration FK (``jacobian_rows`` 0) or FK + Jacobian kernel
            (``jacobian_rows`` 6: a (6, n) output after the pose).
        jacobian_rows: 0 or 6.
        fallback: see :func:`native_kernel`.
    """
    model, tip = chain.kernel_arrays
    n = len(chain.joints)
    outputs = [Out(np.float64, (3,)), Out(np.float64, (4,))]
    if jacobian_rows:
        outputs.append(Out(np.float64, (jacobian_rows, n)))
    return native_kernel(kernel, (model, tip, In(np.float64, (n,)), *outputs), fallback)


def no_call(*arrays: Any) -> None:
    """The stand-in where there is no native call: returns None, the caller's own path runs."""
    return None
