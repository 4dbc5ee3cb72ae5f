"""``python -m gnc_jax``: the ``gnc-jax`` command."""

import sys

from gnc_jax._src.cli import main

sys.exit(main())
