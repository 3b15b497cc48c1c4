"""`python -m kubegap`."""

from __future__ import annotations

import sys

from kubegap.cli import main

sys.exit(main())
