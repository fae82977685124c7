"""The command line: ``python -m autotm_core COMMAND ...`` (also installed as ``autotm-core``)."""
