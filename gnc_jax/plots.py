"""Pictures of codes and of results stores (matplotlib; plotly for the interactive view).

The public face of :mod:`gnc_jax._src.plots`."""

from gnc_jax._src.plots import (
    plot_store,
    contact_graph,
    code_figure,
    code_figure_3d,
    stored_code,
)

__all__ = [
    "plot_store",
    "contact_graph",
    "code_figure",
    "code_figure_3d",
    "stored_code",
]
