"""What the local executor's fork server loads once, so that every worker starts with it.

Imported by the fork server (``multiprocessing``'s ``forkserver`` start method) before it
forks the first worker: the episode code and everything a run imports (USD with the Isaac
schemas, MuJoCo, Numba and its lowering registries) and the kernels the Numba cache holds.
A worker forked from it starts in milliseconds instead of repeating that second of imports
and cache loads; a spawned worker would pay it in full.

Nothing here may start a thread (a fork copies only the forking thread): USD works serially
here, no stage is opened, no kernel runs, and the server's environment gives NumPy's BLAS
one thread per worker (the executor sets it). Nothing here may raise either (the fork
server would die with it); what fails to load is loaded by the worker when it needs it.
"""

from __future__ import annotations

import logging

_LOG = logging.getLogger(__name__)


def _preload() -> None:
    import os

    # workers never render: MuJoCo without its OpenGL (GLFW) bindings, like `simrt run`
    os.environ.setdefault("MUJOCO_GL", "disable")
    try:
        from pxr import Work

        # USD starts its thread pool (oneTBB, which does not survive a fork) the first time
        # it works in parallel, e.g. when the schema plug-ins load: serial in the server;
        # each worker sets its own limit (`executors._share_cores`)
        Work.SetConcurrencyLimit(1)
        import mujoco  # noqa: F401

        import runtime.batch.episode  # noqa: F401
        import runtime.engine.mujoco_engine  # noqa: F401
        import runtime.recording.store  # noqa: F401
        import runtime.run.build  # noqa: F401
        import runtime.run.loop  # noqa: F401
        import runtime.schema  # noqa: F401  (USD and the registered Isaac schemas)
        import runtime.sensors.runtime  # noqa: F401
        from runtime._compile import precompile as _precompile

        _precompile.load_cached_kernels()
    except BaseException as error:  # noqa: BLE001 - see the module docstring
        _LOG.debug("fork server preload incomplete: %r", error)


_preload()
