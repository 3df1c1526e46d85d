"""Single kinematics calls through the kernels' native entry (runtime._compile.native_call).

The native call runs the dispatcher's own machine code: its results must equal the
dispatcher path bit for bit, agree with Pinocchio, and anything the native call does not
take (lists, float32, other shapes, strided or byte-swapped arrays) must give what the
dispatcher path gives, errors included.
"""

from __future__ import annotations

import gc
import os
import weakref

import numpy as np
import pytest
from pxr import Usd

import runtime._compile.native_call as NC
from runtime.kinematics import _kernels as K
from runtime.kinematics.chain import KinematicChain
from tests.helpers import reference_kinematics as ref

pin = pytest.importorskip("pinocchio")

pytestmark = pytest.mark.skipif(
    not NC.NATIVE_AVAILABLE, reason="runtime._compile._native not built (no C compiler) or JIT off"
)


def _chain(name="panda", start="panda_link0", end="panda_hand"):
    usd, robot_path, _ = ref.ROBOTS[name]
    stage = Usd.Stage.Open(os.path.join(ref.ASSETS, usd))
    robot = stage.GetPrimAtPath(robot_path)

    def named(n):
        return next(p for p in Usd.PrimRange(robot) if p.GetName() == n)

    return KinematicChain(stage, robot, named(start), named(end))


@pytest.fixture(scope="module")
def panda():
    return _chain()


def _configs(chain, count, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(chain.lower, chain.upper, size=(count, len(chain.joints)))


def test_fk_is_native_after_the_first_call_and_matches_pinocchio(panda):
    chain = _chain()
    names = [p.rsplit("/", 1)[-1] for p in chain.joint_paths]
    model, data = ref.pin_model("panda")
    qs = _configs(chain, 50)
    chain.fk(qs[0])
    assert type(chain.fk).__name__ == "NativeKernel"
    for q in qs:
        pos, quat = chain.fk(q)
        assert (pos.shape, quat.shape, pos.dtype) == ((3,), (4,), np.float64)
        p_d, q_d = chain._fk_dispatch(q)  # the dispatcher path: same machine code
        assert np.array_equal(pos, p_d) and np.array_equal(quat, q_d)
        pq = ref.pin_q(model, names, q)
        rel = ref.pin_frame_pose(model, data, pq, "panda_link0").inverse() * ref.pin_frame_pose(
            model, data, pq, "panda_hand"
        )
        assert np.abs(pos - rel.translation).max() < 1e-6
        assert ref.quat_angle(quat, ref.wxyz_from_matrix(rel.rotation)) < 1e-6


def test_fk_outputs_are_fresh_arrays(panda):
    q = _configs(panda, 1)[0]
    a = panda.fk(q)
    b = panda.fk(q)
    assert a[0] is not b[0] and not np.shares_memory(a[0], b[0])
    a[0][:] = 0.0  # the caller owns them
    assert np.array_equal(panda.fk(q)[0], b[0])


@pytest.mark.parametrize(
    "convert",
    [
        lambda q: list(q),
        lambda q: q.astype(np.float32),
        lambda q: np.concatenate([q, [9.0]]),  # longer: truncated, as the reference's zip
        lambda q: np.repeat(q, 2)[::2],  # strided view
        lambda q: q.astype(">f8"),  # byte-swapped
        lambda q: q.reshape(1, -1)[0],
    ],
    ids=["list", "float32", "longer", "strided", "big-endian", "view"],
)
def test_inputs_the_native_call_does_not_take_give_the_dispatcher_result(panda, convert):
    q = _configs(panda, 1, seed=3)[0]
    panda.fk(q)
    expected = panda._fk_dispatch(np.asarray(convert(q), dtype=np.float64)[: len(q)])
    got = panda.fk(convert(q))
    assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
    T, J = panda.compute_fk_and_jacobian(convert(q), jacobian="point")
    T0, J0 = panda.compute_fk_and_jacobian(np.ascontiguousarray(q), jacobian="point")
    assert np.allclose(T.t, T0.t, atol=1e-6) and np.allclose(J, J0, atol=1e-5)


def test_bad_inputs_raise_as_before(panda):
    panda.fk(np.zeros(7))
    with pytest.raises(ValueError, match="expected 7 joint values"):
        panda.fk(np.zeros(6))
    with pytest.raises(ValueError, match="expected 7 joint values"):
        panda.compute_fk_and_jacobian(np.zeros((2, 7)))
    with pytest.raises(TypeError):
        panda.fk(np.zeros(7), extra=1)


def test_fk_and_jacobian_native_equals_the_kernel(panda):
    n = len(panda.joints)
    model, tip = panda.kernel_arrays
    for q in _configs(panda, 20, seed=7):
        T, J = panda.compute_fk_and_jacobian(q, jacobian="point")
        pos, quat, jac = np.empty(3), np.empty(4), np.empty((6, n))
        K.chain_fk_jacobian_kernel(model, tip, q, pos, quat, jac)
        assert np.array_equal(T.t, pos) and np.array_equal(T.q, quat)
        assert np.array_equal(J, jac)
        Ts, Js = panda.compute_fk_and_jacobian(q)  # spatial: from the same point Jacobian
        assert np.array_equal(Js[:3], jac[:3])
        assert np.allclose(Js[3:], jac[3:] - np.cross(jac[:3].T, pos).T, atol=0)


def test_fk_and_jacobian_is_native_and_matches_pinocchio():
    """The raw-array FK + Jacobian: native after its first call, the kernel's numbers, and
    Pinocchio's LOCAL_WORLD_ALIGNED frame Jacobian (the point Jacobian) in the chain's frame."""
    for name, start, end in (
        ("panda", "panda_link0", "panda_hand"),
        ("ur5", "base_link", "ee_link"),
    ):
        chain = _chain(name, start, end)
        names = [p.rsplit("/", 1)[-1] for p in chain.joint_paths]
        model, data = ref.pin_model(name)
        start_id, end_id = model.getFrameId(start), model.getFrameId(end)
        qs = _configs(chain, 20, seed=5)
        chain.fk_and_jacobian(qs[0])
        assert type(chain.fk_and_jacobian).__name__ == "NativeKernel"
        for q in qs:
            pos, quat, jac = chain.fk_and_jacobian(q)
            T, J = chain.compute_fk_and_jacobian(q, jacobian="point")
            assert np.array_equal(pos, T.t) and np.array_equal(quat, T.q)
            assert np.array_equal(jac, J)
            pq = ref.pin_q(model, names, q)
            lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
            world_j = pin.computeFrameJacobian(model, data, pq, end_id, lwa)
            pin.framesForwardKinematics(model, data, pq)
            base = data.oMf[start_id]
            rel = base.inverse() * data.oMf[end_id]
            assert np.abs(pos - rel.translation).max() < 1e-6
            columns = [model.joints[model.getJointId(n)].idx_v for n in names]
            rot = base.rotation.T  # world -> the chain's start frame; [v; ω] -> [ω; v]
            expected = np.vstack([rot @ world_j[3:, columns], rot @ world_j[:3, columns]])
            assert np.abs(jac - expected).max() < 1e-5
        with pytest.raises(ValueError, match="joint values"):
            chain.fk_and_jacobian(np.zeros(2))
        got = chain.fk_and_jacobian(list(qs[1]))  # (the dispatcher path: the same numbers)
        assert np.array_equal(got[2], chain.fk_and_jacobian(qs[1])[2])


def test_every_robot_chain_native_equals_batched():
    for name, start, end in (("ur5", "base_link", "ee_link"), ("solo12", "FL_FOOT", "HR_FOOT")):
        chain = _chain(name, start, end)
        qs = _configs(chain, 10, seed=2)
        pos, quat = chain.fk_batch(qs)
        for b in range(len(qs)):
            p, q = chain.fk(qs[b])
            assert np.allclose(p, pos[b], atol=1e-14) and np.allclose(q, quat[b], atol=1e-14)
        assert type(chain.fk).__name__ == "NativeKernel"


def test_a_chain_with_a_native_call_is_collected():
    chain = _chain()
    chain.fk(np.zeros(7))
    assert type(chain.fk).__name__ == "NativeKernel"  # chain -> call -> fallback -> chain
    ref_ = weakref.ref(chain)
    del chain
    gc.collect()
    assert ref_() is None


def test_bound_arrays_stay_alive_with_the_call():
    model, tip = _chain().kernel_arrays
    model, tip = model.copy(), tip.copy()
    expected = np.empty(3), np.empty(4)
    q = np.full(model.shape[0], 0.3)
    K.chain_fk_kernel(model, tip, q, *expected)
    call = NC.native_kernel(
        K.chain_fk_kernel,
        (model, tip, NC.In(np.float64, q.shape), NC.Out(np.float64, (3,)), NC.Out("f8", (4,))),
    )
    del model, tip
    gc.collect()
    for _ in range(3):
        pos, quat = call(q)
        assert np.array_equal(pos, expected[0]) and np.array_equal(quat, expected[1])
    assert call(q.astype(np.float32)) is None  # no fallback: None
    with pytest.raises(TypeError):
        call(q, q)


def test_kernels_the_native_call_does_not_take():
    model, tip = _chain().kernel_arrays
    n = model.shape[0]
    q = NC.In(np.float64, (n,))
    assert NC.native_kernel(K.chain_fk_kernel, (model[:, :8], tip, q, q, q)) is None  # strided
    # a kernel with a scalar argument
    assert NC.native_kernel(K.chain_fk_batch_kernel, (model, tip, np.float64(1.0), q, q)) is None


def test_switched_off(monkeypatch):
    monkeypatch.setattr(NC, "NATIVE_AVAILABLE", False)
    chain = _chain()
    q = _configs(chain, 1)[0]
    pos, quat = chain.fk(q)
    assert "fk" not in chain.__dict__
    T, J = chain.compute_fk_and_jacobian(q, jacobian="point")
    assert np.array_equal(T.t, pos) and np.array_equal(T.q, quat) and J.shape == (6, 7)
