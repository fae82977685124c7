"""``python -m autotm_core``: the command line."""

import logging
import os
import sys

try:
    from autotm_core.cli.main import main

    status = main()
except KeyboardInterrupt:  # Ctrl-C while starting up, before any work: nothing to keep
    print("interrupted", file=sys.stderr)
    status = 130
if status == 130:
    # Ctrl-C: what was kept is written and said; freeing a large graph's and model's objects
    # would take seconds more (Inception v4's asynchronous model: 2-3 s), and a solver
    # thread that did not stop may still run: leave at once
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
raise SystemExit(status)
