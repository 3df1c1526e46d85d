"""Contact sensor (``IsaacContactSensor``, docs/sensors/contact.md).

All contact sensors of a runtime are evaluated by one :class:`ContactBatch` kernel call per
step. Configuration (``enabled``, ``threshold``, ``radius``, the sensor transform) is live:
USD edits are picked up at the next step through USD change notices
(docs/sensors/index.md#configuration).

Bookkeeping quirk (3.2): the reference keeps, per unordered body pair, only the points of
the pair's *last* report event (a compound body touching the same body with several shapes
loses the earlier shapes' points). Reproduced when the state carries
``PhysicsState.contact_events``; without event ids every contact point of the step counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from runtime._compile.jit import CompiledCall
from runtime._quat import rotate_by_parts
from runtime.sensors.base import SensorBase
from runtime.sensors.kinds import FusedPart
from runtime.sensors.state import PhysicsState

__all__ = [
    "ContactBatch",
    "ContactReading",
    "ContactSensor",
    "RawContact",
    "last_event_contacts",
]


def last_event_contacts(
    contact_body0: np.ndarray, contact_body1: np.ndarray, contact_events: np.ndarray
) -> np.ndarray:
    """Indices of the contact points that survive the reference's bookkeeping (3.2).

    Per unordered body pair, only the points of the pair's last event (in report order)
    are kept.

    Args:
        contact_body0: (C,), int64 body indices.
        contact_body1: (C,), int64 body indices or -1.
        contact_events: (C,), int64 event id per point.

    Returns:
        (K,), int64 indices into the contact arrays, increasing.
    """
    lo = np.minimum(contact_body0, contact_body1) + 1
    hi = np.maximum(contact_body0, contact_body1) + 1
    key = lo * (int(hi.max(initial=0)) + 1) + hi
    _, inverse = np.unique(key, return_inverse=True)
    last = np.zeros(int(inverse.max(initial=-1)) + 1, np.int64)
    np.maximum.at(last, inverse, np.arange(key.shape[0]))
    keep = contact_events == contact_events[last[inverse]]
    return np.flatnonzero(keep).astype(np.int64)


@dataclass(frozen=True)
class ContactReading:
    """One contact-sensor reading.

    Attributes:
        time: ``float32(t_k)`` of the producing step [s]; 0 when invalid.
        step: physics step counter of the producing step; 0 when invalid.
        value: net contact force magnitude after thresholds [mass x stage length / s^2].
        in_contact: True when ``value`` passed the minimum threshold.
        number_of_contacts: raw contact points of the parent body this step (unfiltered).
        is_valid: see docs/sensors/index.md#validity.
    """

    time: float = 0.0
    step: int = 0
    value: float = 0.0
    in_contact: bool = False
    number_of_contacts: int = 0
    is_valid: bool = False


# reading field -> (packed block: "i" ints / "f" floats, column); the blocks' layouts are
# runtime.sensors._contact_kernels'
READING_COLUMNS = {
    "time": ("f", 7),
    "step": ("i", 5),
    "value": ("f", 6),
    "in_contact": ("i", 2),
    "number_of_contacts": ("i", 3),
}


@dataclass(frozen=True)
class RawContact:
    """One raw contact point of the parent body (not sign-corrected, not filtered).

    Attributes:
        body0: USD path of body0 (the impulse acts on it).
        body1: USD path of body1 (``""`` when not a listed body).
        position: contact point, (3,), float64, stage units, world.
        normal: contact normal, (3,), float64, world.
        impulse: impulse on body0, (3,), float64, mass x stage units / s, world.
        time: report time [s].
        dt: report dt [s].
    """

    body0: str
    body1: str
    position: np.ndarray
    normal: np.ndarray
    impulse: np.ndarray
    time: float
    dt: float


class ContactBatch:
    """Struct-of-arrays for every contact sensor of a runtime; one kernel call per step.

    Args:
        runtime: the owning :class:`~runtime.sensors.runtime.SensorRuntime`.
        sensors: the contact sensors (bound or disabled), in order.
    """

    def __init__(self, runtime: Any, sensors: list[ContactSensor]) -> None:
        from runtime.sensors._contact_kernels import contact_update_kernel

        self._call = CompiledCall(contact_update_kernel)
        self.runtime = runtime
        self.sensors = sensors
        n = len(sensors)
        # Packed layouts (one block per dtype, configuration columns then readings): see
        # runtime.sensors._contact_kernels. The attributes below are views of the blocks.
        self._float_block = np.zeros((n, 8))
        self._int_block = np.zeros((n, 6), np.int64)
        self.floats = self._float_block[:, 0:6]
        self.floats[:, 3] = -1.0
        self.ints = self._int_block[:, 0:2]
        self.out_floats = self._float_block[:, 6:8]
        self.out_ints = self._int_block[:, 2:6]
        self.last_state: PhysicsState | None = None
        self.kept_contacts: np.ndarray | None = None
        self._no_dts = np.zeros(0)
        for i, sensor in enumerate(sensors):
            sensor._attach(self, i)

    @property
    def active(self) -> np.ndarray:
        """Active flag per sensor, (S,), int64 (view)."""
        return self.ints[:, 1]

    @property
    def bodies(self) -> np.ndarray:
        """Parent body index per sensor, (S,), int64 (view)."""
        return self.ints[:, 0]

    @property
    def offsets(self) -> np.ndarray:
        """Sensor origin in the parent body frame, (S, 3), stage units (view)."""
        return self.floats[:, 0:3]

    @property
    def radius(self) -> np.ndarray:
        """Filter radius per sensor, (S,), stage units (view)."""
        return self.floats[:, 3]

    def update(self, state: PhysicsState, indices: np.ndarray | None = None) -> None:
        """Evaluate the sensors (all, or ``indices``) for ``state``.

        Args:
            state: the physics state after the step.
            indices: sensor indices to evaluate (K ints); None = all.
        """
        dts = state.contact_dts
        if dts is None:
            dts = self._no_dts
        if state.contact_events is None or not state.contact_body0.shape[0]:
            self.kept_contacts = None
            body0 = state.contact_body0
            body1 = state.contact_body1
            positions = state.contact_positions
            impulses = state.contact_impulses
        else:
            # Fancy indexing returns fresh C-contiguous arrays, as the kernel needs.
            body0 = state.contact_body0
            kept = last_event_contacts(body0, state.contact_body1, state.contact_events)
            self.kept_contacts = kept
            body0 = body0[kept]
            body1 = state.contact_body1[kept]
            positions = state.contact_positions[kept]
            impulses = state.contact_impulses[kept]
            if dts.shape[0]:
                dts = dts[kept]
        # dt / time / step go through as they are (the kernel casts them); -1 = all sensors.
        args = (
            state.body_positions,
            state.body_orientations,
            body0,
            body1,
            positions,
            impulses,
            dts,
            state.dt,
            state.time,
            state.step,
            -1,
            self._float_block,
            self._int_block,
        )
        call = self._call
        if indices is not None:  # one sensor per call: its row replaces the -1
            for i in indices:
                call.kernel(*args[:10], int(i), *args[11:])
        elif state.verified:  # conventions guaranteed: the compiled entry, no type dispatch
            (call.entry or call.record)(*args)
        else:
            call.kernel(*args)
        self.last_state = state

    def fused_part(self, fused: Any) -> FusedPart:
        """The batch's part of the compiled step: the built-in contact part, on its blocks."""
        return FusedPart("contact", self, floats=self._float_block, ints=self._int_block)

    def fused_leave(self, state: PhysicsState, steps: int) -> None:
        """After ``steps`` compiled steps: the bookkeeping :meth:`update` keeps."""
        self.kept_contacts = None
        self.last_state = state

    def arrays(self) -> dict[str, np.ndarray]:
        """All contact readings as arrays (invalid rows hold the default reading).

        Returns:
            ``value`` (S,), ``in_contact`` (S,) bool, ``number_of_contacts`` (S,),
            ``time`` (S,), ``step`` (S,), ``is_valid`` (S,) bool.
        """
        valid = (self.out_ints[:, 2] != 0) & (self.ints[:, 1] != 0)
        return {
            "value": np.where(valid, self.out_floats[:, 0], 0.0),
            "in_contact": valid & (self.out_ints[:, 0] != 0),
            "number_of_contacts": np.where(valid, self.out_ints[:, 1], 0),
            "time": np.where(valid, self.out_floats[:, 1], 0.0),
            "step": np.where(valid, self.out_ints[:, 3], 0),
            "is_valid": valid,
        }


class ContactSensor(SensorBase):
    """``IsaacContactSensor``: net contact force on the parent rigid body (docs/sensors/contact.md).

    Args:
        prim_path: USD path of the ``IsaacContactSensor`` prim.
    """

    kind = "contact"
    type_name = "IsaacContactSensor"
    batch_type = ContactBatch

    def __init__(self, prim_path: str) -> None:
        super().__init__(prim_path)
        self.config: Any = None
        self.body_path = ""
        self._batch: ContactBatch | None = None
        self._index = -1
        self._usd_enabled = True
        self._deleted = False

    def bind(self, runtime: Any) -> None:
        """Resolve the parent body and read the configuration.

        Args:
            runtime: the owning runtime.

        Raises:
            SchemaError: missing prim, wrong type, no parent rigid body, body not in the
                physics state, or malformed attributes.
        """
        self._runtime = runtime
        self._read_config()

    def _read_config(self) -> None:
        from runtime.errors import SchemaError
        from runtime.schema.readers import read_contact_sensor

        runtime = self._runtime
        prim = runtime.stage.GetPrimAtPath(self.prim_path)
        if not prim or not prim.IsValid():
            raise SchemaError(self.prim_path, "", "prim does not exist", "an IsaacContactSensor")
        config = read_contact_sensor(prim)
        body = runtime.body_index(config.parent_body)
        self.config = config
        self.body_path = config.parent_body
        self._usd_enabled = config.enabled
        self._body = body
        self._push_config()

    def _push_config(self) -> None:
        batch = self._batch
        if batch is None or self.config is None:
            return
        i = self._index
        c = self.config
        batch.ints[i, 0] = self._body
        batch.floats[i] = (
            *c.translation_in_body,
            c.radius,
            float(np.float32(c.threshold_min)),
            float(np.float32(c.threshold_max)),
        )
        self._on_enabled_changed()

    def _attach(self, batch: ContactBatch, index: int) -> None:
        self._batch = batch
        self._index = index
        self._push_config()
        self._on_enabled_changed()

    def _on_enabled_changed(self) -> None:
        if self._batch is not None:
            active = (
                self._enabled
                and self._usd_enabled
                and self.disabled_reason is None
                and not self._deleted
            )
            self._batch.ints[self._index, 1] = 1 if active else 0

    def on_usd_changed(self) -> None:
        """Re-read ``enabled`` / ``threshold`` / ``radius`` / transform after USD edits."""
        prim = self._runtime.stage.GetPrimAtPath(self.prim_path)
        if not prim or not prim.IsValid():
            self._deleted = True
            self._on_enabled_changed()
            return
        self._deleted = False
        self._read_config()

    def fused_row(self, fused: Any, tap: Any) -> Any:
        """The sensor's recording row in the compiled step (the contact part's writer)."""
        return fused.builtin_row("contact", self, tap)

    def update(self, state: PhysicsState) -> None:
        """Evaluate this sensor only (the runtime normally evaluates the whole batch).

        Args:
            state: the physics state after the step.
        """
        if self._batch is not None:
            self._batch.update(state, [self._index])

    def reading(self) -> ContactReading:
        """The latest reading (invalid before the first step, while disabled or deleted).

        Returns:
            The reading.
        """
        rows = self._reading_rows()
        if rows is None:
            return ContactReading()
        blocks = {"i": rows[0].tolist(), "f": rows[1].tolist()}
        values = {name: blocks[block][column] for name, (block, column) in READING_COLUMNS.items()}
        values["in_contact"] = bool(values["in_contact"])
        return ContactReading(**values, is_valid=True)

    def in_contact(self) -> bool:
        """``reading().in_contact`` without building the reading (False when invalid)."""
        rows = self._reading_rows()
        return rows is not None and bool(rows[0][READING_COLUMNS["in_contact"][1]])

    def _reading_rows(self) -> tuple[np.ndarray, np.ndarray] | None:
        """This sensor's rows of its batch's int and float blocks; None: invalid reading."""
        b = self._batch
        if b is None:
            return None
        ints = b._int_block[self._index]
        if not ints[1] or not ints[4]:
            return None
        return ints, b._float_block[self._index]

    def world_position(self) -> np.ndarray:
        """Sensor world position at the last step (parent body pose applied to the offset).

        Returns:
            (3,), float64, stage units, world; zeros before the first step.
        """
        b = self._batch
        state = None if b is None else b.last_state
        if state is None or self.config is None:
            return np.zeros(3)
        q = state.body_orientations[self._body]
        v = np.asarray(self.config.translation_in_body, dtype=np.float64)
        return state.body_positions[self._body] + rotate_by_parts(q[0], q[1:], v)

    def raw_contacts(self) -> list[RawContact]:
        """The current step's raw contact points of the parent body.

        See docs/sensors/contact.md#outputs.

        Returns:
            Records in state order; empty when the reading is invalid.
        """
        b = self._batch
        if b is None or not self.reading().is_valid:
            return []
        state = b.last_state
        paths = state.body_paths
        records = []
        kept = range(state.contact_count) if b.kept_contacts is None else b.kept_contacts
        for c in kept:
            c = int(c)
            b0 = int(state.contact_body0[c])
            b1 = int(state.contact_body1[c])
            if self._body not in (b0, b1):
                continue
            dt = float(state.dt)
            if state.contact_dts is not None and state.contact_dts[c] > 0.0:
                dt = float(state.contact_dts[c])
            records.append(
                RawContact(
                    body0=paths[b0],
                    body1=paths[b1] if b1 >= 0 else "",
                    position=state.contact_positions[c].copy(),
                    normal=state.contact_normals[c].copy(),
                    impulse=state.contact_impulses[c].copy(),
                    time=float(state.time),
                    dt=dt,
                )
            )
        return records

    def reset(self) -> None:
        """Invalidate the reading until the next step (stop/start)."""
        if self._batch is not None:
            i = self._index
            self._batch.out_ints[i] = 0
            self._batch.out_floats[i, 0:2] = 0.0
