"""Losses as small modules (after sentence-transformers' losses): each owns its training-only parameters, if any,
and returns named parts that a method or a stage combines.  The task loss itself is ``Task.loss``."""
