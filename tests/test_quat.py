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


def test_products_and_matrices_against_scipy():
    """runtime._quat's product, matrix and inverse against SciPy's Rotation (the oracle)."""
    from scipy.spatial.transform import Rotation

    from runtime import _quat

    rng = np.random.default_rng(11)
    a = rng.normal(size=(64, 4))
    b = rng.normal(size=(64, 4))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b /= np.linalg.norm(b, axis=1, keepdims=True)

    def scipy_of(q):
        return Rotation.from_quat(np.asarray(q)[..., [1, 2, 3, 0]])  # (SciPy: scalar last)

    product = _quat.multiply(a, b)  # batched
    expected = (scipy_of(a) * scipy_of(b)).as_matrix()
    for k in range(len(a)):
        single = _quat.multiply(a[k], b[k])
        assert np.array_equal(single, product[k])  # one path, two shapes, same bits
        np.testing.assert_allclose(_quat.to_matrix(single), expected[k], atol=1e-12)
        np.testing.assert_allclose(_quat.to_matrix(a[k]), scipy_of(a[k]).as_matrix(), atol=1e-12)
        back = _quat.from_matrix(scipy_of(a[k]).as_matrix())
        assert back[0] >= 0.0
        np.testing.assert_allclose(back, a[k] if a[k, 0] >= 0 else -a[k], atol=1e-12)
    np.testing.assert_allclose(_quat.rotation_matrices(a), scipy_of(a).as_matrix(), atol=1e-12)
