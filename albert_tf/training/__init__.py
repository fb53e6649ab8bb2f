"""The training engine: optimizers, schedules, strategies, checkpoints, loops."""
