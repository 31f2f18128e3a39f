"""`python -m virtual_phone`: the `virtual-phone` command without its script (what start_fleet spawns).

The command itself lives in cli.py.
"""

from __future__ import annotations

import sys

from virtual_phone.cli import main

if __name__ == "__main__":
    sys.exit(main())
