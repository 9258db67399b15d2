"""The dashboard's routes: ``api`` (JSON and ``/metrics``) and ``pages`` (HTML)."""

from __future__ import annotations
