"""simrt: a headless sensor and kinematics runtime for robots described in OpenUSD.

Importing this package is cheap: it loads neither ``pxr`` nor any compiled kernel.
Subpackages are imported on demand:

* :mod:`runtime.schema`     -- Isaac Robot/Sensor schemas registered with usd-core, readers.
* :mod:`runtime.kinematics` -- FK/Jacobian kernels, IK, named poses.
* :mod:`runtime.sensors`    -- contact, IMU, raycast, joint-state and effort sensors.
"""

from runtime.errors import SchemaError, SimrtError

__all__ = ["SchemaError", "SimrtError", "__version__"]

__version__ = "0.1.0"
