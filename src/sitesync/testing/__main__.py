"""``python -m sitesync.testing``: serve a generated site until killed."""

from __future__ import annotations

import sys

from sitesync.testing.serve import main

main(sys.argv[1:])
