"""Shared test setup: register the Isaac schemas before any test creates a stage."""

import runtime.schema  # noqa: F401  (registration must precede the first Usd.Stage)
