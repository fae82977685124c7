"""``python -m autotm_core``: the command line."""

import sys

try:
    from autotm_core.cli.main import entry
except KeyboardInterrupt:  # Ctrl-C while starting up, before any work: nothing to keep
    print("interrupted", file=sys.stderr)
    raise SystemExit(130) from None

entry()
