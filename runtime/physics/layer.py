"""Author physics cfgs onto an existing asset in a separate USD layer.

The new layer *sublayers* the asset (asset-structure guideline: physics tuning lives in its
own layer on top of the asset), so opening the layer gives the asset with the overrides, and
the asset's own files are never written. The layer copies the asset's stage metadata
(``upAxis``, ``metersPerUnit``, ...) and ``defaultPrim`` so it can be opened as a stage on its
own. It is saved atomically (temporary file in the same directory, then ``os.replace``),
keeping an existing layer file's mode (``runtime._files.atomic_write``).
"""

from __future__ import annotations

import os
from typing import Any

from pxr import Sdf, Tf, Usd

from runtime._files import atomic_write
from runtime.errors import SchemaError
from runtime.physics._meta import PhysicsCfgError
from runtime.physics.spawn import SLOTS, PhysicsApplyReport, apply_asset_physics
from runtime.schema import open_stage, tf_error_line

__all__ = ["author_physics_layer"]

_STAGE_METADATA = (
    "upAxis",
    "metersPerUnit",
    "kilogramsPerUnit",
    "timeCodesPerSecond",
    "framesPerSecond",
    "startTimeCode",
    "endTimeCode",
)


def _resolve_sublayer(layer_dir: str, entry: str) -> str:
    return os.path.normpath(entry if os.path.isabs(entry) else os.path.join(layer_dir, entry))


def _save_atomically(layer: Sdf.Layer, layer_path: str, sublayer_entry: str) -> None:
    suffix = os.path.splitext(layer_path)[1] or ".usda"
    # Export a copy with the relative sublayer path (the live layer keeps composing with the
    # absolute one; changing it would recompose the open stage against a missing file).
    out = Sdf.Layer.CreateAnonymous(suffix)
    out.TransferContent(layer)
    out.subLayerPaths.clear()
    out.subLayerPaths.append(sublayer_entry)

    def export(tmp: str) -> None:
        if not out.Export(tmp):
            raise OSError(f"could not write {tmp}")

    atomic_write(layer_path, export, suffix=suffix)
    # A layer of that name already open in this process would otherwise keep stale content.
    opened = Sdf.Layer.Find(layer_path)
    if opened is not None:
        opened.Reload(True)


def author_physics_layer(
    asset_path: str | os.PathLike[str],
    layer_path: str | os.PathLike[str],
    *,
    root_path: str | None = None,
    overwrite: bool = False,
    strict: bool = True,
    nested: bool = True,
    physics_material_path: str | None = None,
    **cfgs: Any,
) -> PhysicsApplyReport:
    """Author physics property cfgs onto ``asset_path`` into the layer ``layer_path``.

    Example::

        from runtime.physics import author_physics_layer
        from runtime.physics.newton import (
            MujocoJointDrivePropertiesCfg, MujocoRigidBodyPropertiesCfg)

        author_physics_layer(
            "robot.usda", "robot_physics.usda",
            rigid_props=MujocoRigidBodyPropertiesCfg(gravcomp=1.0),
            joint_drive_props=MujocoJointDrivePropertiesCfg(actuatorgravcomp=True),
        )
        # open "robot_physics.usda" to get the robot with the physics overrides

    If ``layer_path`` exists and already sublayers the asset, the new values are added to it
    (later calls win); with ``overwrite`` it is rebuilt from scratch. An existing layer that does
    not sublayer the asset is refused.

    Args:
        asset_path: the asset's root layer file (never modified).
        layer_path: output layer (``.usda``/``.usdc``/``.usd``).
        root_path: asset root prim (default: the asset's ``defaultPrim``).
        overwrite: rebuild an existing layer instead of adding to it.
        strict: raise when a cfg finds no prim carrying the API it needs.
        nested: also author targets nested below other targets (nested link hierarchies);
            False gives Isaac Lab's outermost-only walk.
        physics_material_path: where a ``physics_material`` cfg is spawned (default
            ``<root>/PhysicsMaterial``).
        **cfgs: slot cfgs: ``rigid_props``, ``collision_props``, ``mass_props``,
            ``articulation_props``, ``joint_drive_props``, ``physics_material``.

    Returns:
        What was authored (prims modified per slot, gravcomp auto-enable).

    Raises:
        PhysicsCfgError: bad root, bad value, or (``strict``) a cfg without targets.
        TypeError: unknown slot keyword or wrong cfg family.
        FileExistsError: ``layer_path`` exists and is not a physics layer of this asset.
        SchemaError: the asset (or an existing layer) cannot be read as USD.
        OSError: missing asset or unwritable layer.
    """
    unknown = sorted(set(cfgs) - set(SLOTS))
    if unknown:
        raise TypeError(
            f"author_physics_layer: unknown cfg slot(s) {unknown} (allowed: {', '.join(SLOTS)})"
        )
    asset_abs = os.path.abspath(os.fspath(asset_path))
    layer_abs = os.path.abspath(os.fspath(layer_path))
    if asset_abs == layer_abs:
        raise ValueError("author_physics_layer: the layer must differ from the asset file")
    # One clear error (file:line, missing reference) instead of a Tf.ErrorException.
    open_stage(asset_abs)
    asset_layer = Sdf.Layer.FindOrOpen(asset_abs)
    if asset_layer is None:
        raise OSError(f"cannot open asset {asset_abs}")
    layer_dir = os.path.dirname(layer_abs)
    sublayer_entry = os.path.relpath(asset_abs, layer_dir).replace(os.sep, "/")
    if not sublayer_entry.startswith("."):
        sublayer_entry = "./" + sublayer_entry

    if os.path.exists(layer_abs) and not overwrite:
        try:
            layer = Sdf.Layer.OpenAsAnonymous(layer_abs)
        except Tf.ErrorException as exc:
            raise SchemaError(layer_abs, "", f"existing layer: {tf_error_line(exc)}") from None
        if layer is None:
            raise OSError(f"cannot open existing layer {layer_abs}")
        resolved = [_resolve_sublayer(layer_dir, p) for p in layer.subLayerPaths]
        if asset_abs not in resolved:
            raise FileExistsError(
                f"{layer_abs} exists and does not sublayer {asset_abs}; pass overwrite=True "
                "(CLI: --overwrite) to replace it"
            )
    else:
        layer = Sdf.Layer.CreateAnonymous(os.path.splitext(layer_abs)[1] or ".usda")
        for key in _STAGE_METADATA:
            if asset_layer.pseudoRoot.HasInfo(key):
                layer.pseudoRoot.SetInfo(key, asset_layer.pseudoRoot.GetInfo(key))
        if asset_layer.defaultPrim:
            layer.defaultPrim = asset_layer.defaultPrim
        layer.documentation = "Physics property overrides authored by simrt physics."
    # Compose against the absolute asset path while in memory.
    layer.subLayerPaths.clear()
    layer.subLayerPaths.append(asset_abs)

    stage = Usd.Stage.Open(layer, Usd.Stage.LoadAll)
    stage.SetEditTarget(Usd.EditTarget(layer))
    if root_path is None:
        default = stage.GetDefaultPrim()
        if not default:
            raise PhysicsCfgError(
                asset_abs, "defaultPrim", "asset has no defaultPrim; give root_path (--root)"
            )
        root_path = str(default.GetPath())
    report = apply_asset_physics(
        stage,
        root_path,
        strict=strict,
        nested=nested,
        physics_material_path=physics_material_path,
        **cfgs,
    )
    _save_atomically(layer, layer_abs, sublayer_entry)
    return report
