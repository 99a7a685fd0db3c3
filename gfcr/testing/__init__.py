"""Support for tests and benchmarks of gfcr and of code built on it (not used by the library).

- `workloads.py`: synthetic workloads with a known ground truth (`BernoulliPrompts`, `ShopTools`),
  for measuring the GFCR modules against the truth.
- `openenv_echo.py`: an env written with openenv's server classes alone (needs the `remote` extra).
"""
