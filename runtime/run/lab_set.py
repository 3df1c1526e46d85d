"""A set of lab sensors over N MuJoCo worlds, updated together: :class:`LabSensorSet`.

``LabSensorSet(sensors, datas).update(dt)`` does what calling ``sensor.update(datas, dt)``
on each sensor does (:meth:`runtime.sensors.lab.base.LabSensor.update`: clocks, due worlds,
histories), with the contact sensors, IMUs, frame transformers, joint wrenches, ray
casters (over box scenes: a height scan over the ground; over scenes with moving geometry
below ``PARALLEL_MIN_RAYS`` rays) and fixed cameras of all worlds in one compiled call
(:func:`runtime.run._lab_set_kernels.lab_set_kernel`, GIL-free, no Python per world or per
sensor) and the other ray casters and cameras (on moving bodies) through their own
``update``. The readings are the per-sensor path's bit for bit; the per-sensor path stays
the reference (``compiled=False`` uses it for every sensor).

The set binds the sensors' arrays and the worlds' ``mjData`` when it is built: it works on
the same arrays as the sensors (``sensor.data``, ``sensor.reset`` and the clocks stay the
sensors' own), and reads each ``mjData`` at its address, so the list of worlds must keep
the same ``mjData`` objects. Without the compiled path (JIT disabled, an ``mjData`` layout
that cannot be verified, a sensor subclass, an IMU of a model with sleeping bodies, a joint
wrench without libmujoco's entry points, :func:`runtime.run._mujoco_native.native`, a ray
caster or camera whose kernel arrays have other types than the compiled call's) a sensor
is updated through its own ``update``; :attr:`LabSensorSet.compiled` names those the
compiled call updates.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from runtime._compile.jit import JIT_DISABLED
from runtime._compile.native_call import native_kernel
from runtime.run import _lab_set_kernels as kernels
from runtime.run._mujoco_native import _FUNCTIONS, layout, native
from runtime.run._native_kernels import array_address
from runtime.sensors.lab import (
    ContactSensor,
    FrameTransformer,
    Imu,
    JointWrenchSensor,
    LabSensor,
    RayCaster,
    RayCasterCamera,
)

__all__ = ["LabSensorSet"]

LOGGER = logging.getLogger("runtime.run")

_CONTACT_FIELDS = ("geom", "efc_address", "dim", "frame", "friction", "pos")
# the dtypes of a pinhole view's bound arrays (runtime.rays.views.PinholeView.kernel_arrays)
_VIEW_TYPES = (np.float32, np.float64, np.int64, np.float64, np.int64, np.float64, np.float64,
               np.float64, np.int64)  # fmt: skip
_CONTACT_LAYOUT: dict[str, int] = {}


def _contact_layout() -> dict[str, int] | None:
    """Byte size of ``mjContact`` and offsets of the fields read, from a scene with a contact."""
    if not _CONTACT_LAYOUT:
        import mujoco

        model = mujoco.MjModel.from_xml_string(
            "<mujoco><worldbody><geom type='plane' size='1 1 1'/><body pos='0 0 0.05'>"
            "<freejoint/><geom size='0.1'/></body></worldbody></mujoco>"
        )
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        if data.ncon < 1:  # pragma: no cover - the sphere rests in the plane
            return None
        contact = data.contact
        start = array_address(contact.dist)
        _CONTACT_LAYOUT["size"] = int(contact.dist.strides[0])
        for name in _CONTACT_FIELDS:
            _CONTACT_LAYOUT[name] = array_address(getattr(contact, name)) - start
    return _CONTACT_LAYOUT


def _flag_offset(data: Any, offsets: dict[str, int]) -> int | None:
    """Byte offset of ``flg_rnepost`` in ``mjData``, verified on ``data``; or None.

    From the struct's declaration: the int counts from ``ncon`` on, then the one-byte flags.
    Verified by setting the flag through the bindings and reading the byte back.
    """
    import ctypes

    from mujoco.introspect import structs

    fields = structs.STRUCTS["mjData"].fields
    names = [f.name for f in fields]
    kinds = [str(f.type) for f in fields]
    if "flg_rnepost" not in names or "ncon" not in names:
        return None
    first, flag = names.index("ncon"), names.index("flg_rnepost")
    ints = [k for k in range(first, flag) if "int" in kinds[k] and "[" not in kinds[k]]
    flags = [k for k in range(first, flag + 1) if "mjtBool" in kinds[k]]
    if len(ints) + len(flags) != flag + 1 - first:
        return None  # (another layout: something else between the counts and the flag)
    offset = offsets["ncon"] + 4 * len(ints) + len(flags) - 1
    byte = ctypes.c_uint8.from_address(int(data._address) + offset)
    kept = bool(data.flg_rnepost)
    try:
        for value in (1, 0):
            data.flg_rnepost = value
            if byte.value != value:
                return None
    finally:
        data.flg_rnepost = kept
    return offset


def _same_structure(a: Any, b: Any) -> bool:
    """The two models have the same bodies, tree, dofs and geoms (masses may differ)."""
    if (a.nbody, a.nv, a.ngeom) != (b.nbody, b.nv, b.ngeom):
        return False
    return all(
        np.array_equal(getattr(a, name), getattr(b, name))
        for name in ("body_parentid", "body_dofadr", "body_dofnum", "geom_bodyid")
    )


def _view_arrays(camera: RayCasterCamera) -> tuple[tuple[np.ndarray, ...], int] | None:
    """A fixed camera's view arrays and the world's index in its int block, or None.

    None: no view (a camera on a moving body, drift), or arrays of other types than the
    compiled call's (the camera then goes through its own ``update``).
    """
    view = getattr(camera, "_view", None)
    if view is None:
        return None
    arrays, env_at = view.kernel_arrays
    if len(arrays) != len(_VIEW_TYPES):
        return None
    for array, dtype in zip(arrays, _VIEW_TYPES, strict=True):
        if array.dtype != dtype or array.ndim != 1 or not array.flags.c_contiguous:
            return None
    if not 0 <= int(env_at) < arrays[4].shape[0]:
        return None
    return tuple(arrays), int(env_at)


_F, _I = np.float64, np.int64
# ray_caster_scene_kernel's arguments after (envs, world addresses), as RayCaster's
# _scene_arguments holds them: "int" / "bool" scalars, else (dtype, dimensions)
_SCENE_SPEC = (
    "int", "bool", (_I, 1), (_I, 1), (_F, 2), (_F, 2), (_F, 2), (_F, 2), (_F, 1), (_F, 1),
    (_F, 2), "int", (_F, 2), (_F, 2), (_F, 1), (_F, 2), (_F, 2), (_F, 1), (_I, 1), (_F, 2),
    (_I, 1), (_I, 1), (np.float32, 3), (_F, 1), (_I, 2), (_I, 1), (_F, 2), (_I, 1), (_I, 1),
    (_I, 1), (_F, 2), (_I, 1), (_I, 1), (_F, 2), (_F, 2), (_F, 2), (_I, 2), (_F, 2), (_F, 2),
    (_I, 1), (_I, 2), (_F, 2), "bool", (_F, 2), (_F, 2), (_F, 2), (_F, 2), (_F, 2), (_F, 3),
    (_F, 2), (_I, 2),
)  # fmt: skip


def _scene_arguments(caster: RayCaster) -> tuple[list[np.ndarray], list[Any]] | None:
    """A ray caster's ``ray_caster_scene_kernel`` arrays and scalars, or None.

    None: no one-call scene path (a box scene, no moving geometry, many rays), or
    arguments of other types than the compiled call's (the caster then goes through its
    own ``update``).
    """
    arguments = getattr(caster, "_scene_arguments", None)
    if caster._boxes is not None or arguments is None or len(arguments) != len(_SCENE_SPEC):
        return None
    arrays: list[np.ndarray] = []
    scalars: list[Any] = []
    for value, spec in zip(arguments, _SCENE_SPEC, strict=True):
        if spec == "bool":
            if not isinstance(value, (bool, np.bool_)):
                return None
            scalars.append(bool(value))
        elif spec == "int":
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                return None
            scalars.append(int(value))
        else:
            dtype, ndim = spec
            if not isinstance(value, np.ndarray) or value.dtype != dtype or value.ndim != ndim:
                return None
            if not value.flags.c_contiguous or not value.flags.writeable:
                return None
            arrays.append(value)
    return arrays, scalars


def _compile_scene_kernel() -> None:
    """``ray_caster_scene_kernel`` compiled (or loaded) for the set's call's types.

    The set's call (compiled without Numba's runtime) calls it; its scene cast allocates, so
    it must be compiled with the runtime first, here: compiled from inside the set's call
    it could not be. Done before the set's call is compiled, whatever its sensors.
    """
    from numba import from_dtype, types

    def numba_type(spec: Any) -> Any:
        if spec == "int":
            return types.int64
        if spec == "bool":
            return types.boolean
        dtype, ndim = spec
        return types.Array(from_dtype(np.dtype(dtype)), ndim, "C")

    index = types.Array(types.int64, 1, "C")
    signature = (index, index, *(numba_type(spec) for spec in _SCENE_SPEC))
    kernels.ray_caster_scene_kernel.compile(signature)


class LabSensorSet:
    """Lab sensors updated together over N worlds.

    Args:
        sensors: the sensors (a mapping by name, e.g. sensor prim path, or a sequence); each
            of N worlds. Disabled sensors are kept and do nothing, as their ``update``.
        datas: the N ``mujoco.MjData`` (world i at index i), the same objects at every
            update.
        compiled: update contact sensors, IMUs, frame transformers, joint wrenches, ray
            casters and fixed cameras in one compiled call (False: every sensor through its
            own ``update``, the reference path).

    Attributes:
        sensors: name -> sensor.
        datas: the worlds.
        compiled: names of the sensors updated by the compiled call.

    Raises:
        ValueError: a sensor is not of N worlds, or a world's model is not the sensors'.
    """

    def __init__(
        self,
        sensors: Mapping[str, LabSensor] | Sequence[LabSensor],
        datas: Sequence[Any],
        compiled: bool = True,
    ) -> None:
        if isinstance(sensors, Mapping):
            self.sensors = dict(sensors)
        else:
            self.sensors = {f"{k}": s for k, s in enumerate(sensors)}
        self.datas = list(datas)
        n = len(self.datas)
        for name, sensor in self.sensors.items():
            if not isinstance(sensor, LabSensor):
                raise TypeError(f"lab sensor set: {name!r} is not a lab sensor: {sensor!r}")
            if sensor.num_envs != n:
                raise ValueError(
                    f"lab sensor set: {name} has {sensor.num_envs} worlds, the set {n} MjData"
                )
        for env, data in enumerate(self.datas):
            for name, sensor in self.sensors.items():
                if sensor.enabled and not _same_structure(data.model, sensor.model):
                    raise ValueError(
                        f"lab sensor set: the model of world {env} has other bodies, dofs or "
                        f"geoms than the model of {name}"
                    )
        self._params = np.zeros(2)  # dt, force_recompute: the compiled call reads them
        self._bound: list[tuple[LabSensor, Any]] = []  # (sensor, its data object)
        self._tables: tuple[Any, ...] = ()  # the compiled call's arrays (kept alive)
        self._call: Any = self._build() if compiled else None
        names = {id(s): name for name, s in self.sensors.items()}
        self.compiled: tuple[str, ...] = tuple(names[id(s)] for s, _ in self._bound)
        bound = {id(s) for s, _ in self._bound}
        self._python = [s for s in self.sensors.values() if s.enabled and id(s) not in bound]

    # ------------------------------------------------------------------ building

    def _build(self) -> Any:
        """The compiled call of the set's sensors of those kinds, or None (none / no path).

        Binds (``self._bound``) the sensors it updates.
        """
        kinds = (ContactSensor, Imu, FrameTransformer, JointWrenchSensor)
        chosen = [
            s
            for s in self.sensors.values()
            if s.enabled
            and (
                type(s) in kinds
                or (type(s) is RayCaster and s._boxes is not None)
                or (type(s) is RayCaster and _scene_arguments(s) is not None)
                or (type(s) is RayCasterCamera and _view_arrays(s) is not None)
            )
        ]
        if not chosen or JIT_DISABLED or not self.datas:
            return None
        offsets = layout(self.datas[0])
        contact = _contact_layout()
        flag = None if offsets is None else _flag_offset(self.datas[0], offsets)
        if offsets is None or contact is None or flag is None:
            LOGGER.debug("lab sensor set: no compiled path (mjData layout not verified)")
            return None
        if any(layout(d) != offsets for d in self.datas[1:]):
            return None
        model = chosen[0].model  # (every sensor's model has the worlds' structure: checked)
        functions = native() if any(type(s) is JointWrenchSensor for s in chosen) else None
        chosen = [
            s
            for s in chosen
            if not (isinstance(s, Imu) and not self._chain_exact(s))
            and not (isinstance(s, JointWrenchSensor) and functions is None)
        ]
        if not chosen:
            return None
        shared = np.zeros(kernels.S_SIZE, np.int64)
        for index, name in (
            (kernels.D_NCON, "ncon"), (kernels.D_NEFC, "nefc"), (kernels.D_CONTACT, "contact"),
            (kernels.D_EFC_FORCE, "efc_force"), (kernels.D_XPOS, "xpos"),
            (kernels.D_XQUAT, "xquat"), (kernels.D_CVEL, "cvel"), (kernels.D_CACC, "cacc"),
            (kernels.D_SUBTREE_COM, "subtree_com"), (kernels.D_QVEL, "qvel"),
            (kernels.D_QACC, "qacc"), (kernels.D_CDOF, "cdof"),
            (kernels.D_CDOF_DOT, "cdof_dot"),
        ):  # fmt: skip
            shared[index] = offsets[name]
        shared[kernels.D_FLG_RNEPOST] = flag
        shared[kernels.CON_SIZE] = contact["size"]
        for index, name in zip(
            (kernels.CON_GEOM, kernels.CON_EFC_ADDRESS, kernels.CON_DIM, kernels.CON_FRAME,
             kernels.CON_FRICTION, kernels.CON_POS),
            _CONTACT_FIELDS, strict=True,
        ):  # fmt: skip
            shared[index] = contact[name]
        shared[kernels.M_NBODY] = model.nbody
        shared[kernels.M_NV] = model.nv
        shared[kernels.D_CFRC_INT] = offsets["cfrc_int"]
        if functions is not None:  # (mj_rnePostConstraint: the joint wrenches)
            rne_post = _FUNCTIONS.index("mj_rnePostConstraint")
            shared[kernels.FN_RNE_POST] = functions["functions"][rne_post]
        rows = np.zeros((len(chosen), kernels.R_SIZE), np.int64)
        floats = np.zeros((len(chosen), kernels.F_SIZE))
        keep: list[Any] = []  # arrays made here, whose addresses the rows hold
        for s, sensor in enumerate(chosen):
            self._clock_row(sensor, rows[s], floats[s])
            if isinstance(sensor, ContactSensor):
                self._contact_row(sensor, rows[s], floats[s], keep)
            elif isinstance(sensor, Imu):
                self._imu_row(sensor, rows[s], keep)
            elif isinstance(sensor, FrameTransformer):
                self._frames_row(sensor, rows[s], keep)
            elif isinstance(sensor, JointWrenchSensor):
                self._wrench_row(sensor, rows[s], keep)
            elif isinstance(sensor, RayCasterCamera):
                self._view_row(sensor, rows[s], keep)
            elif sensor._boxes is not None:
                self._ray_boxes_row(sensor, rows[s], floats[s], keep)
            else:
                self._ray_scene_row(sensor, rows[s], keep)
            self._bound.append((sensor, sensor.data))
        worlds = np.array(
            [(int(d._address), int(d.model._address)) for d in self.datas], np.int64
        ).reshape(-1, 2)
        arguments = (rows, floats, worlds, shared, self._params)
        self._tables = (*arguments, keep)
        _compile_scene_kernel()
        call = native_kernel(kernels.lab_set_kernel, arguments)
        if call is None:  # (no native calls: the dispatcher)
            kernel = kernels.lab_set_kernel

            def call() -> None:
                kernel(*arguments)

        return call

    def _chain_exact(self, imu: Imu) -> bool:
        """The IMU's chain accelerations are ``mj_rnePostConstraint``'s in every world.

        Every world's model has the IMU model's gravity and gravity flag, and no sleeping
        bodies (``mjENBL_SLEEP``: MuJoCo then skips the bodies of sleeping trees).
        """
        import mujoco

        sleeping = int(mujoco.mjtEnableBit.mjENBL_SLEEP)
        off = int(mujoco.mjtDisableBit.mjDSBL_GRAVITY)
        own = imu.model.opt
        for data in self.datas:
            opt = data.model.opt
            if opt.enableflags & sleeping or (opt.disableflags & off) != (own.disableflags & off):
                return False
            if not np.array_equal(opt.gravity, own.gravity):
                return False
        return True

    @staticmethod
    def _clock_row(sensor: LabSensor, row: np.ndarray, floats: np.ndarray) -> None:
        for array in (sensor.timestamp, sensor.timestamp_last_update, sensor._elapsed):
            assert array.dtype == np.float64 and array.flags.c_contiguous
        assert sensor._outdated.dtype == np.bool_ and sensor._outdated.itemsize == 1
        row[kernels.R_N] = sensor.num_envs
        row[kernels.R_TIMESTAMP] = array_address(sensor.timestamp)
        row[kernels.R_LAST] = array_address(sensor.timestamp_last_update)
        row[kernels.R_OUTDATED] = array_address(sensor._outdated)
        row[kernels.R_ELAPSED] = array_address(sensor._elapsed)
        histories = sensor._flat_histories
        if len(histories) > kernels.MAX_HISTORIES:  # pragma: no cover - by construction
            raise AssertionError("too many history fields for the compiled lab set")
        row[kernels.R_HISTORIES] = len(histories)
        for h, (values, history) in enumerate(histories):
            assert values.flags.c_contiguous and history.flags.c_contiguous
            k = kernels.R_HISTORY + 4 * h
            row[k : k + 4] = (
                array_address(values), array_address(history), values.shape[1], history.shape[1],
            )  # fmt: skip
        floats[kernels.F_PERIOD] = sensor.update_period

    @staticmethod
    def _contact_row(
        sensor: ContactSensor, row: np.ndarray, floats: np.ndarray, keep: list[Any]
    ) -> None:
        d = sensor.data
        b, m = sensor._count.shape
        bodies = sensor.bodies
        pose_body = np.array(
            [
                -1 if bodies.is_static[e] else int(bodies.body_ids[e])
                for e in sensor._sensor_entities
            ],
            np.int64,
        )
        static = np.zeros((b, 7))
        for i, e in enumerate(sensor._sensor_entities):
            if bodies.is_static[e]:
                static[i, :3] = bodies.static_positions[e]
                static[i, 3:] = bodies.static_orientations[e]
        keep += [pose_body, static]
        for array in (d.net_forces_w, d.force_matrix_w, d.friction_forces_w, d.contact_pos_w,
                      d._times, d.pos_w, d.quat_w, sensor._count):  # fmt: skip
            assert array.dtype == np.float64 and array.flags.c_contiguous
        for array in (sensor._geom_entity, sensor._sensor_slot, sensor._filter_slot):
            assert array.dtype == np.int64 and array.flags.c_contiguous
        row[kernels.R_KIND] = kernels.KIND_CONTACT
        row[kernels.C_B], row[kernels.C_M] = b, m
        row[kernels.C_GEOM_ENTITY] = array_address(sensor._geom_entity)
        row[kernels.C_NGEOM] = sensor._geom_entity.shape[0]
        row[kernels.C_SENSOR_SLOT] = array_address(sensor._sensor_slot)
        row[kernels.C_ENTITIES] = sensor._sensor_slot.shape[0]
        row[kernels.C_FILTER_SLOT] = array_address(sensor._filter_slot)
        row[kernels.C_SCRATCH] = array_address(sensor._count)
        row[kernels.C_NET] = array_address(d.net_forces_w)
        row[kernels.C_MATRIX] = array_address(d.force_matrix_w)
        row[kernels.C_FRICTION] = array_address(d.friction_forces_w)
        row[kernels.C_POINTS] = array_address(d.contact_pos_w)
        row[kernels.C_TIMES] = array_address(d._times)
        row[kernels.C_PYRAMIDAL] = int(sensor._pyramidal)
        row[kernels.C_AIR_TIME] = int(bool(sensor.config.track_air_time))
        row[kernels.C_POSE] = int(bool(sensor.config.track_pose))
        row[kernels.C_POSE_BODY] = array_address(pose_body)
        row[kernels.C_POSE_STATIC] = array_address(static)
        row[kernels.C_POS_W] = array_address(d.pos_w)
        row[kernels.C_QUAT_W] = array_address(d.quat_w)
        floats[kernels.F_THRESHOLD] = sensor._threshold

    @staticmethod
    def _imu_row(sensor: Imu, row: np.ndarray, keep: list[Any]) -> None:
        import mujoco

        model = sensor.model
        d = sensor.data
        chain = []
        body = sensor._body
        while body > 0:
            chain.append((body, int(model.body_dofadr[body]), int(model.body_dofnum[body])))
            body = int(model.body_parentid[body])
        chain_array = np.array(chain[::-1], np.int64).reshape(-1, 3)
        scratch = np.zeros((model.nbody, 6))
        keep += [chain_array, scratch]
        for array in (sensor._offset_pos, sensor._offset_rot, sensor._gravity, sensor._bias,
                      d.pos_w, d.quat_w, d.projected_gravity_b, d.lin_vel_b, d.ang_vel_b,
                      d.lin_acc_b, d.ang_acc_b):  # fmt: skip
            assert array.dtype == np.float64 and array.flags.c_contiguous
        gravity_off = model.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_GRAVITY)
        row[kernels.R_KIND] = kernels.KIND_IMU
        row[kernels.I_BODY] = sensor._body
        row[kernels.I_ROOT] = sensor._root
        row[kernels.I_OFFSET_POS] = array_address(sensor._offset_pos)
        row[kernels.I_OFFSET_ROT] = array_address(sensor._offset_rot)
        row[kernels.I_GRAVITY] = array_address(sensor._gravity)
        row[kernels.I_BIAS] = array_address(sensor._bias)
        for index, array in (
            (kernels.I_POS, d.pos_w), (kernels.I_QUAT, d.quat_w),
            (kernels.I_PROJECTED, d.projected_gravity_b), (kernels.I_LIN_VEL, d.lin_vel_b),
            (kernels.I_ANG_VEL, d.ang_vel_b), (kernels.I_LIN_ACC, d.lin_acc_b),
            (kernels.I_ANG_ACC, d.ang_acc_b),
        ):  # fmt: skip
            row[index] = array_address(array)
        row[kernels.I_CHAIN] = array_address(chain_array)
        row[kernels.I_CHAIN_LENGTH] = chain_array.shape[0]
        row[kernels.I_CACC] = array_address(scratch)
        row[kernels.I_GRAVITY_ON] = 0 if gravity_off else 1

    @staticmethod
    def _frames_row(sensor: FrameTransformer, row: np.ndarray, keep: list[Any]) -> None:
        bodies = sensor.bodies
        entities = [sensor._source_entity] + [t[0] for t in sensor._targets]
        offsets = [sensor._source_offset] + [(t[1], t[2]) for t in sensor._targets]
        ids = np.array(
            [-1 if bodies.is_static[e] else int(bodies.body_ids[e]) for e in entities], np.int64
        )
        frames = np.zeros((len(entities), 14))
        for i, (entity, (pos, rot)) in enumerate(zip(entities, offsets, strict=True)):
            frames[i, :3], frames[i, 3:7] = pos, rot
            if bodies.is_static[entity]:
                frames[i, 7:10] = bodies.static_positions[entity]
                frames[i, 10:] = bodies.static_orientations[entity]
        keep += [ids, frames]
        d = sensor.data
        row[kernels.R_KIND] = kernels.KIND_FRAMES
        row[kernels.T_M] = len(entities) - 1
        row[kernels.T_BODIES] = array_address(ids)
        row[kernels.T_FRAMES] = array_address(frames)
        for index, array in (
            (kernels.T_SOURCE_POS, d.source_pos_w), (kernels.T_SOURCE_QUAT, d.source_quat_w),
            (kernels.T_TARGET_POS_W, d.target_pos_w), (kernels.T_TARGET_QUAT_W, d.target_quat_w),
            (kernels.T_TARGET_POS, d.target_pos_source),
            (kernels.T_TARGET_QUAT, d.target_quat_source),
        ):  # fmt: skip
            assert array.dtype == np.float64 and array.flags.c_contiguous
            row[index] = array_address(array)

    @staticmethod
    def _wrench_row(sensor: JointWrenchSensor, row: np.ndarray, keep: list[Any]) -> None:
        ids = np.ascontiguousarray(sensor._ids, np.int64)
        roots = np.ascontiguousarray(sensor._roots, np.int64)
        keep += [ids, roots]
        wrench = sensor.data.body_incoming_joint_wrench_b
        assert wrench.dtype == np.float64 and wrench.flags.c_contiguous
        row[kernels.R_KIND] = kernels.KIND_WRENCH
        row[kernels.W_J] = ids.shape[0]
        row[kernels.W_BODIES] = array_address(ids)
        row[kernels.W_ROOTS] = array_address(roots)
        row[kernels.W_WRENCH] = array_address(wrench)

    @staticmethod
    def _ray_boxes_row(
        sensor: RayCaster, row: np.ndarray, floats: np.ndarray, keep: list[Any]
    ) -> None:
        positions, orientations = sensor._body_poses
        boxes, actors = sensor._boxes
        d = sensor.data
        env = np.zeros(1, np.int64)
        keep.append(env)
        floating = (positions, orientations, sensor._offset_pos, sensor._offset_rot,
                    sensor._drift, sensor.ray_starts, sensor.ray_directions, boxes, d.pos_w,
                    d.quat_w, d.ray_hits_w, d.ray_distances)  # fmt: skip
        for array in floating:
            assert array.dtype == np.float64 and array.flags.c_contiguous
        for array in (actors, d.ray_hit_ids):
            assert array.dtype == np.int64 and array.flags.c_contiguous
        row[kernels.R_KIND] = kernels.KIND_RAY_BOXES
        row[kernels.B_BODY] = -1 if sensor._static else sensor._body
        row[kernels.B_ALIGNMENT] = sensor._alignment
        row[kernels.B_RAYS] = sensor.ray_starts.shape[0]
        row[kernels.B_NBOXES], row[kernels.B_COLUMNS] = boxes.shape
        row[kernels.B_ENV] = array_address(env)
        for index, array in zip(
            (kernels.B_POSITIONS, kernels.B_ORIENTATIONS, kernels.B_OFFSET_POS,
             kernels.B_OFFSET_ROT, kernels.B_DRIFT, kernels.B_STARTS, kernels.B_DIRECTIONS,
             kernels.B_BOXES, kernels.B_POS, kernels.B_QUAT, kernels.B_HITS,
             kernels.B_DISTANCES),
            floating, strict=True,
        ):  # fmt: skip
            row[index] = array_address(array)
        row[kernels.B_ACTORS] = array_address(actors)
        row[kernels.B_HIT_IDS] = array_address(d.ray_hit_ids)
        floats[kernels.F_MAX_DISTANCE] = sensor._max_distance

    @staticmethod
    def _ray_scene_row(sensor: RayCaster, row: np.ndarray, keep: list[Any]) -> None:
        arrays, (body, static, alignment, double_sided) = _scene_arguments(sensor)
        assert len(arrays) == kernels.SCENE_ARRAYS
        table = np.zeros((len(arrays), 4), np.int64)
        for k, array in enumerate(arrays):
            table[k, 0] = array_address(array)
            table[k, 1 : 1 + array.ndim] = array.shape
        addresses = np.zeros(2 * sensor.num_envs, np.int64)
        env = np.zeros(1, np.int64)
        keep += [table, addresses, env, arrays]
        row[kernels.R_KIND] = kernels.KIND_RAY_SCENE
        row[kernels.SC_TABLE] = array_address(table)
        row[kernels.SC_BODY] = body
        row[kernels.SC_STATIC] = int(static)
        row[kernels.SC_ALIGNMENT] = alignment
        row[kernels.SC_DOUBLE_SIDED] = int(double_sided)
        row[kernels.SC_ADDRESSES] = array_address(addresses)
        row[kernels.SC_ENV] = array_address(env)

    @staticmethod
    def _view_row(sensor: RayCasterCamera, row: np.ndarray, keep: list[Any]) -> None:
        arrays, env_at = _view_arrays(sensor)
        count = np.zeros(1, np.int64)
        keep += [count, arrays]
        row[kernels.R_KIND] = kernels.KIND_VIEW
        for k, array in enumerate(arrays):
            row[kernels.V_ARRAY + 2 * k] = array_address(array)
            row[kernels.V_ARRAY + 2 * k + 1] = array.shape[0]
        row[kernels.V_ENV_AT] = env_at
        row[kernels.V_COUNT] = array_address(count)

    # ------------------------------------------------------------------ compiled step

    def part_blocks(
        self, dt: float, forward: tuple[int, int, int] | None, copies: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The blocks of :func:`runtime.run._lab_set_kernels.lab_set_part_kernel`, or None.

        The set's update as a part of ``simrt run``'s compiled step: only when the compiled
        call updates every enabled sensor of the set (None otherwise). Its int block's
        ``P_TABLE`` / ``P_SI`` columns are left for the fused step (its table and step
        integers). The sensors' data objects must not be replaced afterwards (not checked
        per step).

        Args:
            dt: each update's dt [s].
            forward: ``(the engine's forward-reuse block address, mjModel address, mjData
                address)``: ``mj_forward`` before each update, armed for the next step's
                reuse (``runtime.run._forward_kernels``), or None.
            copies: int64 (C, 3), kept alive by the caller: per recorded array its
                recorder channel, source address and bytes (copied into the step's row).

        Returns:
            ``(floats (1, 1), ints (1, P_SIZE))``.
        """
        if self._call is None or self._python or len(self.datas) < 1:
            return None
        assert copies.dtype == np.int64 and copies.flags.c_contiguous and copies.shape[1:] == (3,)
        rows, floats, worlds, shared, params = self._tables[:5]
        ints = np.zeros((1, kernels.P_SIZE), np.int64)
        b = ints[0]
        b[kernels.P_ROWS] = array_address(rows)
        b[kernels.P_SENSORS] = rows.shape[0]
        b[kernels.P_FLOATS] = array_address(floats)
        b[kernels.P_WORLDS] = array_address(worlds)
        b[kernels.P_NWORLDS] = worlds.shape[0]
        b[kernels.P_SHARED] = array_address(shared)
        b[kernels.P_PARAMS] = array_address(params)
        if forward is not None:
            b[kernels.P_FORWARD], b[kernels.P_MODEL], b[kernels.P_DATA] = forward
        b[kernels.P_COPIES] = array_address(copies) if copies.size else 0
        b[kernels.P_NCOPIES] = copies.shape[0]
        blocks = np.full((1, 1), float(dt)), ints
        return blocks

    # ------------------------------------------------------------------ stepping

    def update(self, dt: float, force_recompute: bool = False) -> None:
        """Advance every sensor's clocks by ``dt`` and recompute its due worlds.

        Args:
            dt: time since the last update [s].
            force_recompute: recompute every world of every sensor now.
        """
        if self._call is not None:
            for sensor, data in self._bound:
                if sensor.data is not data:
                    raise RuntimeError(
                        f"lab sensor set: {sensor._prefix}: its data object was replaced "
                        "after the set was built"
                    )
            params = self._params
            params[0] = dt
            params[1] = 1.0 if force_recompute else 0.0
            self._call()
        datas = self.datas
        for sensor in self._python:
            sensor.update(datas, dt, force_recompute)

    def reset(self, env_ids: Sequence[int] | None = None) -> None:
        """Reset the clocks, histories and per-world state of ``env_ids`` (None: all)."""
        for sensor in self.sensors.values():
            sensor.reset(env_ids)
