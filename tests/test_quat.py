"""The shared read-time cross product equals NumPy's bit for bit, with broadcasting."""

import numpy as np
import pytest

from runtime._quat import cross as _cross
from runtime._quat import rotate_vectors


@pytest.mark.parametrize(
    ("shape_a", "shape_b"), [((3,), (3,)), ((7, 3), (3,)), ((3,), (7, 3)), ((7, 3), (7, 3))]
)
def test_cross_matches_numpy_exactly(shape_a, shape_b):
    rng = np.random.default_rng(11)
    a = rng.normal(size=shape_a) * 1e3
    b = rng.normal(size=shape_b) * 1e-3
    np.testing.assert_array_equal(_cross(a, b), np.cross(a, b))


def test_rotate_vectors_matches_the_rotation_matrix():
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(5)
    q = rng.normal(size=(50, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    v = rng.normal(size=(50, 3))
    expected = Rotation.from_quat(q[:, [1, 2, 3, 0]]).apply(v)
    np.testing.assert_allclose(rotate_vectors(q, v), expected, atol=1e-12)
    np.testing.assert_allclose(rotate_vectors(q[0], v[0]), expected[0], atol=1e-12)
