"""Every `>>>` example in gfcr's docstrings runs and shows what it claims."""

from __future__ import annotations

import doctest
import importlib
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


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
