"""Each package's ``__all__`` lists exactly its public names, and each resolves."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = [
    "simone.runtime",
    "simone.providers",
    "simone.providers.documents",
    "simone.providers.embeddings",
    "simone.providers.memory",
    "simone.providers.web",
    "simone.providers.testing",
    "simone.workflows",
    "simone.workflows.research",
    "simone.workflows.retrieval",
    "simone.agents",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_exact(name: str) -> None:
    module = importlib.import_module(name)
    exported = set(module.__all__)
    assert len(exported) == len(module.__all__), "duplicates in __all__"
    is_package = hasattr(module, "__path__")
    public = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_")
        and not isinstance(value, type(importlib))
        and attr != "annotations"
        # a plain module's public names are what it defines; a package re-exports on purpose
        and (is_package or getattr(value, "__module__", None) == name)
    }
    assert public - exported == set(), f"public but not in __all__: {sorted(public - exported)}"
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ names missing {attr}"
