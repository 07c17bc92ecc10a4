"""``python -m tricks_helpers.ddp JOB --out DIR ...``: see :mod:`tricks_helpers.ddp.ranks`."""

import sys

from tricks_helpers.ddp.ranks import main

if __name__ == "__main__":
    sys.exit(main())
