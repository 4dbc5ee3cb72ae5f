"""The implementation of gnc_jax (private: import from :mod:`gnc_jax` and its public namespaces)."""
