from __future__ import annotations

from sitesync.cli import main

main()
