"""One compiled call steps many worlds: actions, ``decimation`` physics steps, sensors, rows.

:func:`vector_step_kernel` runs, for each world of a slice, what a compiled step block
(:mod:`runtime.run.blocks`) runs for one run: the actions written into MuJoCo's controls
(or applied generalized forces), then per physics step ``mj_step`` through libmujoco's C
entry point (:func:`runtime.run._forward_kernels.step_reusing`: after a post-step forward,
the step reuses it), its error and warning checks, MuJoCo's position / velocity kinematics (and
``mj_rnePostConstraint`` when accelerations are recorded) and the fused step's body
(:func:`runtime.run._fused_kernels._step_body`: the state kernel, every sensor batch's
kernel and, after the last of the ``decimation`` steps, the world's observation row). Each
world keeps its own fused step (array table, write operations, step integers); the kernel
reaches them through their addresses in one int64 row per world (``W_*``), so a world whose
arrays were replaced is re-bound by rewriting its row.

It is compiled without the GIL (every simrt kernel is): threads call it together and claim
slices of the worlds from one atomic counter. A world whose step the Python side must
finish (a MuJoCo warning or error, contact arrays that must grow, a ray hit outside its
table) stops with a status (``ST_*`` of :mod:`runtime.run._fused_kernels`); the others go
on.
"""

from __future__ import annotations

from runtime._compile.jit import JIT_DISABLED, jit
from runtime.run._forward_kernels import forward_and_arm, step_reusing
from runtime.run._fused_kernels import (
    OK,
    S_CONTACTS,
    S_ROW,
    S_STEP,
    SI_SIZE,
    ST_BAD_ACTOR,
    ST_DONE,
    ST_MJ_ERROR,
    ST_PYTHON,
    ST_WARNED,
    _step_body,
)
from runtime.run._native_kernels import (
    _call_c,
    _f64p,
    _i32p,
    _i64p,
    raw_array,
    store_fence,
)
from runtime.run._row_kernels import OP_WIDTH, T_TARGETS

__all__ = ["vector_step_kernel"]

if not JIT_DISABLED:
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def fetch_add(typingctx, address, value):
        """Atomically add ``value`` to the int64 at ``address``; the value it held before.

        Threads stepping one set of worlds claim slices of it with this, so a thread that
        the machine slows down takes fewer slices instead of holding the others up.
        """
        if not isinstance(address, types.Integer) or not isinstance(value, types.Integer):
            return None

        def codegen(context, builder, sig, args):
            i64 = ir.IntType(64)
            pointer = builder.inttoptr(
                context.cast(builder, args[0], sig.args[0], types.int64), i64.as_pointer()
            )
            amount = context.cast(builder, args[1], sig.args[1], types.int64)
            return builder.atomic_rmw("add", pointer, amount, "monotonic")

        return types.int64(address, value), codegen
else:  # (no compiled path without the JIT: runtime.run.worlds checks)
    fetch_add = None

# ---- one world's row (int64): its fused step's arrays and MuJoCo data, then outputs
W_TABLE, W_ROWS, W_OPS, W_OPS_ROWS, W_SI, W_SF, W_DATA, W_CTRL = range(8)
W_FORCE, W_WARN_CLEAN, W_CAP_CON, W_CAP_EFC, W_CAP_VEC, W_SCALAR_DOFS = range(8, 14)
W_ACC, W_STATUS, W_DONE, W_STEP_OUT, W_ACTIVE, W_WARN, W_MODEL = range(14, 21)
W_REUSE = 21  # its engine's forward-reuse block (runtime.run._forward_kernels), or 0
W_SIZE = 22

# ---- shared (int64): the model, MuJoCo's functions, mjData offsets, the step's shape
V_FN = 1  # 5 functions (mj_step, kinematics, comPos, comVel, rnePost)
V_ERROR, V_OFF_NCON, V_OFF_NEFC, V_OFF_TIME, V_OFF_EFC_FORCE = range(6, 11)
V_OFF_EFC_TYPE, V_OFF_EFC_ID, V_WARN_COUNT, V_DECIMATION, V_MODE = range(11, 16)
V_FORWARD = 16  # mj_forward's address: called after the last step (0: not called)
V_SIZE = 17
# how actions reach MuJoCo
MODE_CTRL, MODE_FORCE = 0, 1


@jit(nrt=False)
def vector_step_kernel(
    worlds, steps, times, shared, actions, act_index, dof_index, lower, upper, claim, chunk
):
    """Step worlds, ``chunk`` at a time, claimed from ``claim``: actions, physics, sensors.

    Trusts its inputs (:class:`runtime.run.worlds.Worlds` builds them and checks the
    actions before the call).

    Args:
        worlds: int64 (N, W_SIZE): per world, its fused step's table / ops / step-integer /
            step-float addresses, its ``mjData`` and model addresses, its control and
            applied-force arrays' addresses, its warning counters' and their snapshot's
            addresses, its capacities, its engine's forward-reuse block (``W_REUSE``: the
            steps go through ``step_reusing``, the post-step forward arms it; 0: plain
            ``mj_step`` and ``mj_forward``); ``W_STATUS``, ``W_DONE`` and ``W_STEP_OUT``
            written (how its step ended, physics steps taken, its step counter).
            Worlds with ``W_ACTIVE`` 0 are skipped.
        steps: int64 (N,): each stepped world's step counter, written.
        times: float64 (N,): each stepped world's simulation time [s], written.
        shared: int64 ``V_*``: MuJoCo's five functions, the error flag's
            address, the ``mjData`` byte offsets, the warning counters' count, the
            decimation, the action mode (``MODE_*``) and ``mj_forward``'s address (0: not
            called; else after each world's last step).
        actions: float64 (N, A): per world, the drive targets (``MODE_CTRL``: written to
            ``ctrl[act_index]`` and to the recorded targets ``[dof_index]``) or the
            generalized forces (``MODE_FORCE``: ``qfrc_applied[act_index]``).
        act_index: int64 (A,): control (or velocity-DOF) index of each action column.
        dof_index: int64 (A,): DOF-table index of each action column (``MODE_CTRL``: the
            recorded target), or -1.
        lower: float64 (A,): each column's lower bound (``MODE_CTRL``: the DOF limit;
            actions are clipped to ``[lower, upper]``).
        upper: float64 (A,): each column's upper bound.
        claim: int64 (1,): the next unclaimed world; every thread stepping these worlds
            calls the kernel with the same array (0 before the calls) and takes ``chunk``
            worlds at a time from it, atomically, until none is left.
        chunk: worlds per claim (>= 1).

    Returns:
        The number of worlds this call stepped whose step ended otherwise than ``ST_DONE``.
    """
    n = worlds.shape[0]
    unfinished = 0
    counter = claim.ctypes.data
    while True:
        lo = fetch_add(counter, chunk)
        if lo >= n:
            break
        unfinished += _step_worlds(
            worlds, steps, times, shared, actions, act_index, dof_index, lower, upper,
            lo, min(lo + chunk, n),
        )  # fmt: skip
    store_fence()
    return unfinished


@jit(nrt=False)
def _step_worlds(
    worlds, steps, times, shared, actions, act_index, dof_index, lower, upper, lo, hi
):  # pragma: no cover
    """Worlds ``lo .. hi - 1`` of :func:`vector_step_kernel`; those not ``ST_DONE``."""
    decimation = shared[V_DECIMATION]
    mode = shared[V_MODE]
    count = shared[V_WARN_COUNT]
    na = act_index.shape[0]
    unfinished = 0
    for e in range(lo, hi):
        w = worlds[e]
        if w[W_ACTIVE] == 0:
            continue
        t = raw_array(_i64p(w[W_TABLE]), (w[W_ROWS], 4))
        ops = raw_array(_i64p(w[W_OPS]), (w[W_OPS_ROWS], OP_WIDTH))
        si = raw_array(_i64p(w[W_SI]), (SI_SIZE,))
        sf = raw_array(_f64p(w[W_SF]), (2,))
        data = w[W_DATA]
        model = w[W_MODEL]
        if mode == MODE_CTRL:
            ctrl = _f64p(w[W_CTRL])
            targets = _f64p(t[T_TARGETS, 0])
            for j in range(na):
                value = min(max(actions[e, j], lower[j]), upper[j])
                ctrl[act_index[j]] = value
                if dof_index[j] >= 0:
                    targets[dof_index[j]] = value
        else:
            force = _f64p(w[W_FORCE])
            for j in range(na):
                force[act_index[j]] = actions[e, j]
        clean = _i64p(w[W_WARN_CLEAN])
        warnings = w[W_WARN]
        status = ST_DONE
        done = 0
        acc = w[W_ACC] != 0
        no_ops = ops[:0]  # (the steps before the last: sensors without the row writes)
        reuse = w[W_REUSE]
        for k in range(decimation):
            if reuse != 0:  # (mj_step, or what it runs after a forward that still holds)
                step_reusing(reuse, model, data)
            else:
                _call_c(shared[V_FN + 0], model, data)  # mj_step
            done += 1
            si[S_STEP] += 1
            if _i64p(shared[V_ERROR])[0]:
                status = ST_MJ_ERROR
                break
            changed = False
            for c in range(count):
                if _i32p(warnings + 8 * c)[0] != clean[c]:
                    changed = True
            if changed:
                status = ST_WARNED
                break
            _call_c(shared[V_FN + 1], model, data)  # mj_kinematics
            _call_c(shared[V_FN + 2], model, data)  # mj_comPos
            _call_c(shared[V_FN + 3], model, data)  # mj_comVel
            if acc:
                _call_c(shared[V_FN + 4], model, data)  # mj_rnePostConstraint
            nc = _i32p(data + shared[V_OFF_NCON])[0]
            nefc = _i32p(data + shared[V_OFF_NEFC])[0]
            if nc > w[W_CAP_CON] or nefc > w[W_CAP_EFC] or nc > w[W_CAP_VEC]:
                status = ST_PYTHON  # the engine's views grow first
                break
            if nefc:
                efc_force = raw_array(_f64p(_i64p(data + shared[V_OFF_EFC_FORCE])[0]), (nefc,))
                if w[W_SCALAR_DOFS]:
                    kind = raw_array(_i32p(_i64p(data + shared[V_OFF_EFC_TYPE])[0]), (nefc,))
                    ids = raw_array(_i32p(_i64p(data + shared[V_OFF_EFC_ID])[0]), (nefc,))
                else:
                    kind = raw_array(_i32p(data), (0,))
                    ids = kind
            else:
                efc_force = raw_array(_f64p(data), (0,))
                kind = raw_array(_i32p(data), (0,))
                ids = kind
            time = _f64p(data + shared[V_OFF_TIME])[0]
            si[S_CONTACTS] = nc
            si[S_ROW] = e
            sf[0] = time
            row_ops = ops if k == decimation - 1 else no_ops
            if _step_body(t, row_ops, efc_force, kind, ids, si, sf) != OK:
                status = ST_BAD_ACTOR
                break
        if status == ST_DONE and shared[V_FORWARD] != 0:
            # the whole post-step state (accelerations of the new positions and velocities),
            # for sensors read after the step; the next step reuses it (step_reusing)
            if reuse != 0:
                forward_and_arm(reuse, model, data)
            else:
                _call_c(shared[V_FORWARD], model, data)  # mj_forward
        w[W_STATUS] = status
        w[W_DONE] = done
        w[W_STEP_OUT] = si[S_STEP]
        steps[e] = si[S_STEP]
        times[e] = _f64p(data + shared[V_OFF_TIME])[0]
        if status != ST_DONE:
            unfinished += 1
    return unfinished
