"""Helpers shared by the test modules (scene builders, independent reference models).

Test modules import them from here (``from tests.helpers.kinematics import ...``); no test
module imports another.
"""
