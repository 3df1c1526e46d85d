"""Regenerate ``runtime/_compile/kernel_manifest.py``: the kernels a run compiles, with their types.

    python tools/kernel_manifest.py [SCENE ...] [--steps 20] [--table]

Runs each scene (default ``scenes/panda_table.usda``) in this process with an empty, private
Numba cache, records every kernel compiled from Python (a root: not compiled for another
kernel) with its argument types and its compile CPU time including the kernels it calls, and
writes the manifest that :mod:`runtime._compile.precompile` reads to compile a cold run's kernels in
parallel processes. Then it calls the kinematics API on the first scene's Panda (single and
batched FK, Jacobians, IK) and lists the further kernels that compiles as ``API_KERNELS``:
the package build compiles both lists into its kernel seeds (:mod:`runtime._compile.seeds`).
``--table`` also prints every compilation (nested ones too) with its own time, slowest
first: the table used to find what makes a cold start slow.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "runtime" / "_compile" / "kernel_manifest.py"


def _type_text(t: object) -> str:
    """Numba type as text that ``eval`` in ``numba.core.types`` gives back."""
    from numba.core import types

    if isinstance(t, types.Array):
        readonly = "" if t.mutable else ", readonly=True"
        return f"Array({t.dtype}, {t.ndim}, {t.layout!r}{readonly})"
    if t == types.boolean:
        return "boolean"
    return str(t)


def _api_workload(scene: str) -> None:
    """The kinematics API on the scene's Panda: single and batched FK, Jacobians, IK."""
    import numpy as np
    from pxr import Usd

    import runtime.schema  # noqa: F401 - the Isaac schemas, before the stage opens
    from runtime.kinematics.chain import KinematicChain
    from runtime.kinematics.ik import ik_lm_batch
    from runtime.kinematics.math import Transform
    from runtime.kinematics.poser import RobotPoser

    stage = Usd.Stage.Open(scene)
    prims = {p.GetName(): p for p in Usd.PrimRange(stage.GetPseudoRoot())}
    if not {"Panda", "panda_link0", "panda_hand"} <= prims.keys():
        print(f"{scene}: no Panda; API_KERNELS left empty")
        return
    robot, base, hand = prims["Panda"], prims["panda_link0"], prims["panda_hand"]
    chain = KinematicChain(stage, robot, base, hand)
    q = 0.5 * (chain.lower + chain.upper)
    qs = np.tile(q, (4, 1))
    chain.fk(q)
    chain.fk_batch(qs)
    chain.compute_fk(q)
    chain.compute_fk_and_jacobian(q, jacobian="spatial")
    chain.compute_fk_and_jacobian(q, jacobian="point")
    chain.fk_jacobian_batch(qs)
    pos, quat = chain.fk(q)
    poser = RobotPoser(stage, robot, base, hand)
    poser.solve_ik(Transform(pos, quat))  # the cold-start ladder
    poser.solve_ik(Transform(pos, quat), seed=q)
    poser.solve_ik_batch(np.tile(pos, (3, 1)), np.tile(quat, (3, 1)))
    ik_lm_batch(chain, np.tile(pos, (3, 1)), np.tile(quat, (3, 1)), qs[:3])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenes", nargs="*", default=[str(REPO / "scenes" / "panda_table.usda")])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--table", action="store_true", help="print every compilation")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="simrt-manifest-")
    os.environ["NUMBA_CACHE_DIR"] = str(Path(tmp) / "numba")
    os.environ["SIMRT_CACHE_DIR"] = str(Path(tmp) / "scenes")
    os.environ["SIMRT_PRECOMPILE"] = "0"  # every kernel compiles here, where it is timed
    os.environ["SIMRT_SEEDS"] = "0"  # (installed seeds would load instead of compiling)
    sys.path.insert(0, str(REPO))
    from numba.core import event

    stack: list[list] = []
    records: list[tuple[str, str, tuple, float, float, bool]] = []

    class Listener(event.Listener):
        def on_start(self, ev: event.Event) -> None:
            stack.append([ev.data["dispatcher"], ev.data["args"], time.process_time(), 0.0])

        def on_end(self, ev: event.Event) -> None:
            dispatcher, types_, began, nested = stack.pop()
            took = time.process_time() - began
            if stack:
                stack[-1][3] += took
            func = dispatcher.py_func
            records.append(
                (func.__module__, func.__qualname__, types_, took, took - nested, not stack)
            )

    event.register("numba:compile", Listener())
    from runtime.run.loop import run_scene

    for scene in args.scenes:
        run_scene(scene, steps=args.steps, out=Path(tmp) / "run.zarr")
    ran = len(records)
    _api_workload(args.scenes[0])  # kernels the run did not compile: the API's own

    def roots_of(found: list) -> dict[tuple[str, str], dict[tuple[str, ...], float]]:
        roots: dict[tuple[str, str], dict[tuple[str, ...], float]] = defaultdict(dict)
        for module, name, types_, took, _, root in found:
            if root and module.startswith("runtime."):
                roots[(module, name)][tuple(_type_text(t) for t in types_)] = round(took, 1)
        return roots

    def entries(roots: dict) -> list[str]:
        out = []
        for (module, name), signatures in sorted(roots.items()):
            for sig, seconds in signatures.items():
                out.append(f"    ({json.dumps(module)}, {json.dumps(name)}, {seconds}, (")
                out.extend(f"        {json.dumps(t)}," for t in sig)
                out.append("    )),")
        return out

    roots, api = roots_of(records[:ran]), roots_of(records[ran:])
    if not roots:
        print("no kernel compiled: the manifest is left as it is", file=sys.stderr)
        return 1
    lines = [
        '"""Kernels compiled by a run, with their argument types (generated: do not edit).',
        "",
        "Written by ``tools/kernel_manifest.py`` from runs of:",
        *(f"{Path(s).name}," for s in args.scenes[:-1]),
        f"{Path(args.scenes[-1]).name};",
        "read by :mod:`runtime._compile.precompile` (``KERNELS``: what a run compiles) and by the",
        "package build (:mod:`runtime._compile.seeds`: ``KERNELS`` and ``API_KERNELS``, those the",
        "kinematics API compiles besides: single and batched FK, Jacobians, IK).",
        "Each entry: module, kernel, CPU seconds to compile it cold (with the kernels it calls),",
        "argument types (``numba.core.types`` expressions).",
        '"""',
        "",
        "KERNELS = (",
        *entries(roots),
        ")",
        "",
        "API_KERNELS = (",
        *entries(api),
        ")",
    ]
    OUT.write_text("\n".join(lines) + "\n")
    # the project's formatting (ruff is in the test extra); left as written without it
    subprocess.run([sys.executable, "-m", "ruff", "format", "-q", str(OUT)], check=False)
    count = sum(len(s) for s in roots.values())
    print(f"wrote {OUT.relative_to(REPO)}: {count} + {sum(len(s) for s in api.values())} kernels")
    if args.table:
        totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
        for module, name, _, took, own, _ in records:
            row = totals[f"{module.rsplit('.', 1)[-1]}.{name}"]
            row[0] += 1
            row[1] += own
            row[2] = max(row[2], took)
        print(f"{'own s':>7s} {'with callees s':>14s} {'count':>5s}  kernel")
        for key, (count, own, took) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
            print(f"{own:7.2f} {took:14.2f} {count:5d}  {key}")
        print(f"{sum(r[4] for r in records):7.2f} s in {len(records)} compilations")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
