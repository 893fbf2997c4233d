"""``python -m streams.cli.main``: the command line."""

import sys

from streams.cli.main import main

sys.exit(main())
