"""``python -m autotm_core``: the command line."""

from autotm_core.cli.main import main

raise SystemExit(main())
