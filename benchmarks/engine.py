"""Per-step wall time of ``MujocoEngine`` vs raw ``mujoco.mj_step`` on the same model.

Run: ``python benchmarks/engine.py [--steps 2000] [--robots ur5e panda solo12]
[--scene scenes/panda_table.usda]``.

For each converted robot in ``tests/assets/robots`` (plus a scene of a sphere bouncing on a
ground plane, which exercises contacts) it prints, in the same run:

* raw: ``mujoco.mj_step(model, data)`` on ``engine.model`` (the peer);
* step: ``MujocoEngine.step()`` (the wrapper's stepping overhead);
* step+state: ``MujocoEngine.step()`` followed by ``MujocoEngine.state()`` every step (the
  full cost of producing a ``PhysicsState`` for the sensors each step);
* step+state+acc: same with accelerations (``mj_rnePostConstraint``);

with the ratios to raw (each the best of 5 interleaved runs of steps/5 steps, since the
machine may be shared). Build time (USD parse + MjSpec compile) is reported separately.

``--scene`` (default ``scenes/panda_table.usda``; ``--scene none`` skips it) then times
``MujocoEngine.state()`` *alone* after each step -- fresh arrays and ``state(reuse=True)``,
without and with accelerations -- against ``mj_step`` on the same model, interleaved, best
of ``--repeats`` blocks (target: state() <= 0.3 x mj_step).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ROBOTS = {
    "ur5e": "tests/assets/robots/ur5e/ur5e.usda",
    "panda": "tests/assets/robots/panda/panda.usda",
    "solo12": "tests/assets/robots/solo12/solo.usda",
    "ur10": "tests/assets/robots/ur10/ur10.usda",
}


def _ball_stage():
    from pxr import Gf, Usd, UsdGeom, UsdPhysics

    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdPhysics.Scene.Define(stage, "/PhysicsScene")
    plane = UsdGeom.Plane.Define(stage, "/World/Ground")
    UsdPhysics.CollisionAPI.Apply(plane.GetPrim())
    for i in range(10):
        xf = UsdGeom.Xform.Define(stage, f"/World/ball{i}")
        xf.AddTranslateOp().Set(Gf.Vec3d(0.3 * i, 0, 0.2 + 0.05 * i))
        UsdPhysics.RigidBodyAPI.Apply(xf.GetPrim())
        sphere = UsdGeom.Sphere.Define(stage, f"/World/ball{i}/s")
        sphere.CreateRadiusAttr(0.1)
        UsdPhysics.CollisionAPI.Apply(sphere.GetPrim())
    return stage


def _time(fn, steps: int) -> float:
    fn()  # warm-up
    start = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - start) / steps


def bench(name: str, stage, steps: int, repeats: int = 5) -> None:
    import mujoco

    from runtime.engine import MujocoEngine

    t0 = time.perf_counter()
    engine = MujocoEngine(stage)
    build = time.perf_counter() - t0
    model, data = engine.model, engine.data
    if model.nu:
        engine.set_joint_targets(
            np.zeros(len([d for d in engine.dofs if d.actuator >= 0])),
            names=[d.name for d in engine.dofs if d.actuator >= 0],
        )

    def step_state() -> None:
        engine.step()
        engine.state()

    def variants():
        yield "raw", lambda: mujoco.mj_step(model, data), False
        yield "step", engine.step, False
        yield "full", step_state, False
        yield "acc", step_state, True

    # interleave the variants and keep each one's best of `repeats` (the machine is shared)
    best = {key: float("inf") for key, _, _ in variants()}
    chunk = max(1, steps // repeats)
    for _ in range(repeats):
        for key, fn, acc in variants():
            engine.compute_accelerations = acc
            engine.reset()
            best[key] = min(best[key], _time(fn, chunk))
    engine.compute_accelerations = False
    raw, step, full, full_acc = best["raw"], best["step"], best["full"], best["acc"]
    state = engine.state()
    print(
        f"{name:8s} bodies={len(engine.body_paths):3d} dofs={len(engine.dofs):2d} "
        f"contacts={state.contact_count:2d} build={build * 1e3:7.1f} ms | "
        f"raw {raw * 1e6:7.1f} us | step {step * 1e6:7.1f} us (x{step / raw:4.2f}) | "
        f"step+state {full * 1e6:7.1f} us (x{full / raw:4.2f}) | "
        f"+acc {full_acc * 1e6:7.1f} us (x{full_acc / raw:4.2f})"
    )


def bench_state(path: str, steps: int, repeats: int) -> None:
    """Time ``state()`` alone (after each step) against ``mj_step`` on one scene."""
    import mujoco
    from pxr import Usd

    from runtime.engine import MujocoEngine

    stage = Usd.Stage.Open(path)
    engine = MujocoEngine(stage)
    m, d = engine.model, engine.data
    for _ in range(200):  # settle into contact; JIT compile / cache load
        engine.step()
        engine.state()
    start = mujoco.MjData(m)
    mujoco.mj_copyData(start, m, d)
    perf = time.perf_counter
    try:
        engine.state(reuse=True)
        variants = [("fresh", {}), ("reuse", {"reuse": True})]
    except TypeError:  # an engine without state(reuse=...)
        variants = [("fresh", {})]

    def run_state(kwargs: dict, acc: bool) -> float:
        engine.compute_accelerations = acc
        mujoco.mj_copyData(d, m, start)
        engine.step()
        engine.state(**kwargs)  # warm
        total = 0.0
        for _ in range(steps):
            engine.step()
            a = perf()
            engine.state(**kwargs)
            total += perf() - a
        return total / steps

    def run_raw() -> float:
        mujoco.mj_copyData(d, m, start)
        a = perf()
        for _ in range(steps):
            mujoco.mj_step(m, d)
        return (perf() - a) / steps

    best: dict[str, float] = {}
    for _ in range(repeats):
        best["mj_step"] = min(best.get("mj_step", 1.0), run_raw())
        for name, kwargs in variants:
            for acc in (False, True):
                key = f"state({name}{', acc' if acc else ''})"
                best[key] = min(best.get(key, 1.0), run_state(kwargs, acc))
    raw = best["mj_step"]
    state = engine.state()
    print(
        f"\n{os.path.relpath(path, ROOT)}: bodies={len(engine.body_paths)} "
        f"dofs={len(engine.dofs)} contacts={state.contact_count} nefc={d.nefc}"
    )
    for key, value in best.items():
        print(f"  {key:22s} {value * 1e6:7.2f} us   x{value / raw:5.3f} mj_step")


def main() -> None:
    """Run the benchmark and print one line per model."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--robots", nargs="*", default=["ur5e", "panda", "solo12", "balls"])
    parser.add_argument("--scene", default=os.path.join(ROOT, "scenes", "panda_table.usda"))
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    import logging

    logging.getLogger("runtime.engine").setLevel(logging.ERROR)
    from pxr import Usd

    import runtime.schema  # noqa: F401  (register schemas before opening stages)

    for name in args.robots:
        if name == "balls":
            bench(name, _ball_stage(), args.steps)
        else:
            bench(name, Usd.Stage.Open(os.path.join(ROOT, ROBOTS[name])), args.steps)
    if args.scene and args.scene != "none":
        bench_state(args.scene, args.steps, args.repeats)


if __name__ == "__main__":
    main()
