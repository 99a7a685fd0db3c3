"""Every `>>>` example in gfcr's docstrings runs and shows what it claims."""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

# envs/, agents/ … are mapped into the gfcr namespace by pyproject's package-dir, so each
# top-level package is walked on its own path.
PACKAGES = ["gfcr", "gfcr.envs", "gfcr.agents", "gfcr.trainers", "gfcr.sandboxes"]
MODULES = sorted(
    {package for package in PACKAGES}
    | {
        info.name
        for package in PACKAGES
        for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + ".")
    }
)


# Modules whose library lives in its own venv, where their own tests run these examples.
OWN_VENV = {"gfcr.integrations.verifiers": "verifiers", "gfcr.integrations.verl": "verl"}


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    if name in OWN_VENV and importlib.util.find_spec(OWN_VENV[name]) is None:
        pytest.skip(
            f"{OWN_VENV[name]} lives in its own venv (scripts/setup_*.sh); tests/integrations run these"
        )
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
