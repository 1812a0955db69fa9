"""Fixtures shared with the kojiwatch tests: the stand-in Koji hub and the repo web server."""

from tests.kojiwatch.conftest import hub, web

__all__ = ["hub", "web"]
