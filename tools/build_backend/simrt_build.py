"""simrt's PEP 517 build backend: setuptools, plus the kernels compiled at build time.

Before setuptools builds a wheel (``pip install .``) or an editable install
(``pip install -e .``), this compiles the kernels a run needs into
``runtime/_compile/kernel_seeds/kernels.seed`` (``python -m runtime._compile.precompile
--seeds``, in worker processes, into a temporary Numba cache). A first run then loads them
instead of spending about 40 CPU-seconds compiling (see ``runtime/_compile/seeds.py``: the
seeds are used only on a machine, Python and Numba that match the build's).

The build never fails because of the seeds: without Numba in the build environment, or if
the compile fails or takes longer than ``SIMRT_SEED_TIMEOUT`` seconds (default 900), the
package is built without them and its kernels compile at first use, as before.
``SIMRT_BUILD_SEEDS=0`` skips the compile.

An editable install also compiles the package's bytecode into the source tree, as pip does
for the files of a regular install: a process that may not write bytecode
(``PYTHONDONTWRITEBYTECODE``, read-only trees) would otherwise compile every simrt module
at every start (0.2 s of a warm 0.65 s run).
"""

from __future__ import annotations

import compileall
import os
import signal
import subprocess
import sys
import tempfile

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401 - the hooks this backend does not change
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

_SEED = os.path.join("runtime", "_compile", "kernel_seeds", "kernels.seed")


def _compile_seeds() -> None:
    if os.environ.get("SIMRT_BUILD_SEEDS", "1") == "0":
        return
    source = os.path.abspath(os.getcwd())
    if not os.path.isfile(os.path.join(source, "runtime", "_compile", "precompile.py")):
        return
    with tempfile.TemporaryDirectory(prefix="simrt-seeds-") as cache:
        env = dict(os.environ)
        env["NUMBA_CACHE_DIR"] = cache
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [source, env.get("PYTHONPATH")]))
        env.pop("SIMRT_DISABLE_JIT", None)
        env.pop("NUMBA_DISABLE_JIT", None)
        timeout = float(os.environ.get("SIMRT_SEED_TIMEOUT", "900"))
        try:  # its own process group: a timeout also stops the compile workers it started
            child = subprocess.Popen(
                [sys.executable, "-m", "runtime._compile.precompile", "--seeds", _SEED],
                cwd=source,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        except OSError as error:
            sys.stderr.write(f"simrt: kernels not compiled at build time ({error})\n")
            return
        try:
            _, errors = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop_group(child)
            sys.stderr.write(
                f"simrt: kernels not compiled at build time (over {timeout:g} s); "
                "they compile at first use\n"
            )
            return
        except BaseException:  # Ctrl-C: the compile (in its own session) stops too
            _stop_group(child)
            raise
    sys.stderr.write(errors[-2000:])
    if child.returncode != 0:
        sys.stderr.write("simrt: kernels not compiled at build time; they compile at first use\n")


def _compile_bytecode() -> None:
    package = os.path.join(os.path.abspath(os.getcwd()), "runtime")
    if not os.path.isfile(os.path.join(package, "_compile", "precompile.py")):
        return
    try:  # (never the install's failure: without bytecode a start only takes longer)
        compileall.compile_dir(package, quiet=2, workers=0)
    except (OSError, ValueError) as error:
        sys.stderr.write(f"simrt: bytecode not compiled at build time ({error})\n")


def _stop_group(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (OSError, AttributeError):  # gone already, or no process groups (Windows)
        child.kill()
    child.communicate()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """Compile the kernel seeds, then build the wheel with setuptools."""
    _compile_seeds()
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """Compile the kernel seeds and the bytecode into the source tree, then build the
    editable wheel."""
    _compile_seeds()
    _compile_bytecode()
    return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
