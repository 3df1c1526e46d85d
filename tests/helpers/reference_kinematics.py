"""Independent references for the kinematics tests.

* Pinocchio (C++) models loaded from the original URDFs of example-robot-data, mapped to our
  chains by joint name — the FK/Jacobian oracle for converted robots.
* Pinocchio models built by hand from values read out of a hand-authored USD stage.
* Plain-NumPy helpers: finite-difference Jacobians, quaternion distance.
"""

from __future__ import annotations

import os
import sysconfig

import numpy as np

ERD = os.path.join(
    sysconfig.get_paths()["purelib"], "cmeel.prefix", "share", "example-robot-data", "robots"
)
ASSETS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "assets", "robots")

# name → (usd file, robot prim, urdf relative to ERD)
ROBOTS = {
    "panda": ("panda/panda.usda", "/panda", "panda_description/urdf/panda.urdf"),
    "ur5": ("ur5/ur5.usda", "/ur5", "ur_description/urdf/ur5_robot.urdf"),
    "solo12": ("solo12/solo.usda", "/solo", "solo_description/robots/solo12.urdf"),
}


def erd_root() -> str:
    """Directory of example-robot-data's robots in the installed package."""
    return ERD


def pin_model(name: str):
    """(pinocchio model, data) from the original URDF."""
    import pinocchio as pin

    model = pin.buildModelFromUrdf(os.path.join(erd_root(), ROBOTS[name][2]))
    return model, model.createData()


def pin_q(model, joint_names: list[str], values: np.ndarray) -> np.ndarray:
    """Pinocchio configuration with ``values`` placed at the named joints (others neutral)."""
    import pinocchio as pin

    q = pin.neutral(model)
    for name, v in zip(joint_names, values, strict=True):
        q[model.idx_qs[model.getJointId(name)]] = v
    return q


def pin_frame_pose(model, data, q: np.ndarray, frame: str):
    """World SE3 of a frame after forward kinematics."""
    import pinocchio as pin

    pin.framesForwardKinematics(model, data, q)
    return data.oMf[model.getFrameId(frame)]


def pin_relative_jacobian(
    model, data, q: np.ndarray, base: str, frame: str, joint_names: list[str]
) -> np.ndarray:
    """Point Jacobian (rows [ω; v]) of ``frame`` expressed in ``base`` axes (fixed base), for
    the listed joints (columns in that order)."""
    import pinocchio as pin

    pin.computeJointJacobians(model, data, q)
    pin.framesForwardKinematics(model, data, q)
    fid = model.getFrameId(frame)
    jw = pin.getFrameJacobian(model, data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    r_base = data.oMf[model.getFrameId(base)].rotation
    cols = [model.idx_vs[model.getJointId(n)] for n in joint_names]
    j = jw[:, cols]
    out = np.empty((6, len(cols)))
    out[:3] = r_base.T @ j[3:]
    out[3:] = r_base.T @ j[:3]
    return out


def quat_angle(q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """Rotation angle between wxyz quaternions (any leading shape), in [0, π]."""
    a = np.asarray(q1, dtype=np.float64)
    b = np.asarray(q2, dtype=np.float64)
    w = np.sum(a * b, axis=-1)  # real part of conj(a) ⊗ b
    v = (
        a[..., :1] * b[..., 1:] - b[..., :1] * a[..., 1:] - np.cross(a[..., 1:], b[..., 1:])
    )  # vector part of conj(a) ⊗ b
    return 2.0 * np.arctan2(np.linalg.norm(v, axis=-1), np.abs(w))


def wxyz_from_matrix(r: np.ndarray) -> np.ndarray:
    """wxyz quaternion of a rotation matrix (via Pinocchio's Quaternion)."""
    import pinocchio as pin

    q = pin.Quaternion(np.asarray(r))
    return np.array([q.w, q.x, q.y, q.z])


def fd_point_jacobian(fk, q: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central finite-difference point Jacobian of ``fk(q) -> (pos (3,), quat wxyz (4,))``.

    Angular rows from ``2 vec(q(q+ε) ⊗ q(q-ε)*) / (2ε)``.
    """
    n = q.shape[0]
    out = np.empty((6, n))
    for i in range(n):
        dq = np.zeros(n)
        dq[i] = eps
        p1, r1 = fk(q + dq)
        p0, r0 = fk(q - dq)
        w0, x0, y0, z0 = r0
        c = np.array([w0, -x0, -y0, -z0])
        w1, x1, y1, z1 = r1
        qe = np.array(
            [
                w1 * c[0] - x1 * c[1] - y1 * c[2] - z1 * c[3],
                w1 * c[1] + x1 * c[0] + y1 * c[3] - z1 * c[2],
                w1 * c[2] - x1 * c[3] + y1 * c[0] + z1 * c[1],
                w1 * c[3] + x1 * c[2] - y1 * c[1] + z1 * c[0],
            ]
        )
        if qe[0] < 0:
            qe = -qe
        out[:3, i] = 2.0 * qe[1:] / (2 * eps)
        out[3:, i] = (p1 - p0) / (2 * eps)
    return out
