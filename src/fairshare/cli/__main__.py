"""``python -m fairshare.cli``: the ``fairshare`` command."""

import sys

from . import main

sys.exit(main())
