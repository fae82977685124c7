"""The paper's evaluation, reproduced and extended, as one command.

    python benchmarks/paper_eval.py                      # quick profile, about 20 min
    python benchmarks/paper_eval.py --profile full-depth --time-limit 300
    python benchmarks/paper_eval.py --report-only        # rewrite docs/results.md

Same options as ``python -m autotm_core evaluate`` (this script runs that command). An
interrupted run resumes from its results file (docs/results-PROFILE.json).
"""

from __future__ import annotations

import sys

from autotm_core.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["evaluate", *sys.argv[1:]]))
