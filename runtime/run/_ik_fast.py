"""The IK driver's seeded solve as one native call of the LM kernel.

Every ``ik_every`` steps the run's IK driver solves one target from the previous solution:
``RobotPoser.solve_ik_seeded`` (the target into the chain's start frame, the LM kernel from
one seed, the solution kept as the poser's next seed). Measured inside a Panda run, where
the step loop's compiled blocks have left the caches cold, the Python around that kernel
cost twice the kernel itself (about 47 us of a 29 us kernel call, and 23 us more to
interpolate the target with NumPy). :class:`SeededSolve` does the same solve with the
chain's arrays, the joint mask and the solver parameters bound once
(:func:`runtime._compile.native_call.native_kernel`): the same kernel, the same inputs, so the same
solution bit for bit; anything it does not cover (no native calls, another solver, a
target that is not finite, a chain repacked since) answers None and the caller takes
``solve_ik_seeded``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from runtime._compile.native_call import In, Out, native_kernel

__all__ = ["SeededSolve", "commit_ahead", "lookahead", "slerp"]

# the LM parameters, in the order of runtime.kinematics.ik._params
_LM_PARAMS = ("lam", "iters", "tol", "w_rot", "w_pos", "max_step", "null_space_bias")


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
        from inspect import signature

        from runtime.kinematics import _kernels as K
        from runtime.kinematics.ik import IKSolverLM, _fixed_mask, _params, ik_lm_with_error

        self.poser = poser
        chain = self.chain = poser.chain
        n = len(chain.joints)
        self._bound = (chain.kernel_arrays, chain.kernel_limits)
        self._fixed = _fixed_mask(None, n)
        # what solve_ik_seeded runs: ik_lm_with_error's defaults, its own tolerance
        defaults = signature(ik_lm_with_error).parameters
        self._params = _params(*(defaults[name].default for name in _LM_PARAMS))
        seeded = signature(type(poser).solve_ik_seeded).parameters
        self._tolerance = float(seeded["tolerance"].default)
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
        self, position: Any, orientation: Any, seed: np.ndarray, keep: bool = True
    ) -> tuple[np.ndarray, bool] | None:
        """``(joints, success)`` as ``solve_ik_seeded`` returns them, or None (not covered).

        Args:
            position: target position in the robot-base frame (3 floats).
            orientation: target orientation (wxyz, 4 floats).
            seed: chain-order float64 (n,) seed.
            keep: keep a converged solution as the poser's next seed (``solve_ik_seeded``
                does); False for solves ahead of time.
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
        success = bool(float(error[0]) < self._tolerance)
        if success and keep:
            self.poser._last_solution = q.copy()
        return q, success


def lookahead(
    driver: Any, item: dict[str, Any], count: int, time: float, phase: int, timestep: float
) -> tuple[list[np.ndarray], list[float]]:
    """The solutions ``driver.update`` will find at the next ``count`` interval starts.

    The driver's solves do not depend on the physics: each one is the target at its
    interval's end, seeded with the previous solution. A compiled block that spans several
    intervals gets them solved here, ahead and back to back, from the same seeds for the
    same targets (:func:`commit_ahead` records the ones its steps used). Stops at the
    first solve the native path does not cover or that does not converge: the driver's
    ``update`` solves that one itself, failure handling included.

    Args:
        driver: the run's ``IkDriver``.
        item: the driver's item (its current interval solved: ``q_to`` set).
        count: solutions wanted.
        time: the simulation time now, before the step at ``phase``.
        phase: the next step's place in its interval (0 .. every - 1).
        timestep: the engine's step, added to the time once per step (as MuJoCo does).

    Returns:
        ``(solutions, times)``: chain-order solutions, and the simulation time each of
        their intervals starts at (the time the driver's ``update`` is given there).
    """
    solutions: list[np.ndarray] = []
    times: list[float] = []
    fast, q, dt = item["fast"], item["q_to"], driver._dt
    if fast is None or q is None or dt is None or not item["seeded"]:
        return solutions, times
    schedule, start = item["schedule"], item["start_orientation"]
    steps = driver.every - phase
    for _ in range(count):
        for _ in range(steps):
            time = time + timestep
        steps = driver.every
        position, orientation = schedule.target_values(time + driver.every * dt, start)
        answer = fast.solve(position, orientation, q, keep=False)
        if answer is None or not answer[1]:
            break
        q = answer[0]
        solutions.append(q)
        times.append(time)
    return solutions, times


def commit_ahead(driver: Any, item: dict[str, Any], solutions: list[np.ndarray], used: int) -> None:
    """The driver's state once a block's steps used ``used`` of :func:`lookahead`'s."""
    if used <= 0:
        return
    item["q_from"] = item["q_to"] if used == 1 else solutions[used - 2]
    item["q_to"] = solutions[used - 1]
    item["failing"] = False
    item["poser"]._last_solution = item["q_to"].copy()
    driver.solves += used
