"""Calibration: fitting the cost model to measurements and checking it against them
(measured runs: compare, calibrate*, anchor; collective logs: fit, nccl_fit)."""
