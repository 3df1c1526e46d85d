"""Isaac Lab's ray-caster camera: a depth camera made of a pinhole pattern's rays.

The camera is a :class:`~runtime.sensors.lab.ray_caster.RayCaster` whose pattern is a
:class:`~runtime.sensors.lab.config.PinholeCameraPattern` (always base-aligned); each update
turns the rays' distances and normals into images: depth to the image plane, distance to
the camera and world-frame normals, H x W per world.

A camera mounted on a static prim without drift (``drift_range`` and
``ray_cast_drift_range`` zero) casts the same rays at every update: it goes through a
:class:`~runtime.rays.views.PinholeView`, which casts the static colliders once and, per
update and world, only the moving bodies on the pixels their bounds can cover, and rewrites
only the pixels that changed (the images are then written in place: do not write into
them). The result equals the full cast of every ray. A camera on a moving body, with drift,
or over a scene other than the Numba backend's casts every ray at every update.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runtime.rays import PinholeView
from runtime.sensors.lab._lab_kernels import camera_images_kernel
from runtime.sensors.lab._math import quat_conjugate, quat_from_matrix, quat_multiply
from runtime.sensors.lab.config import PinholeCameraPattern
from runtime.sensors.lab.patterns import intrinsic_matrix, pattern_rays
from runtime.sensors.lab.ray_caster import RayCaster, RayCasterData, _pattern_field

__all__ = ["RayCasterCamera", "RayCasterCameraData"]

_DATA_TYPES = ("distance_to_image_plane", "distance_to_camera", "normals")
_CLIPPING = ("none", "max", "zero")
# columns: the "world" convention's axes (forward, left, up) in the convention's axes
_CONVENTION_AXES = {
    "world": np.eye(3),
    "ros": np.array([[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]]),
    "opengl": np.array([[0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [-1.0, 0.0, 0.0]]),
}
_CONVENTION_QUATS = {name: quat_from_matrix(m) for name, m in _CONVENTION_AXES.items()}
_INVERSE_QUATS = {name: quat_conjugate(q) for name, q in _CONVENTION_QUATS.items()}


@dataclass
class RayCasterCameraData:
    """Depth-camera readings of N worlds, images H x W.

    Attributes:
        pos_w: camera position [m], (N, 3).
        quat_w_world: orientation, "world" convention (x forward, z up), (N, 4).
        quat_w_ros: orientation, ROS convention (z forward, y down), (N, 4).
        quat_w_opengl: orientation, OpenGL convention (-z forward, y up), (N, 4).
        intrinsic_matrices: camera matrices [pixels], (N, 3, 3).
        image_shape: (H, W).
        output: images by data type: ``distance_to_image_plane`` and ``distance_to_camera``
            (N, H, W, 1) [m], ``normals`` (N, H, W, 3) world; misses ``inf`` (see
            ``depth_clipping_behavior``).
        info: per-world dicts (empty).
        output_history: past images by data type, (N, history_length, H, W, c), index 0
            the latest (empty without ``history_length``).
    """

    pos_w: np.ndarray
    quat_w_world: np.ndarray
    quat_w_ros: np.ndarray
    quat_w_opengl: np.ndarray
    intrinsic_matrices: np.ndarray
    image_shape: tuple[int, int]
    output: dict[str, np.ndarray]
    info: list[dict[str, Any]]
    ray_hit_ids: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    output_history: dict[str, np.ndarray] = field(default_factory=dict)


class RayCasterCamera(RayCaster):
    """A depth camera made of the pinhole pattern's rays (always base-aligned).

    Same arguments as :class:`RayCaster`; ``config`` is a
    :class:`~runtime.sensors.lab.config.RayCasterCameraConfig`. Mounted on a static prim
    without drift (and over a Numba-backend scene), it updates through a
    :class:`~runtime.rays.views.PinholeView` (``_view``): the same images, rewritten in
    place only where they change; otherwise every ray is cast at every update.
    """

    kind = "ray_caster_camera"
    _history_fields = ()
    _scene_call_allowed = False

    def _allocate_history(self) -> None:
        """Histories of the output images: ``data.output_history[name]``, (N, H, h, w, c)."""
        super()._allocate_history()
        self.data.output_history = {}
        if self.history_length == 0:
            return
        n = self.num_envs
        for name, image in self.data.output.items():
            history = np.full((n, self.history_length, *image.shape[1:]), np.inf)
            self.data.output_history[name] = history
            self._histories[name] = history
            self._flat_histories.append(
                (image.reshape(n, -1), history.reshape(n, self.history_length, -1))
            )

    def _setup_alignment(self) -> None:
        self._alignment = 0
        cfg = self.config
        convention = getattr(cfg.offset, "convention", "ros")
        if convention not in _CONVENTION_QUATS:
            raise self.fail("offset.convention", f"must be ros, opengl or world: {convention!r}")
        # the camera's "world"-convention frame in the body
        self._offset_rot = quat_multiply(self._offset_rot, _CONVENTION_QUATS[convention])
        types = list(cfg.data_types or [])
        unknown = [t for t in types if t not in _DATA_TYPES]
        if not types or unknown:
            raise self.fail("data_types", f"must be a non-empty subset of {_DATA_TYPES}: {types!r}")
        self._types = types
        if cfg.depth_clipping_behavior not in _CLIPPING:
            raise self.fail("depth_clipping_behavior", f"must be one of {_CLIPPING}")
        self._clipping = _CLIPPING.index(cfg.depth_clipping_behavior)

    def _setup(self) -> None:
        super()._setup()
        self._boxes = None  # (images need the normals: the view or the full cast)
        self._view = None
        drifts = [self._drift_range, *self._cast_drift_ranges]
        if not self._static or any(r != (0.0, 0.0) for r in drifts):
            return
        if not PinholeView.supports(self.ray_scene):
            return
        # the fixed camera's pose and rays: the same in every world, written once
        buffers = self._buffers[0]
        for env in range(self.num_envs):
            self._frame(env, None, buffers)
            self._camera_quats(env)
        rows, positions, orientations = self.group_poses()
        k = self._matrix
        plane, camera, normals = self._images
        self._view = PinholeView(
            self.ray_scene, self.data.pos_w[0], self.data.quat_w_world[0], buffers[1],
            self._shape[1], self._shape[0], (k[0, 0], k[1, 1], k[0, 2], k[1, 2]),
            float(self._max[0]), rows, positions, orientations, self._forward, plane, camera,
            normals, self.data.ray_hit_ids, self._clipping, self.model.nbody,
        )  # fmt: skip

    def _setup_pattern(self) -> None:
        pattern = self.config.pattern_cfg
        if not isinstance(pattern, PinholeCameraPattern):
            raise self.fail("pattern_cfg", "must be a PinholeCameraPattern(Cfg)")
        try:
            self._matrix = intrinsic_matrix(pattern)
            self.ray_starts, self.ray_directions = pattern_rays(pattern)
        except ValueError as error:
            raise self.fail(_pattern_field(error), str(error)) from None
        self._shape = (int(pattern.height), int(pattern.width))
        self._forward = np.ascontiguousarray(self.ray_directions[:, 0])

    def _allocate_data(self, r: int) -> None:
        n = self.num_envs
        h, w = self._shape if r else (0, 0)
        images = {
            "distance_to_image_plane": np.full((n, h, w, 1), np.inf),
            "distance_to_camera": np.full((n, h, w, 1), np.inf),
            "normals": np.full((n, h, w, 3), np.inf),
        }
        self._images = (
            images["distance_to_image_plane"].reshape(n, h * w),
            images["distance_to_camera"].reshape(n, h * w),
            images["normals"].reshape(n, h * w, 3),
        )
        self.data = RayCasterCameraData(
            pos_w=np.zeros((n, 3)),
            quat_w_world=np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)),
            quat_w_ros=np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)),
            quat_w_opengl=np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)),
            intrinsic_matrices=np.tile(self._matrix if r else np.eye(3), (n, 1, 1)),
            image_shape=(h, w),
            output={k: images[k] for k in getattr(self, "_types", ())},
            info=[{} for _ in range(n)],
            ray_hit_ids=np.full((n, r), -1, np.int64),
        )
        self._rays = RayCasterData(
            pos_w=self.data.pos_w,
            quat_w=self.data.quat_w_world,
            ray_hits_w=np.zeros((n, r, 3)),
            ray_distances=np.zeros((n, r)),
            ray_hit_ids=self.data.ray_hit_ids,
        )

    def _setup_disabled(self) -> None:
        self._view = None
        self._shape = (0, 0)
        self._matrix = np.eye(3)
        super()._setup_disabled()

    @property
    def _ray_data(self) -> Any:
        return self._rays

    def _camera_quats(self, env: int) -> None:
        camera = self.data
        quat = camera.quat_w_world[env]
        camera.quat_w_ros[env] = quat_multiply(quat, _INVERSE_QUATS["ros"])
        camera.quat_w_opengl[env] = quat_multiply(quat, _INVERSE_QUATS["opengl"])

    def _update_worlds(self, envs: Sequence[int], datas: Sequence[Any]) -> None:
        view = self._view
        if view is None:
            super()._update_worlds(envs, datas)
            return
        for env in envs:
            data = datas[env]
            view.update(env, data.xpos, data.xquat)

    def _finish(self, env: int, buffers: tuple) -> None:
        super()._finish(env, buffers)
        self._camera_quats(env)
        camera_images_kernel(
            env, buffers[2], buffers[4], self._forward, float(self._max[0]), self._clipping,
            *self._images,
        )  # fmt: skip
