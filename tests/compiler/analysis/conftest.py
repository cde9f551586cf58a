"""Shared fixtures of the analysis tests."""

import pytest


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    """Every test plans against its own empty cache, so no result leaks between tests (or
    from a user's ~/.cache) and the cache tests see exactly what they wrote."""
    monkeypatch.setenv("TOPOC_CACHE", str(tmp_path / "cache"))
