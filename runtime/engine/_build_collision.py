"""Collision-filter step of the USD -> MuJoCo builder: groups, filtered pairs, exclusions."""

from __future__ import annotations

from pxr import Usd, UsdPhysics

from runtime.engine._build_base import BuildContext
from runtime.engine._build_types import JointRecord


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
        for path, desc in parsed.get("Articulation", []):
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
