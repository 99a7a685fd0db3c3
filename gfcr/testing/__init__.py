"""Support for tests of gfcr and of code built on it: env contract checks.

- `contract.py`: the env contract as executable checks (`check_contract` and one `check_*` per
  rule), shared by gfcr's own tests, `gfcr check ENV_ID` and plugin authors' test suites.

The synthetic workloads that measure the GFCR modules are `gfcr.workloads`, beside those modules
(their doctests use them).
- `openenv_echo.py`: an env written with openenv's server classes alone (needs the `remote` extra).
"""

from __future__ import annotations

from gfcr.testing.contract import CheckResult, ContractReport, ContractViolation, check_contract

__all__ = ["CheckResult", "ContractReport", "ContractViolation", "check_contract"]
