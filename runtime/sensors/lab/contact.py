"""Isaac Lab's contact sensor over MuJoCo contacts.

Per world and sensor body: the summed normal contact force (``net_forces_w``), and per
filter partner the normal force (``force_matrix_w``), the friction force
(``friction_forces_w``) and the mean contact point (``contact_pos_w``). Forces are MuJoCo's
constraint forces of each contact (what ``mujoco.mj_contactForce`` decodes), summed per
(sensor body, partner body) pair; the force on a body is the one its partner exerts on it.
Air and contact times follow Isaac Lab: a body is in contact while ``|net_forces_w|`` exceeds
``force_threshold``; times grow by the time between updates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runtime.sensors.lab._lab_kernels import contact_update_kernel
from runtime.sensors.lab.base import LabSensor

__all__ = ["ContactSensor", "ContactSensorData"]


@dataclass
class ContactSensorData:
    """Contact readings of N worlds, B sensor bodies and M filter partners.

    Env axis first; H history entries, index 0 the latest. Forces [N], positions [m],
    world frame; times [s].

    Attributes:
        pos_w: body positions, (N, B, 3) (``track_pose``; else zeros).
        quat_w: body orientations (w, x, y, z), (N, B, 4) (``track_pose``).
        net_forces_w: summed normal contact forces on each body, (N, B, 3).
        net_forces_w_history: (N, H, B, 3) (H = max(history_length, 1)).
        force_matrix_w: normal forces from each filter partner, (N, B, M, 3).
        force_matrix_w_history: (N, H, B, M, 3).
        contact_pos_w: mean contact point per pair, NaN without contact, (N, B, M, 3)
            (always computed; Isaac Lab fills it with ``track_contact_points``).
        friction_forces_w: friction forces from each filter partner, (N, B, M, 3)
            (always computed; Isaac Lab: ``track_friction_forces``).
        last_air_time: length of the last flight, (N, B) (``track_air_time``).
        current_air_time: time since contact was lost (0 in contact), (N, B).
        last_contact_time: length of the last contact, (N, B).
        current_contact_time: time since contact began (0 in the air), (N, B).
    """

    pos_w: np.ndarray
    quat_w: np.ndarray
    net_forces_w: np.ndarray
    force_matrix_w: np.ndarray
    contact_pos_w: np.ndarray
    friction_forces_w: np.ndarray
    last_air_time: np.ndarray
    current_air_time: np.ndarray
    last_contact_time: np.ndarray
    current_contact_time: np.ndarray
    net_forces_w_history: np.ndarray = field(default_factory=lambda: np.zeros(0))
    force_matrix_w_history: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @classmethod
    def zeros(cls, n: int, b: int, m: int) -> ContactSensorData:
        """Arrays of N worlds, B bodies and M filter partners (history set by the sensor).

        The four time arrays are views of one (4, N, B) block (``_times``).
        """
        times = np.zeros((4, n, b))
        data = cls(
            pos_w=np.zeros((n, b, 3)),
            quat_w=np.tile([1.0, 0.0, 0.0, 0.0], (n, b, 1)),
            net_forces_w=np.zeros((n, b, 3)),
            force_matrix_w=np.zeros((n, b, m, 3)),
            contact_pos_w=np.full((n, b, m, 3), np.nan),
            friction_forces_w=np.zeros((n, b, m, 3)),
            last_air_time=times[0],
            current_air_time=times[1],
            last_contact_time=times[2],
            current_contact_time=times[3],
        )
        data._times = times  # type: ignore[attr-defined]
        return data


class ContactSensor(LabSensor):
    """Contact forces on the bodies matched by ``config.prim_path``.

    Args:
        source: ``MujocoEngine`` or ``mujoco.MjModel``.
        config: :class:`~runtime.sensors.lab.config.ContactSensorConfig`.
        num_envs: worlds per :meth:`update`.

    Attributes:
        body_names: last path element of each sensor body, (B,).
        body_paths: paths of the sensor bodies, (B,).
        filter_paths: paths of the filter partners, (M,).
        data: :class:`ContactSensorData`.
    """

    kind = "contact"
    _history_fields = ("net_forces_w", "force_matrix_w")
    _keeps_history_always = True

    def _setup(self) -> None:
        cfg = self.config
        if cfg.prim_path is None:
            raise self.fail("prim_path", "is required")
        try:
            sensor = self.bodies.match(cfg.prim_path)
        except ValueError as error:
            raise self.fail("prim_path", str(error)) from None
        if not sensor:
            raise self.fail("prim_path", "matches no body of the model")
        filters = list(cfg.filter_prim_paths_expr or [])
        partners: list[int] = []
        for expression in filters:
            try:
                found = self.bodies.match(expression)
            except ValueError as error:
                raise self.fail("filter_prim_paths_expr", str(error)) from None
            if not found:
                raise self.fail(
                    "filter_prim_paths_expr", f"{expression!r} matches no body of the model"
                )
            partners.extend(e for e in found if e not in partners)
        threshold = cfg.force_threshold
        if isinstance(threshold, bool) or not np.isfinite(threshold) or threshold < 0.0:
            raise self.fail("force_threshold", f"must be finite and >= 0, got {threshold!r}")
        self._threshold = float(threshold)
        entity_count = len(self.bodies.paths)
        self._sensor_slot = np.full(entity_count, -1, np.int64)
        self._sensor_slot[sensor] = np.arange(len(sensor))
        self._filter_slot = np.full(entity_count, -1, np.int64)
        self._filter_slot[partners] = np.arange(len(partners))
        self._sensor_entities = sensor
        self.body_paths = tuple(self.bodies.paths[e] for e in sensor)
        self.body_names = tuple(self.bodies.name_of(e) for e in sensor)
        self.filter_paths = tuple(self.bodies.paths[e] for e in partners)
        import mujoco  # (the [sim] extra: the package imports without it)

        self._pyramidal = bool(self.model.opt.cone == mujoco.mjtCone.mjCONE_PYRAMIDAL)
        b, m = len(sensor), len(partners)
        self.data = ContactSensorData.zeros(self.num_envs, b, m)
        self._count = np.zeros((b, m))
        self._geom_entity = np.ascontiguousarray(self.bodies.geom_entity)
        self._no_contacts = (
            np.zeros((0, 2), np.int32),
            np.zeros(0, np.int32),
            np.zeros(0, np.int32),
            np.zeros((0, 9)),
            np.zeros((0, 5)),
            np.zeros((0, 3)),
        )

    def _setup_disabled(self) -> None:
        self.body_paths = self.body_names = self.filter_paths = ()
        self.data = ContactSensorData.zeros(self.num_envs, 0, 0)

    def _update_world(self, env: int, data: Any) -> None:
        if data.ncon:
            contact = data.contact
            arrays = (contact.geom, contact.efc_address, contact.dim, contact.frame,
                      contact.friction, contact.pos)  # fmt: skip
        else:
            arrays = self._no_contacts
        d = self.data
        contact_update_kernel(
            env, float(self._elapsed[env]), *arrays, data.efc_force, self._pyramidal,
            self._geom_entity, self._sensor_slot, self._filter_slot, self._threshold,
            bool(self.config.track_air_time), self._count, d.net_forces_w, d.force_matrix_w,
            d.friction_forces_w, d.contact_pos_w, d._times,
        )  # fmt: skip
        if self.config.track_pose:
            for b, entity in enumerate(self._sensor_entities):
                d.pos_w[env, b], d.quat_w[env, b] = self.entity_pose(data, entity)

    def _reset_world(self, env: int) -> None:
        d = self.data
        for name in ("net_forces_w", "force_matrix_w", "friction_forces_w", "last_air_time",
                     "current_air_time", "last_contact_time", "current_contact_time"):  # fmt: skip
            getattr(d, name)[env] = 0.0
        d.contact_pos_w[env] = np.nan

    def compute_first_contact(self, dt: float, abs_tol: float = 1.0e-8) -> np.ndarray:
        """Bodies that made contact within the last ``dt`` seconds, (N, B) bool.

        Raises:
            RuntimeError: ``track_air_time`` is off.
        """
        if not self.config.track_air_time:
            raise RuntimeError(f"{self._prefix}: compute_first_contact needs track_air_time")
        touch = self.data.current_contact_time
        return (touch > 0.0) & (touch < dt + abs_tol)

    def compute_first_air(self, dt: float, abs_tol: float = 1.0e-8) -> np.ndarray:
        """Bodies that lost contact within the last ``dt`` seconds, (N, B) bool.

        Raises:
            RuntimeError: ``track_air_time`` is off.
        """
        if not self.config.track_air_time:
            raise RuntimeError(f"{self._prefix}: compute_first_air needs track_air_time")
        air = self.data.current_air_time
        return (air > 0.0) & (air < dt + abs_tol)
