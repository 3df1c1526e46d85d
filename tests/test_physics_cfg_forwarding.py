"""``runtime.physics.cfg`` forwards exactly the public names of the backend / legacy modules.

``cfg._FORWARDED`` is a hand-written table (it cannot import the backends, which import
``cfg``); this keeps it equal to the modules' ``__all__`` and checks each name resolves to
the backend's very object.
"""

from __future__ import annotations

import importlib

import pytest

from runtime.physics import cfg

MODULES = ("runtime.physics.physx", "runtime.physics.newton", "runtime.physics.legacy")


@pytest.mark.parametrize("module_name", MODULES)
def test_forward_table_matches_module_all(module_name):
    module = importlib.import_module(module_name)
    forwarded = {name for name, target in cfg._FORWARDED.items() if target == module_name}
    assert forwarded == set(module.__all__)
    for name in forwarded:
        assert getattr(cfg, name) is getattr(module, name)


def test_forward_table_names_only_known_modules():
    assert set(cfg._FORWARDED.values()) == set(MODULES)
