"""Exception types shared by every layer (no ``pxr`` import here)."""

from __future__ import annotations

__all__ = ["SchemaError", "SimrtError", "RegistrationError"]


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
