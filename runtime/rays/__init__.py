"""Ray casting: closest hits against the collision geometry of a stage.

The engine below the sensors: the ray scene (:class:`RayScene`, built from a stage's
colliders, one rigidly moving group per body), its backends (:class:`NumbaBvhBackend`, a
wide BVH traversed by Numba kernels; ``EmbreexBackend`` through the optional ``embreex``),
and the analytic solids (:class:`SolidShape`) hit exactly. The raycast sensors, the surface
grippers, the ray casters of :mod:`runtime.sensors.lab` and the scene recordings cast
through it.

Typical use::

    from runtime.rays import RayScene

    scene = RayScene.from_stage(stage, body_paths)
    scene.cast(origins, directions, max_distance, body_positions, body_orientations, ...)

Modules: :mod:`~runtime.rays.scene` (``RayScene``), :mod:`~runtime.rays.backends` (the
``RayBackend`` protocol, the Numba backend, threads), :mod:`~runtime.rays.embree` (the
embreex backend), :mod:`~runtime.rays.views` (``PinholeView``: a fixed camera's images,
the static part cast once), :mod:`~runtime.rays.box_scenes` (``box_scene_rows``: scenes of
world-aligned boxes cast without the BVH), :mod:`~runtime.rays.kernels` (the compiled face
other packages' kernels call).

Importing this package loads neither ``pxr`` nor ``numba`` nor ``trimesh``.
"""

from __future__ import annotations

from runtime.rays._shapes import SolidShape
from runtime.rays.backends import (
    BACKEND_NAMES,
    PARALLEL_MIN_RAYS,
    NumbaBvhBackend,
    RayBackend,
    make_ray_backend,
    resolve_threads,
)
from runtime.rays.box_scenes import box_scene_rows
from runtime.rays.scene import RayScene
from runtime.rays.views import PinholeView

__all__ = [
    "BACKEND_NAMES",
    "PARALLEL_MIN_RAYS",
    "NumbaBvhBackend",
    "PinholeView",
    "RayBackend",
    "RayScene",
    "SolidShape",
    "box_scene_rows",
    "make_ray_backend",
    "resolve_threads",
]
