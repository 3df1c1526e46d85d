"""Kinematics: math (Transform, quaternions wxyz), Numba FK/Jacobian/IK kernels,
``KinematicChain`` from USD, LM IK, ``RobotPoser`` and named poses.

Submodules are imported on demand (``runtime.kinematics.chain`` loads ``pxr``):

* :mod:`runtime.kinematics.math`        -- Transform, quaternion helpers, pose_error.
* :mod:`runtime.kinematics.chain`       -- KinematicChain (tree, chain, FK, teleport).
* :mod:`runtime.kinematics.ik`          -- IKSolver, IKSolverRegistry, ik_lm, batched IK.
* :mod:`runtime.kinematics.poser`       -- RobotPoser, PoseResult, apply_joint_state*.
* :mod:`runtime.kinematics.named_poses` -- named-pose CRUD and JSON import/export.
"""

__all__: list[str] = []
