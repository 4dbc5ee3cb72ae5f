"""``python -m gnc_jax``: the ``gnc-jax`` command."""

from gnc_jax._src.cli import program

program()
