"""The compiled steps' post-step ``mj_forward`` and the step that reuses it.

What :class:`runtime.engine.forward_reuse.ForwardReuse` does in Python (its docstring holds
the rules: what is compared, when the step falls back to ``mj_step``), for the compiled
step blocks (:mod:`runtime.run.blocks`), the vector step
(:mod:`runtime.run._vector_kernels`) and the lab sensors' part
(:mod:`runtime.run._lab_set_kernels`): :func:`forward_and_arm` runs ``mj_forward`` and
copies the compared inputs into the engine's snapshot; :func:`step_reusing` compares them
(word by word, without early exit) and runs what ``mj_step`` would run after its forward,
or ``mj_step`` itself. Both work on the engine's own flag, table and snapshot, so a state
armed by the Python path is reused by a compiled step and the other way round.

The block (int64 ``R_*``, built by :func:`runtime.run._mujoco_native.reuse_block`) holds
the addresses: the flag, the table (K rows: source address, snapshot offset, bytes, group)
and the snapshot, the model and data it was built for, the ``mjOption`` struct and its
integrator / enable-flag offsets, the warning counters, MuJoCo's functions and the
callback pointers.
"""

from __future__ import annotations

from runtime._compile.jit import JIT_DISABLED, jit
from runtime.run._native_kernels import _call_c, _i32p, _i64p, _u8p, memcpy, raw_array

__all__ = ["forward_and_arm", "step_reusing"]

# ---- the block (int64)
R_FLAG, R_TABLE, R_ROWS, R_SNAPSHOT, R_MODEL, R_DATA, R_ENABLED = range(7)
R_OPT, R_OFF_INTEGRATOR, R_OFF_ENABLE, R_WARN, R_WARN_COUNT = range(7, 12)
R_FN = 12  # 8 functions (FN_*)
FN_STEP, FN_FORWARD, FN_FORWARD_SKIP, FN_CHECK_POS, FN_CHECK_VEL, FN_CHECK_ACC = range(6)
FN_EULER, FN_IMPLICIT = 6, 7
R_CALLBACKS = R_FN + 8  # addresses of the callback pointers (R_CALLBACK_COUNT of them)
R_CALLBACK_COUNT = R_CALLBACKS + 8
R_SIZE = R_CALLBACK_COUNT + 1
ARMED = 1  # (runtime.engine.forward_reuse.ARMED)
GROUP_ACC = 0  # (runtime.engine.forward_reuse.GROUP_ACC)
STAGE_VEL = 2  # mjSTAGE_VEL
INT_EULER, INT_IMPLICIT, INT_IMPLICITFAST = 0, 2, 3
# mjENBL_FWDINV | mjENBL_SLEEP | mjENBL_IPC | mjENBL_SPECULATIVE (checked against MuJoCo's
# enum where the block is built)
ENABLE_OFF = (1 << 2) | (1 << 4) | (1 << 6) | (1 << 7)

if not JIT_DISABLED:
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def _call_skip(typingctx, function, model, data, stage):
        """``mj_forwardSkip(model, data, stage, 0)`` through its address ``function``."""
        if not all(isinstance(a, types.Integer) for a in (function, model, data, stage)):
            return None

        def codegen(context, builder, sig, args):
            from llvmlite import ir

            pointer = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            fnty = ir.FunctionType(ir.VoidType(), [pointer, pointer, i32, i32])
            callee = builder.inttoptr(args[0], fnty.as_pointer())
            builder.call(
                callee,
                [builder.inttoptr(args[1], pointer), builder.inttoptr(args[2], pointer),
                 builder.trunc(args[3], i32), i32(0)],
            )  # fmt: skip
            return context.get_dummy_value()

        return types.none(function, model, data, stage), codegen
else:  # (no compiled path without the JIT)
    _call_skip = None


@jit(nrt=False)
def forward_and_arm(block, model, data):  # pragma: no cover - compiled
    """``mj_forward``, then the compared inputs copied and the flag armed (when enabled).

    Args:
        block: address of the engine's int64 ``R_*`` block.
        model: ``mjModel`` address.
        data: ``mjData`` address.
    """
    r = raw_array(_i64p(block), (R_SIZE,))
    flag = _i64p(r[R_FLAG])
    flag[0] = 0
    _call_c(r[R_FN + FN_FORWARD], model, data)
    if r[R_ENABLED] == 0 or model != r[R_MODEL] or data != r[R_DATA]:
        return
    table = raw_array(_i64p(r[R_TABLE]), (r[R_ROWS], 4))
    snapshot = r[R_SNAPSHOT]
    for k in range(table.shape[0]):
        memcpy(snapshot + table[k, 1], table[k, 0], table[k, 2])
    flag[0] = ARMED


@jit(nrt=False)
def _differences(table, snapshot):  # pragma: no cover - compiled
    """``(acceleration-stage inputs differ, other inputs differ)`` against the snapshot."""
    acc = 0
    other = 0
    for k in range(table.shape[0]):
        source = table[k, 0]
        copy = snapshot + table[k, 1]
        size = table[k, 2]
        words = size >> 3
        a = raw_array(_i64p(source), (words,))
        b = raw_array(_i64p(copy), (words,))
        diff = 0
        for i in range(words):
            diff |= a[i] ^ b[i]
        for i in range(words << 3, size):
            diff |= _u8p(source)[i] ^ _u8p(copy)[i]
        if table[k, 3] == GROUP_ACC:
            acc |= diff
        else:
            other |= diff
    return acc != 0, other != 0


@jit(nrt=False)
def step_reusing(block, model, data):  # pragma: no cover - compiled
    """One physics step: ``mj_step``, reusing the armed forward when nothing unsure changed.

    Args:
        block: address of the engine's int64 ``R_*`` block.
        model: ``mjModel`` address.
        data: ``mjData`` address.
    """
    r = raw_array(_i64p(block), (R_SIZE,))
    flag = _i64p(r[R_FLAG])
    armed = flag[0] == ARMED and r[R_ENABLED] != 0 and model == r[R_MODEL] and data == r[R_DATA]
    flag[0] = 0
    integrate = 0
    if armed:
        opt = r[R_OPT]
        integrator = _i32p(opt + r[R_OFF_INTEGRATOR])[0]
        if integrator == INT_EULER:
            integrate = r[R_FN + FN_EULER]
        elif integrator == INT_IMPLICIT or integrator == INT_IMPLICITFAST:
            integrate = r[R_FN + FN_IMPLICIT]
        if _i32p(opt + r[R_OFF_ENABLE])[0] & ENABLE_OFF:
            integrate = 0
        for c in range(r[R_CALLBACK_COUNT]):
            if _i64p(r[R_CALLBACKS + c])[0] != 0:
                integrate = 0
    acc = False
    if integrate != 0:
        acc, other = _differences(raw_array(_i64p(r[R_TABLE]), (r[R_ROWS], 4)), r[R_SNAPSHOT])
        if other:
            integrate = 0
    if integrate == 0:
        _call_c(r[R_FN + FN_STEP], model, data)
        return
    warnings = r[R_WARN]
    count = r[R_WARN_COUNT]
    before = 0
    for c in range(count):
        before += _i32p(warnings + 8 * c)[0]
    _call_c(r[R_FN + FN_CHECK_POS], model, data)
    _call_c(r[R_FN + FN_CHECK_VEL], model, data)
    after = 0
    for c in range(count):
        after += _i32p(warnings + 8 * c)[0]
    if after != before:  # (bad values: MuJoCo reset the data; mj_step's forward follows)
        _call_c(r[R_FN + FN_FORWARD], model, data)
    elif acc:
        _call_skip(r[R_FN + FN_FORWARD_SKIP], model, data, STAGE_VEL)
    _call_c(r[R_FN + FN_CHECK_ACC], model, data)
    _call_c(integrate, model, data)
