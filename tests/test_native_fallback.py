"""Single kinematics calls in a build with or without the C module (runtime._compile._native).

Without a C compiler the package builds without ``runtime._compile._native`` and every kernel is
called through Numba's dispatcher (the fallback). CI's second job installs the package that
way (``CC=/bin/false``): there these tests check that the fallback is what runs and that it
gives Pinocchio's poses; in a build with the module, that the native call is what runs,
with the same results.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
from pxr import Usd

import runtime._compile.native_call as NC
from runtime._compile.jit import JIT_DISABLED
from runtime.kinematics import _kernels as K
from runtime.kinematics.chain import KinematicChain
from tests.helpers import reference_kinematics as ref

pin = pytest.importorskip("pinocchio")

BUILT = importlib.util.find_spec("runtime._compile._native") is not None


def _panda():
    usd, robot_path, _ = ref.ROBOTS["panda"]
    stage = Usd.Stage.Open(os.path.join(ref.ASSETS, usd))
    robot = stage.GetPrimAtPath(robot_path)

    def named(n):
        return next(p for p in Usd.PrimRange(robot) if p.GetName() == n)

    return KinematicChain(stage, robot, named("panda_link0"), named("panda_hand"))


def test_native_calls_exactly_when_the_module_was_built():
    switched_off = os.environ.get("SIMRT_NATIVE_CALLS", "1") == "0"
    assert NC.NATIVE_AVAILABLE == (BUILT and not JIT_DISABLED and not switched_off)
    if not NC.NATIVE_AVAILABLE:
        chain = _panda()
        model, tip = chain.kernel_arrays
        q = NC.In(np.float64, (len(chain.joints),))
        out = (NC.Out(np.float64, (3,)), NC.Out(np.float64, (4,)))
        assert NC.native_kernel(K.chain_fk_kernel, (model, tip, q, *out)) is None


def test_fk_gives_pinocchios_poses_through_whichever_call_runs():
    chain = _panda()
    names = [p.rsplit("/", 1)[-1] for p in chain.joint_paths]
    model, data = ref.pin_model("panda")
    rng = np.random.default_rng(4)
    qs = rng.uniform(chain.lower, chain.upper, size=(30, len(chain.joints)))
    chain.fk(qs[0])
    native = type(chain.fk).__name__ == "NativeKernel"
    assert native == NC.NATIVE_AVAILABLE
    for q in qs:
        pos, quat = chain.fk(q)
        p_d, q_d = chain._fk_dispatch(q)  # the dispatcher path
        assert np.array_equal(pos, p_d) and np.array_equal(quat, q_d)
        pq = ref.pin_q(model, names, q)
        rel = ref.pin_frame_pose(model, data, pq, "panda_link0").inverse() * ref.pin_frame_pose(
            model, data, pq, "panda_hand"
        )
        assert np.abs(pos - rel.translation).max() < 1e-6
        assert ref.quat_angle(quat, ref.wxyz_from_matrix(rel.rotation)) < 1e-6
