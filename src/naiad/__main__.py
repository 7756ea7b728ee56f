"""``python -m naiad``: the ``naiad`` command."""

import sys

from naiad.cli import main

sys.exit(main())
