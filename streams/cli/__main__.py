"""``python -m streams.cli``: the command line."""

import sys

from streams.cli.main import main

sys.exit(main())
