"""USD boundary: the Isaac Robot and Sensor schemas, registered with usd-core on import.

Importing this package registers the codeless schemas so that ``prim.HasAPI("IsaacRobotAPI")``,
``prim.IsA("IsaacNamedPose")``, fallbacks and allowed tokens work in plain usd-core. It must be
imported before the first ``Usd.Stage`` of the process is created.
"""

from runtime.schema._register import register_schemas

register_schemas()

from runtime.errors import RegistrationError, SchemaError  # noqa: E402
from runtime.schema.tokens import (  # noqa: E402
    Attributes,
    Classes,
    DofOffsetOpOrder,
    Relations,
    SensorTypes,
)

__all__ = [
    "Attributes",
    "Classes",
    "DofOffsetOpOrder",
    "RegistrationError",
    "Relations",
    "SchemaError",
    "SensorTypes",
    "register_schemas",
]
