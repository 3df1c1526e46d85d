"""The one compiled module: ``runtime._compile._native`` (see runtime/_compile/_native.c).

Everything else is in pyproject.toml. The module is optional: without a C compiler the
package builds without it and kernels are called through Numba's dispatcher, as before.
"""

import numpy
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "runtime._compile._native",
            sources=["runtime/_compile/_native.c"],
            include_dirs=[numpy.get_include()],
            optional=True,
        )
    ]
)
