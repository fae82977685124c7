"""``python -m autotm_core``: the command line."""

import sys

try:
    from autotm_core.cli.main import main

    status = main()
except KeyboardInterrupt:  # Ctrl-C while starting up, before any work: nothing to keep
    print("interrupted", file=sys.stderr)
    status = 130
raise SystemExit(status)
