"""The link tree expected from the converted URDF robot.

Shared by several test modules (moved from tests/test_robot_schema_real.py).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path


def urdf_expected_tree(urdf: Path) -> str:
    """Link tree of a URDF in the PrintRobotTree format, xml only (independent of simrt).

    Pure frames (no mass and no collision: converted to plain Xforms, not rigid bodies) are
    contracted into their parent.
    """
    root = ET.parse(urdf).getroot()
    massive = set()
    for link in root.findall("link"):
        inertial = link.find("inertial")
        mass = inertial.find("mass") if inertial is not None else None
        has_mass = mass is not None and float(mass.get("value", "0")) > 0
        if has_mass or link.find("collision") is not None:  # the converter keeps these as bodies
            massive.add(link.get("name"))
    children: dict[str, list[str]] = {}
    child_links = set()
    for j in root.findall("joint"):
        parent, child = j.find("parent").get("link"), j.find("child").get("link")
        children.setdefault(parent, []).append(child)
        child_links.add(child)
    top = [link.get("name") for link in root.findall("link") if link.get("name") not in child_links]

    def massive_children(link: str) -> list[str]:
        out = []
        for c in children.get(link, []):
            out += [c] if c in massive else massive_children(c)
        return out

    roots = []
    for t in top:
        roots += [t] if t in massive else massive_children(t)
    assert len(roots) == 1
    lines = []

    def emit(link: str, depth: int) -> None:
        lines.append("  " * depth + link)
        for c in massive_children(link):
            emit(c, depth + 1)

    emit(roots[0], 0)
    return "\n".join(lines) + "\n"
