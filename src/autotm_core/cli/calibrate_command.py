"""``calibrate -o system.json [--kernels KIND]``: measure this machine's memory and compute for
the kernels that will run, and write a memory-system file."""

from __future__ import annotations

import argparse
import json

from rich.console import Console

from autotm_core.cli.options import add_command

DESCRIPTION = """\
Measure read, write and copy bandwidth (synchronous, and asynchronous on a second thread
while the first computes) and latency of every NUMA node this process may use, and the
compute rate, with buffers well beyond the last-level cache; write a memory-system file for
this machine (one pool per node; on a one-node machine two pools, 'dram' and 'slow', on
that node). The compute rate and the read and write bandwidths are those of the kernels
that will run (--kernels): the replay kernels by default, or a frontend's real kernels
(--kernels torch: a BLAS matrix multiply, torch's reads and writes, and the fixed time of a
kernel from a small training step), so that 'run --kernels torch:SPEC' on the system
predicts what it measures."""
"""What ``calibrate --help`` says the command does."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers, "calibrate", DESCRIPTION,
        help="measure every NUMA node's bandwidth and latency; write a system file")
    parser.add_argument("-o", "--output", required=True, metavar="FILE",
                        help="the memory-system file to write")
    parser.add_argument("--quick", action="store_true",
                        help="fewer repetitions and smaller buffers (a few seconds)")
    parser.add_argument("--buffer", metavar="SIZE", default=None,
                        help="size of each buffer instead of the default multiple of the "
                        "last-level cache, e.g. 256MiB")
    parser.add_argument("--kernels", default="replay", metavar="KIND",
                        help="the kernels whose compute rate, bandwidths and fixed time per "
                        "kernel to measure: 'replay' (default, what 'run' runs without "
                        "--kernels) or a frontend that runs its own kernels, e.g. torch (for "
                        "'run --kernels torch:SPEC'; same OMP_NUM_THREADS for both)")
    parser.add_argument("--name", default="calibrated", help="name of the memory system")
    parser.add_argument("--json", action="store_true", help="print the facts as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from autotm_core.calibration.calibrate import calibrate, calibrated_system
    from autotm_core.calibration.rates import kernel_rates
    from autotm_core.formats.system_json import save_system
    from autotm_core.report.profile_report import calibration_facts, render_calibration
    from autotm_core.units import parse_size

    buffer = None if args.buffer is None else parse_size(args.buffer)
    kernels = kernel_rates(args.kernels)  # an unknown kind is refused before any measuring
    columns = (TextColumn("calibrating"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[what]}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, disable=args.json) as progress:
        task = progress.add_task("calibrate", total=None, what="")
        calibration = calibrate(
            quick=args.quick, buffer_nbytes=buffer, kernels=kernels,
            progress=lambda done, total, what: progress.update(task, completed=done, total=total,
                                                               what=what),
        )
    system = calibrated_system(calibration, name=args.name)
    save_system(system, args.output)
    facts = calibration_facts(calibration, system, output=args.output)
    if args.json:
        console.print_json(json.dumps(facts))
    else:
        console.print(render_calibration(facts))
    return 0
