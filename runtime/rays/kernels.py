"""The ray engine's compiled face: what other packages' Numba kernels call.

A kernel elsewhere (the raycast sensors' batch step) casts through these functions from
inside its own compiled code, so it binds them directly rather than through
:class:`~runtime.rays.scene.RayScene`. Importing this module loads Numba.
"""

from __future__ import annotations

from runtime.rays._box_kernels import BOX_COLUMNS, box_scene_hit_kernel
from runtime.rays._scene_cast_kernels import scene_cast_kernel
from runtime.rays._simd import NODE_WIDTH
from runtime.rays._solid_kernels import (
    SOLID_BOX,
    SOLID_CONVEX,
    group_solid_hit_kernel,
    inside_solid_kernel,
)
from runtime.rays._traversal_kernels import (
    inverse_direction_kernel,
    rotate_inverse_kernel,
    store_world_box_kernel,
    world_box_kernel,
)
from runtime.rays._view_kernels import view_kernel
from runtime.rays._wide_bvh_kernels import WIDE_STACK_SIZE, wide_traverse_kernel

__all__ = [
    "BOX_COLUMNS",
    "NODE_WIDTH",
    "SOLID_BOX",
    "SOLID_CONVEX",
    "WIDE_STACK_SIZE",
    "box_scene_hit_kernel",
    "group_solid_hit_kernel",
    "inside_solid_kernel",
    "inverse_direction_kernel",
    "rotate_inverse_kernel",
    "scene_cast_kernel",
    "store_world_box_kernel",
    "view_kernel",
    "wide_traverse_kernel",
    "world_box_kernel",
]
