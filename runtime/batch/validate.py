"""A batch spec checked against its scenes before any worker starts.

:func:`check_against_scenes` opens every scene of a spec in the driver and checks what the
episodes will need from it, so that a spec that cannot work fails at once, with one line
per problem naming the spec file and key, instead of failing every episode in the workers:

- ``scenes[i].path`` / ``replay.scene``: an existing file that USD opens;
- ``scenes[i].robot`` / ``replay.robot``: the robot exists (the scene's first robot when
  not given; a replay needs one);
- ``randomize.ik[j].link``: a link prim (name or path) under each scene's robot;
- ``randomize.objects[j].path``: a free rigid body of each scene (a rigid body no joint
  holds, not kinematic);
- ``replay.logs``: a folder holding logs.

The episode count is bounded when the spec is parsed (``runtime.batch.spec.MAX_EPISODES``).
"""

from __future__ import annotations

import os
from typing import Any

from runtime.errors import SimrtError

__all__ = ["check_against_scenes"]


def _open(scene: str) -> tuple[Any | None, str]:
    from runtime.schema import open_stage

    if not os.path.exists(scene):
        return None, f"{scene}: no such file"
    if not os.path.isfile(scene):
        return None, f"{scene}: not a file"
    try:
        return open_stage(scene), ""
    except (SimrtError, OSError) as error:
        return None, str(error).replace("\n", " ")


def _jointed_bodies(stage: Any) -> set[str]:
    from pxr import UsdPhysics

    held = set()
    for prim in stage.Traverse():
        if prim.IsA(UsdPhysics.Joint):
            joint = UsdPhysics.Joint(prim)
            for rel in (joint.GetBody0Rel(), joint.GetBody1Rel()):
                held.update(str(target) for target in rel.GetTargets())
    return held


def _free_body_problem(stage: Any, path: str, held: set[str]) -> str:
    from pxr import UsdPhysics

    prim = stage.GetPrimAtPath(path)
    if not prim or not prim.IsValid():
        return "no such prim"
    if not prim.HasAPI(UsdPhysics.RigidBodyAPI):
        return "not a rigid body (no PhysicsRigidBodyAPI)"
    kinematic = prim.GetAttribute("physics:kinematicEnabled")
    if kinematic and kinematic.Get():
        return "a kinematic body, not a free one"
    if path in held:
        return "not a free body (a joint holds it)"
    return ""


def _has_link(stage: Any, robot: Any, link: str) -> bool:
    from pxr import Usd

    if link.startswith("/"):
        prim = stage.GetPrimAtPath(link)
        return bool(prim) and prim.IsValid()
    return any(
        p.GetName() == link and p.GetTypeName() not in ("Mesh", "Cube", "Sphere")
        for p in Usd.PrimRange(robot)
    )


def check_against_scenes(spec: Any) -> None:
    """Check ``spec`` (a :class:`~runtime.batch.spec.BatchSpec`) against its scenes.

    Raises:
        SimrtError: one line per problem, ``SPEC: key: problem``.
    """
    from runtime.run.scene import find_robot

    source = spec.source
    problems: list[str] = []
    if spec.replay is not None:
        entries = [("replay", spec.replay.scene, spec.replay.robot, True)]
        if not os.path.isdir(spec.replay.logs):
            problems.append(f"replay.logs: {spec.replay.logs} is not a folder")
    else:
        entries = [(f"scenes[{i}]", s.path, s.robot, False) for i, s in enumerate(spec.scenes)]
    randomize = spec.randomize
    for key, scene, robot_path, needs_robot in entries:
        stage, problem = _open(scene)
        if stage is None:
            problems.append(f"{key}.{'scene' if key == 'replay' else 'path'}: {problem}")
            continue
        try:
            robot = find_robot(stage, robot_path)
        except (SimrtError, ValueError) as error:
            problems.append(f"{key}.robot: {scene}: {error}")
            continue
        if robot is None and (needs_robot or randomize.ik):
            problems.append(f"{key}.robot: {scene}: no robot in the scene")
            continue
        for j, draw in enumerate(randomize.ik):
            if not _has_link(stage, robot, draw.link):
                problems.append(
                    f"randomize.ik[{j}].link: {draw.link!r} is not a link of {robot.GetPath()} "
                    f"in {scene}"
                )
        held = _jointed_bodies(stage) if randomize.objects else set()
        for j, draw in enumerate(randomize.objects):
            problem = _free_body_problem(stage, draw.path, held)
            if problem:
                problems.append(f"randomize.objects[{j}].path: {draw.path}: {problem} in {scene}")
    if problems:
        raise SimrtError("\n".join(f"{source}: {line}" for line in dict.fromkeys(problems)))
