"""Allow ``python -m ovsperf_lab`` (same as the ``ovsperf-lab`` console script)."""

import sys

from ovsperf_lab.cli import main

sys.exit(main())
