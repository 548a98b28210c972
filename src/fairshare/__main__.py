"""``python -m fairshare``: the ``fairshare`` command."""

import sys

from .cli import main

sys.exit(main())
