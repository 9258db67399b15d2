from __future__ import annotations

from tests._dashboard import chromium

__all__ = ["chromium"]  # a fixture, offered to the dashboard's browser tests here
