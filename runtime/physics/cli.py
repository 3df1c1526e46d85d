r"""``simrt physics``: author physics property cfgs onto an asset into a separate layer.

The output layer sublayers the asset (which is never written), so opening the layer gives the
asset with the physics overrides::

    simrt physics ROBOT.usd --layer physics.usda \
        --rigid-body mujoco:gravcomp=1.0 --joint-drive mujoco:actuatorgravcomp=true

    simrt physics ROBOT.usd --layer physics.usda --config physics.toml

A slot option takes ``[backend:]field=value[,field=value...]``; ``backend`` is ``base``
(default), ``physx``, ``newton`` or ``mujoco`` (or a cfg class name such as
``PhysxRigidBodyPropertiesCfg``). Field names are the cfg dataclass fields (snake_case).
Angular drive values are SI per radian (converted to USD's per-degree on write).
``simrt physics --list-fields`` prints every slot, backend class and field.

A cfg file (TOML, or JSON by ``.json`` suffix) has one table per slot::

    root = "/World/Robot"            # optional, default: the asset's defaultPrim

    [rigid_props]
    backend = "mujoco"
    gravcomp = 1.0

    [joint_drive_props]
    backend = "mujoco"
    actuatorgravcomp = true
    stiffness = 0.0
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

__all__ = ["add_arguments", "run"]

_OPTIONS = (
    ("--rigid-body", "rigid_props", "rigid-body cfg (prims with PhysicsRigidBodyAPI)"),
    ("--collision", "collision_props", "collision cfg (prims with PhysicsCollisionAPI)"),
    ("--mass", "mass_props", "mass cfg (prims with PhysicsMassAPI)"),
    ("--articulation", "articulation_props", "articulation-root cfg"),
    ("--joint-drive", "joint_drive_props", "joint-drive cfg (revolute / prismatic joints)"),
    ("--material", "physics_material", "physics material cfg, bound to every collider"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the ``simrt physics`` arguments.

    Args:
        parser: the subcommand parser.
    """
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "examples:\n"
        "  simrt physics robot.usd --layer physics.usda --rigid-body mujoco:gravcomp=1.0 \\\n"
        "      --joint-drive mujoco:actuatorgravcomp=true\n"
        "  simrt physics robot.usd --layer physics.usda --config physics.toml\n"
        "  simrt physics --list-fields"
    )
    parser.add_argument("asset", nargs="?", help="asset USD file (never modified)")
    parser.add_argument("--layer", help="output layer; it sublayers the asset")
    parser.add_argument("--root", help="asset root prim (default: the asset's defaultPrim)")
    parser.add_argument("--config", help="TOML or JSON cfg file (one table per slot)")
    for flag, slot, text in _OPTIONS:
        parser.add_argument(
            flag, dest=slot, metavar="SPEC", help=f"{text}: [backend:]field=value,..."
        )
    parser.add_argument(
        "--material-path", help="material prim path (default <root>/PhysicsMaterial)"
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="rebuild an existing layer instead of adding to it"
    )
    parser.add_argument(
        "--no-strict",
        action="store_true",
        help="only warn (instead of failing) when a cfg finds no prim carrying its API",
    )
    parser.add_argument(
        "--outermost-only",
        action="store_true",
        help="Isaac Lab walk: do not author targets nested below other targets",
    )
    parser.add_argument(
        "--list-fields", action="store_true", help="list slots, backend cfg classes and fields"
    )


def _list_fields() -> str:
    from runtime.physics.config import BACKENDS

    lines = []
    for slot, choices in BACKENDS.items():
        flag = next(f for f, s, _ in _OPTIONS if s == slot)
        lines.append(f"{flag} ({slot})")
        for backend, cls in choices.items():
            fields = [
                f"{f.name}={f.default!r}" if f.default is not None else f.name
                for f in dataclasses.fields(cls)
                if f.name != "func"
            ]
            lines.append(f"  {backend:7s} {cls.__name__}: {', '.join(fields)}")
    return "\n".join(lines)


def _summary(cfg: object) -> str:
    values = [
        f"{f.name}={getattr(cfg, f.name)!r}"
        for f in dataclasses.fields(cfg)
        if f.name != "func" and getattr(cfg, f.name) not in (None, f.default)
    ]
    return f"{type(cfg).__name__}({', '.join(values)})"


def run(args: argparse.Namespace) -> int:
    """Run ``simrt physics``.

    Args:
        args: parsed arguments.

    Returns:
        0 on success, 2 on bad input.
    """
    if args.list_fields:
        print(_list_fields())
        return 0
    if not args.asset or not args.layer:
        print("simrt physics: error: ASSET and --layer are required", file=sys.stderr)
        return 2

    import runtime.schema  # noqa: F401  (register the Isaac schemas before any stage exists)
    from runtime.physics._meta import CfgTypeError
    from runtime.physics.config import CfgInputError, load_cfg_file, parse_cfg_spec
    from runtime.physics.layer import author_physics_layer

    try:
        cfgs: dict[str, object] = {}
        root = args.root
        material_path = args.material_path
        if args.config:
            loaded = load_cfg_file(args.config)
            root = root or loaded.pop("root", None)
            material_path = material_path or loaded.pop("physics_material_path", None)
            loaded.pop("root", None)
            loaded.pop("physics_material_path", None)
            cfgs.update(loaded)
        for flag, slot, _text in _OPTIONS:
            spec = getattr(args, slot)
            if spec is None:
                continue
            if slot in cfgs:
                raise CfgInputError(f"{slot} is given both in --config and by {flag}")
            cfgs[slot] = parse_cfg_spec(slot, spec)
    except (CfgInputError, CfgTypeError) as exc:
        print(f"simrt physics: error: {exc}", file=sys.stderr)
        return 2
    if not cfgs:
        print(
            "simrt physics: error: nothing to author (give a slot option or --config)",
            file=sys.stderr,
        )
        return 2
    report = author_physics_layer(
        args.asset,
        args.layer,
        root_path=root,
        overwrite=args.overwrite,
        strict=not args.no_strict,
        nested=not args.outermost_only,
        physics_material_path=material_path,
        **cfgs,
    )
    print(f"wrote {args.layer} (sublayers {args.asset})")
    for slot, cfg in cfgs.items():
        print(f"  {slot}: {_summary(cfg)} -> {report.modified.get(slot, 0)} prim(s)")
    if report.gravcomp_auto_enabled:
        print(
            "  actuatorgravcomp needs body-level gravcomp: mjc:gravcomp=1.0 auto-set on "
            f"{report.modified.get('gravcomp_auto', 0)} rigid bodies"
        )
    if report.material_path:
        print(f"  material spawned at {report.material_path}")
    return 0
