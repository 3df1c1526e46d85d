"""The IK driver's seeded solve as one native call of the LM kernel.

Every ``ik_every`` steps the run's IK driver solves one target from the previous solution:
``RobotPoser.solve_ik_seeded`` (the target into the chain's start frame, the LM kernel from
one seed, the solution kept as the poser's next seed). Measured inside a Panda run, where
the step loop's compiled blocks have left the caches cold, the Python around that kernel
cost twice the kernel itself (about 47 us of a 29 us kernel call, and 23 us more to
interpolate the target with NumPy). :class:`SeededSolve` does the same solve with the
chain's arrays, the joint mask and the solver parameters bound once
(:func:`runtime._native_call.native_kernel`): the same kernel, the same inputs, so the same
solution bit for bit; anything it does not cover (no native calls, another solver, a
target that is not finite, a chain repacked since) answers None and the caller takes
``solve_ik_seeded``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from runtime._native_call import In, Out, native_kernel

__all__ = ["SeededSolve", "slerp"]

TOLERANCE = 1e-4  # RobotPoser.solve_ik_seeded's convergence threshold
# ik_lm_with_error's defaults: lam, iters, tol, w_rot, w_pos, max_step, null_space_bias
_LM_DEFAULTS = (1e-3, 30, 1e-6, 1.0, 1.0, 0.5, 0.05)


def slerp(q0: Any, q1: Any, s: float) -> tuple[float, float, float, float]:
    """Spherical interpolation of unit quaternions (wxyz), Python floats (shortest arc)."""
    w0, x0, y0, z0 = (float(v) for v in q0)
    w1, x1, y1, z1 = (float(v) for v in q1)
    dot = w0 * w1 + x0 * x1 + y0 * y1 + z0 * z1
    if dot < 0.0:
        w1, x1, y1, z1, dot = -w1, -x1, -y1, -z1, -dot
    if dot > 0.9995:  # nearly parallel: normalised linear interpolation
        w, x, y, z = w0 + s * (w1 - w0), x0 + s * (x1 - x0), y0 + s * (y1 - y0), z0 + s * (z1 - z0)
        norm = math.sqrt(w * w + x * x + y * y + z * z)
        return w / norm, x / norm, y / norm, z / norm
    theta = math.acos(min(dot, 1.0))
    sin_theta = math.sin(theta)
    a = math.sin((1 - s) * theta)
    b = math.sin(s * theta)
    return (
        (a * w0 + b * w1) / sin_theta,
        (a * x0 + b * x1) / sin_theta,
        (a * y0 + b * y1) / sin_theta,
        (a * z0 + b * z1) / sin_theta,
    )


class SeededSolve:
    """``poser.solve_ik_seeded(Transform(position, orientation), seed)`` in one native call.

    Args:
        poser: the driver item's ``RobotPoser`` (its chain and joint order are the chain's).
    """

    def __init__(self, poser: Any) -> None:
        from runtime.kinematics import _kernels as K
        from runtime.kinematics.ik import IKSolverLM, _fixed_mask, _params

        self.poser = poser
        chain = self.chain = poser.chain
        n = len(chain.joints)
        self._bound = (chain.kernel_arrays, chain.kernel_limits)
        self._fixed = _fixed_mask(None, n)
        self._params = _params(*_LM_DEFAULTS)
        self._target = np.empty(7)
        self.call = None
        if type(poser._solver) is IKSolverLM:
            self.call = native_kernel(
                K.ik_lm_kernel,
                (
                    *chain.kernel_arrays, chain.kernel_limits, self._fixed,
                    In(np.float64, (n,)), In(np.float64, (7,)), self._params,
                    Out(np.float64, (n,)), Out(np.float64, (1,)),
                ),
            )  # fmt: skip

    def solve(
        self, position: Any, orientation: Any, seed: np.ndarray
    ) -> tuple[np.ndarray, bool] | None:
        """``(joints, success)`` as ``solve_ik_seeded`` returns them, or None (not covered).

        Args:
            position: target position in the robot-base frame (3 floats).
            orientation: target orientation (wxyz, 4 floats).
            seed: chain-order float64 (n,) seed.
        """
        from runtime.kinematics.math import quat_multiply, quat_rotate

        chain = self.chain
        bound = self._bound
        if (
            self.call is None
            or chain.kernel_arrays is not bound[0]
            or chain.kernel_limits is not bound[1]
        ):
            return None
        start = self.poser._start_pose_inv()  # (the poser's cache; a stage edit renews it)
        target = self._target
        target[:3] = start.t + quat_rotate(start.q, position)  # start⁻¹ ∘ target, as Transform @
        target[3:] = quat_multiply(start.q, orientation)
        if not (np.isfinite(target).all() and np.isfinite(seed).all()):
            return None  # the poser's own path raises the error
        answer = self.call(seed, target)
        if answer is None:
            return None
        q, error = answer
        success = bool(float(error[0]) < TOLERANCE)
        if success:
            self.poser._last_solution = q.copy()
        return q, success
