"""Exception types shared by every layer (no ``pxr`` import here)."""

from __future__ import annotations

__all__ = ["EngineDivergenceError", "RegistrationError", "SchemaError", "SimrtError"]


class SimrtError(Exception):
    """Base class of every error raised by simrt."""


class SchemaError(SimrtError, ValueError):
    """Invalid USD content.

    The message names the prim path, the attribute, the bad value and what is allowed.

    Attributes:
        prim_path: path of the offending prim, as a string ("" when not prim-specific).
        attribute: name of the offending attribute or relationship ("" when none).
    """

    def __init__(
        self,
        prim_path: str,
        attribute: str,
        problem: str,
        allowed: str | None = None,
    ) -> None:
        self.prim_path = str(prim_path)
        self.attribute = attribute
        self.problem = problem
        self.allowed = allowed
        where = self.prim_path + (f".{attribute}" if attribute else "")
        message = f"{where}: {problem}"
        if allowed:
            message += f" (allowed: {allowed})"
        super().__init__(message)


class RegistrationError(SimrtError, RuntimeError):
    """The Isaac schemas could not be registered with USD in this process."""


class EngineDivergenceError(SimrtError, RuntimeError):
    """The physics engine became unstable; the state after this step is meaningless.

    Raised by :meth:`runtime.engine.MujocoEngine.step` when MuJoCo reports an instability
    (non-finite or huge positions, velocities, accelerations or controls, which make it
    reset its state, or a near-singular inertia matrix). A run loop should stop, keep what
    it recorded up to the previous step and mark it incomplete with ``str(error)``.

    Attributes:
        step: number of the step that failed (1 = the first step after a reset).
        time: simulation time at the end of that step [s].
        reason: what MuJoCo reported, e.g. ``"mjWARN_BADQACC: ..."``.
        dofs: reported DOF names (or joint paths) involved, worst first.
        bodies: USD paths of the bodies involved, worst first.
    """

    def __init__(
        self,
        step: int,
        time: float,
        reason: str,
        dofs: tuple[str, ...] = (),
        bodies: tuple[str, ...] = (),
    ) -> None:
        self.step = int(step)
        self.time = float(time)
        self.reason = reason
        self.dofs = tuple(dofs)
        self.bodies = tuple(bodies)
        message = f"simulation diverged at step {self.step} (t = {self.time:.6g} s): {reason}"
        if self.dofs:
            message += f"; DOFs: {', '.join(self.dofs)}"
        if self.bodies:
            message += f"; bodies: {', '.join(self.bodies)}"
        super().__init__(message)
