"""USD write-back of the surface-gripper runtime (off by default).

See docs/sensors/surface-gripper.md#write-back.

Edits go to an anonymous layer appended to the session layer's sublayers (created on first
use), so nothing reaches the asset; :meth:`UsdWriteBack.clear` removes the layer (the
reference clears it on stop). Written while enabled: ``isaac:status`` on every change
(including ``Closing``, §5.3 [REC]), ``isaac:grippedObjects`` and ``physics:filteredPairs``
on the first attachment joint's ``body0`` when the gripped set changes (empty set: the
opinions are removed), and grown ``isaac:clearanceOffset`` values. Independent of the
switch, a gripper lacking an ``isaac:grippedObjects`` relationship gets one at start in the
stage's current edit target, as in the reference.
"""

from __future__ import annotations

from typing import Any

from pxr import Sdf, Usd, UsdPhysics

__all__ = ["UsdWriteBack"]


class UsdWriteBack:
    """Runtime opinions of the surface grippers of one stage.

    Args:
        stage: the stage the grippers live on.

    Attributes:
        enabled: write while True.
    """

    def __init__(self, stage: Usd.Stage) -> None:
        self.stage = stage
        self.enabled = False
        self._layer: Sdf.Layer | None = None
        self._status: dict[str, str] = {}
        self._gripped: dict[str, tuple[str, ...]] = {}
        self._clearance: dict[str, float] = {}

    @property
    def layer(self) -> Sdf.Layer | None:
        """The runtime's anonymous layer (None before the first write)."""
        return self._layer

    def _edit(self) -> Usd.EditContext:
        if self._layer is None:
            self._layer = Sdf.Layer.CreateAnonymous("anon_gripper_ops")
            self.stage.GetSessionLayer().subLayerPaths.append(self._layer.identifier)
        return Usd.EditContext(self.stage, Usd.EditTarget(self._layer))

    @staticmethod
    def ensure_gripped_relationship(prim: Usd.Prim) -> None:
        """Create ``isaac:grippedObjects`` (non-custom) when the gripper lacks it."""
        if not prim.GetRelationship("isaac:grippedObjects"):
            prim.CreateRelationship("isaac:grippedObjects", False)

    def note_clearance(self, joint: str, value: float) -> None:
        """Remember a grown clearance offset to persist at the next write."""
        self._clearance[joint] = float(value)

    def write(self, gripper: str, status: str, gripped: list[str], points: list[Any]) -> None:
        """Write what changed for one gripper since the last write."""
        prim = self.stage.GetPrimAtPath(gripper)
        targets = tuple(gripped)
        with self._edit():
            if self._status.get(gripper, "") != status:
                attr = prim.GetAttribute("isaac:status") or prim.CreateAttribute(
                    "isaac:status", Sdf.ValueTypeNames.Token, False, Sdf.VariabilityUniform
                )
                attr.Set(status)
                self._status[gripper] = status
            if self._gripped.get(gripper, ()) != targets:
                self._set_targets(prim, "isaac:grippedObjects", targets)
                if points:
                    body0 = self.stage.GetPrimAtPath(points[0].body0_path)
                    if body0 and targets and not body0.HasAPI(UsdPhysics.FilteredPairsAPI):
                        UsdPhysics.FilteredPairsAPI.Apply(body0)
                    if body0:
                        self._set_targets(body0, "physics:filteredPairs", targets)
                self._gripped[gripper] = targets
            for point in points:
                value = self._clearance.pop(point.joint, None)
                if value is None:
                    continue
                joint = self.stage.GetPrimAtPath(point.joint)
                attr = joint.GetAttribute("isaac:clearanceOffset") or joint.CreateAttribute(
                    "isaac:clearanceOffset", Sdf.ValueTypeNames.Float
                )
                attr.Set(value)

    def _set_targets(self, prim: Usd.Prim, name: str, targets: tuple[str, ...]) -> None:
        assert self._layer is not None
        if targets:
            rel = prim.GetRelationship(name) or prim.CreateRelationship(name, False)
            rel.SetTargets([Sdf.Path(t) for t in targets])
            return
        spec = self._layer.GetPrimAtPath(prim.GetPath())
        if spec is not None and name in spec.relationships:
            spec.RemoveProperty(spec.relationships[name])

    def clear(self) -> None:
        """Remove the runtime layer and its opinions."""
        if self._layer is not None:
            subs = self.stage.GetSessionLayer().subLayerPaths
            if self._layer.identifier in subs:
                subs.remove(self._layer.identifier)
            self._layer = None
        self._status.clear()
        self._gripped.clear()
        self._clearance.clear()
