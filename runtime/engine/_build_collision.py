"""Collision-filter step of the USD -> MuJoCo builder: groups, filtered pairs, exclusions.

Reference-pose overlaps
-----------------------
Converted URDFs often have collision shapes of *non-adjacent* links of one articulation that
already overlap at the authored pose (Talos: the hands inside the thighs; solo12: legs and
base). With self-collisions on (the PhysX default) the solver pushes them apart at the first
step and the articulation explodes. Policy (on by default): the model is compiled once,
placed at its initial configuration (authored pose, joint positions clamped into their
limits), and MuJoCo's own collision detection lists the contacts with a negative distance;
every such pair of bodies of the *same* articulation (MuJoCo already skips parent-child
pairs) becomes a MuJoCo ``exclude`` pair, logged once as ``N body pairs overlapping at the
reference pose excluded: ...``. Pairs that do not touch at the reference pose keep
colliding. Turn it off with ``build_model(..., exclude_reference_overlaps=False)`` or the
PhysicsScene setting ``customData["simrt"]["excludeReferenceOverlaps"] = False``.
"""

from __future__ import annotations

from collections.abc import Mapping

import mujoco
import numpy as np
from pxr import Usd, UsdPhysics

from runtime.engine._build_base import LOG, BuildContext
from runtime.engine._build_types import JointRecord
from runtime.errors import SchemaError

#: ``customData["simrt"]`` key of the PhysicsScene turning the overlap policy on / off.
OVERLAP_SETTING = "excludeReferenceOverlaps"

#: At most this many pairs are spelled out in the log message.
_LIST_LIMIT = 60


class CollisionFilterStep(BuildContext):
    """Collision groups -> contype / conaffinity bits; filtered pairs -> exclude pairs."""

    def collision_groups(self, parsed: dict) -> None:
        self.shape_groups = {}
        group_list = parsed.get("CollisionGroup", [])
        bits: dict[str, int] = {}
        for path, _desc in group_list:
            if len(bits) >= 31:
                self.warn(path, "more than 31 collision groups; group ignored for filtering")
                continue
            bits[path] = len(bits) + 1
        self.groups = bits
        full = (1 << (len(bits) + 1)) - 1
        affinity = {0: full}
        for path, desc in group_list:
            if path not in bits:
                continue
            filtered = {str(p) for p in desc.filteredGroups}
            mask = full
            invert = bool(
                UsdPhysics.CollisionGroup(self.stage.GetPrimAtPath(path))
                .GetInvertFilteredGroupsAttr()
                .Get()
            )
            if invert:
                mask = 1 | (1 << bits[path])
                for other in filtered:
                    if other in bits:
                        mask |= 1 << bits[other]
            else:
                for other in filtered:
                    if other in bits:
                        mask &= ~(1 << bits[other])
            affinity[bits[path]] = mask
            prim = self.stage.GetPrimAtPath(path)
            coll = UsdPhysics.CollisionGroup(prim).GetCollidersCollectionAPI()
            query = coll.ComputeMembershipQuery()
            for member in Usd.CollectionAPI.ComputeIncludedPaths(query, self.stage):
                self.shape_groups.setdefault(str(member), []).append(path)
        # symmetric filtering: if A filters B, B must not accept A either
        for _a_path, a_bit in bits.items():
            for _b_path, b_bit in bits.items():
                if not (affinity[a_bit] >> b_bit) & 1:
                    affinity[b_bit] &= ~(1 << a_bit)
        self.affinity = affinity

    def exclusions(self, joints: list[JointRecord], parsed: dict) -> None:
        pairs: set[tuple[str, str]] = set()
        for j in joints:
            if j.body0 and j.body1 and not j.desc.collisionEnabled:
                pairs.add(tuple(sorted((j.body0, j.body1))))
        for key, items in parsed.items():
            for path, desc in items:
                filtered = getattr(desc, "filteredCollisions", None)
                if not filtered:
                    continue
                if path not in self.bodies:
                    if key != "Articulation":
                        self.warn(path, "filtered pairs on a shape are applied to its whole body")
                owner = path if path in self.bodies else str(getattr(desc, "rigidBody", ""))
                for other in filtered:
                    o = str(other)
                    if owner in self.bodies and o in self.bodies and owner != o:
                        pairs.add(tuple(sorted((owner, o))))
        self.articulation_of = {}
        for path, desc in parsed.get("Articulation", []):
            for b in desc.articulatedBodies:
                if str(b) in self.bodies:
                    self.articulation_of.setdefault(str(b), path)
            prim = self.stage.GetPrimAtPath(path)
            enabled = None
            for name in ("physxArticulation:enabledSelfCollisions", "newton:selfCollisionEnabled"):
                value = self.attr(prim, name)
                if value is not None:
                    enabled = bool(value)
                    break
            if enabled is False:
                members = sorted({str(b) for b in desc.articulatedBodies if str(b) in self.bodies})
                for i, a in enumerate(members):
                    for b in members[i + 1 :]:
                        pairs.add((a, b))
        for a, b in sorted(pairs):
            # MuJoCo already skips parent-child pairs (unless filterparent is disabled)
            self.spec.add_exclude(bodyname1=a, bodyname2=b)

    def overlap_policy(self, parsed: dict, requested: bool | None) -> bool:
        """Whether reference-pose overlaps are excluded: ``requested``, else the scene setting.

        Raises:
            SchemaError: a non-boolean ``excludeReferenceOverlaps`` scene setting.
        """
        if requested is not None:
            return bool(requested)
        for path, _desc in parsed.get("Scene", []):
            data = self.stage.GetPrimAtPath(path).GetCustomDataByKey("simrt")
            if isinstance(data, Mapping) and OVERLAP_SETTING in data:
                value = data[OVERLAP_SETTING]
                if not isinstance(value, bool):
                    raise SchemaError(
                        path,
                        f"customData:simrt:{OVERLAP_SETTING}",
                        f"invalid value {value!r}",
                        "true or false",
                    )
                return value
        return True

    def exclude_reference_overlaps(self, model: mujoco.MjModel, initial: dict) -> mujoco.MjModel:
        """Exclude body pairs of one articulation whose shapes overlap at the start pose.

        Args:
            model: the compiled model.
            initial: the jointed bodies (for :meth:`initial_configuration`).

        Returns:
            ``model`` when no pair overlaps, else the model recompiled with the excludes.
        """
        members = self.articulation_of
        if not members:
            return model
        self.resolve_dof_addresses(model)
        qpos = np.array(model.qpos0, dtype=np.float64)
        self.initial_configuration(initial, model, qpos, report=False)
        data = mujoco.MjData(model)
        data.qpos[:] = qpos
        mujoco.mj_forward(model, data)
        depth: dict[tuple[str, str], float] = {}
        for i in range(data.ncon):
            con = data.contact[i]
            if con.exclude != 0 or not con.dist < 0.0:
                continue
            a = model.body(int(model.geom_bodyid[con.geom1])).name
            b = model.body(int(model.geom_bodyid[con.geom2])).name
            if a == b or a not in members or members.get(b) != members[a]:
                continue
            key = (a, b) if a < b else (b, a)
            depth[key] = max(depth.get(key, 0.0), -float(con.dist))
        if not depth:
            return model
        for a, b in sorted(depth):
            self.spec.add_exclude(bodyname1=a, bodyname2=b)
        pairs = sorted(depth.items(), key=lambda kv: -kv[1])
        listed = ", ".join(
            f"{self.short_name(a)}-{self.short_name(b)} ({d:.3g})"
            for (a, b), d in pairs[:_LIST_LIMIT]
        )
        more = f", ... ({len(pairs) - _LIST_LIMIT} more)" if len(pairs) > _LIST_LIMIT else ""
        text = (
            f"{len(pairs)} body pairs overlapping at the reference pose excluded from "
            f"colliding (penetration depth in stage units; scene setting "
            f"{OVERLAP_SETTING} = false keeps them): {listed}{more}"
        )
        self.warnings.append(text)
        LOG.warning(text)
        self.reference_overlaps = [(a, b, d) for (a, b), d in pairs]
        return self.compile()

    def short_name(self, path: str) -> str:
        """The prim name of ``path`` when no other simulated body has it, else the path."""
        name = path.rsplit("/", 1)[-1]
        names = self._body_names
        if names is None:
            names = {}
            for p in self.bodies:
                n = p.rsplit("/", 1)[-1]
                names[n] = names.get(n, 0) + 1
            self._body_names = names
        return name if names.get(name, 0) == 1 else path
