"""The IMU's read-time cross product equals NumPy's bit for bit, with broadcasting."""

import numpy as np
import pytest

from runtime.sensors.imu import _cross


@pytest.mark.parametrize(
    ("shape_a", "shape_b"), [((3,), (3,)), ((7, 3), (3,)), ((3,), (7, 3)), ((7, 3), (7, 3))]
)
def test_cross_matches_numpy_exactly(shape_a, shape_b):
    rng = np.random.default_rng(11)
    a = rng.normal(size=shape_a) * 1e3
    b = rng.normal(size=shape_b) * 1e-3
    np.testing.assert_array_equal(_cross(a, b), np.cross(a, b))
