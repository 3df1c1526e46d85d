"""Per-step cost of ``SurfaceGripperRuntime.update()`` next to ``mj_step`` (same run).

Run: ``python benchmarks/surface_gripper.py [--steps 2000] [--repeats 5]``.

Scene: ``scenes/ur5e_suction.usda`` (UR5e, one suction gripper, a box). Three gripper
states are timed, each interleaved with its peer ``engine.step()`` (raw ``mj_step`` plus the
engine's bookkeeping) and reported as best-of-``repeats`` microseconds per step and the ratio
to that peer:

* open: ``update()`` with nothing attached (the cost every scene with a gripper pays);
* closed: the box held, force limits on (one constraint-force read per step);
* closing: out of reach with retry on (one grip ray test per step through the ray scene).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "scenes"))


def _setup():
    import build_ur_gripper_scene as S
    import numpy as np
    from pxr import Usd

    from runtime.engine import MujocoEngine
    from runtime.engine.surface_gripper import SurfaceGripperRuntime

    stage = Usd.Stage.Open(str(S.SCENE))
    engine = MujocoEngine(stage, robot_prim=S.ROBOT)
    grippers = SurfaceGripperRuntime(engine)
    poser = S.make_poser(stage)
    paths = [j.prim_path for j in poser.joints]
    q = np.array([engine.data.qpos[b.qpos_adr] for b in engine.dofs])
    engine.set_joint_targets(q, paths)
    return S, engine, grippers, poser, paths, q


def _time(fn, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def _measure(engine, grippers, steps: int, repeats: int) -> tuple[float, float]:
    best_peer = best_update = float("inf")
    block = max(1, steps // repeats)
    for _ in range(repeats):
        best_peer = min(best_peer, _time(engine.step, block))
        engine.step()
        best_update = min(best_update, _time(grippers.update, block))
    return best_peer, best_update


def main() -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import runtime.schema  # noqa: F401

    S, engine, grippers, poser, paths, q = _setup()
    engine.step()
    grippers.update()  # discovery
    rows = []
    rows.append(("open", *_measure(engine, grippers, args.steps, args.repeats)))
    top = S.TABLE_TOP_Z + S.BOX_SIZE
    goal = S.solve_tool_pose(poser, (*S.PICK, top + S.HOVER), q)
    engine.set_joint_targets(goal, paths)
    for _ in range(1000):
        engine.step()
        grippers.update()
    grippers.close_gripper(S.GRIPPER)
    for _ in range(20):
        engine.step()
        grippers.update()
    assert grippers.get_gripped_objects(S.GRIPPER) == [S.BOX]
    rows.append(("closed", *_measure(engine, grippers, args.steps, args.repeats)))
    grippers.open_gripper(S.GRIPPER)
    high = S.solve_tool_pose(poser, (*S.PICK, top + 0.3), goal)
    engine.set_joint_targets(high, paths)
    for _ in range(1000):
        engine.step()
        grippers.update()
    grip = grippers._grippers[S.GRIPPER]
    grip.retry_interval = 1e9  # keep ray-testing every step
    grippers.close_gripper(S.GRIPPER)
    assert grippers.get_gripper_status(S.GRIPPER) == "Closing"
    rows.append(("closing", *_measure(engine, grippers, args.steps, args.repeats)))
    print(f"{'state':<8} {'engine.step us':>15} {'update us':>10} {'update/step':>12}")  # noqa: T201
    for name, peer, upd in rows:
        print(f"{name:<8} {peer:>15.2f} {upd:>10.2f} {upd / peer:>12.3f}")  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
