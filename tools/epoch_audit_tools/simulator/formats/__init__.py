"""Line formatters, one module per template family (see /work/shared/reference/log-formats.md).

Formatters are pure functions of their arguments: they never read simulator state, so each
template can be checked against the reference on its own.
"""
