"""A BVH built from meshes for the ray-cast tests.

Shared by several test modules (moved from tests/test_bvh.py).
"""

from __future__ import annotations

import numpy as np

from runtime.rays import _bvh_build_kernels as kernels


def build(vertices, faces):
    f = len(faces)
    boxes = np.empty((max(2 * f, 2), 12))
    refs = np.empty((max(2 * f, 2), 4), np.int64)
    tris = np.empty((f, 9))
    order = np.empty(f, np.int64)
    used = np.empty(1, np.int64)
    kernels.bvh_build_kernel(
        np.ascontiguousarray(vertices, np.float64),
        np.ascontiguousarray(faces, np.int64),
        boxes,
        refs,
        tris,
        order,
        used,
    )
    n = int(used[0])
    return boxes[:n], refs[:n], tris, order
