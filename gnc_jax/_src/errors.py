"""The one exception type of bad input.

Every argument check of the API raises :class:`InvalidArgument` (a ``ValueError``) naming the
argument, before any computation starts. The CLI maps it (and its own argument errors) to exit
status 2; any other exception is a failure inside the computation: exit status 1.
"""


class InvalidArgument(ValueError):
    """Bad input to a gnc_jax function; the message names the argument."""
