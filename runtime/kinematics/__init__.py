"""Kinematics: math, Numba FK/Jacobian/IK kernels, chains from USD, IK, poser, named poses.

Math is Transform and quaternions (wxyz); ``KinematicChain`` is built from USD physics joints.

Submodules are imported on demand (``runtime.kinematics.chain`` loads ``pxr``):

* :mod:`runtime.kinematics.math`        -- Transform, quaternion helpers, pose_error.
* :mod:`runtime.kinematics.chain`       -- KinematicChain (tree, chain, FK, teleport).
* :mod:`runtime.kinematics.ik`          -- IKSolver, IKSolverRegistry, ik_lm, batched IK.
* :mod:`runtime.kinematics.poser`       -- RobotPoser, PoseResult, apply_joint_state*.
* :mod:`runtime.kinematics.named_poses` -- named-pose CRUD and JSON import/export.
"""

__all__: list[str] = []
