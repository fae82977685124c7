"""``run PLAN --graph G --system S``: execute a plan on real memory pools and measure it.

Every run goes through the executor's one loop (:func:`autotm_core.executor.execute`)
with a :class:`~autotm_core.executor.KernelRunner`: autotm-core's replay kernels, or
with ``--kernels FRONTEND:SPEC`` the real ones of a frontend plugin that is a
:class:`~autotm_core.executor.KernelSource` (the torch plugin's,
docs/torch-execution.md): ``frontend.kernel_runner(SPEC, **options)`` with
``--batch-size`` and every ``--option`` as ``import`` passes them to ``load()``. The
runner captures SPEC again, checks that the capture is the plan's graph, and
compares its results with the framework's own step.

The exit status is 0 when the run's results equal its reference (the one-pool
replay's bytes, or the framework's eager step), :data:`RESULTS_DIFFER_STATUS` when
they differ, and as for every command otherwise (docs/cli.md).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from rich.console import Console

from autotm_core.cli.options import (
    add_command,
    add_json,
    add_plan_arguments,
    add_top,
    check_pool_names,
    parse_pairs,
    plan_inputs,
)
from autotm_core.errors import UsageError

if TYPE_CHECKING:
    from autotm_core.executor import KernelRunner
    from autotm_core.ir import Graph
    from autotm_core.memory import MemorySystem

DESCRIPTION = """\
Verify a plan, make one NUMA-bound, pre-faulted arena per pool, run the graph's replay
kernels (or with --kernels FRONTEND:SPEC a frontend's real kernels, e.g. PyTorch's) with the
plan's placements and copies (asynchronous ones on a copy thread), and report measured
against predicted time per kernel and in total (predicted for the system's machine: a
preset's is a published one, not this one). The bytes the replay kernels read are
checked against a replay with every tensor in one pool; real kernels are checked against
the framework's own step. A preset is fitted to this machine (its pools bound to NUMA
nodes this machine has, bounded arenas as large as the plan uses), each change said in
the report. Exit status 0: the results equal the reference; 1: they differ (or an input
was refused); 2: a usage error."""
"""What ``run --help`` says the command does."""
RESULTS_DIFFER_STATUS = 1
"""Exit status of a run whose results differ from its reference: a negative answer, as
``verify``'s of an invalid plan."""
LONG_RUN_SECONDS = 10.0
"""A replay expected to compute longer than this in all is announced before it starts."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers, "run", DESCRIPTION,
        help='execute a plan on NUMA-bound arenas and compare measured with predicted time')
    add_plan_arguments(parser)
    parser.add_argument("--repeat", type=int, default=5, metavar="N",
                        help="timed repetitions of the step, after one warm-up (default 5)")
    parser.add_argument("--costs", metavar="FILE",
                        help="a kernel cost file for the prediction (default: the roofline)")
    parser.add_argument("--kernels", default="replay", metavar="KERNELS",
                        help="what runs each kernel: 'replay' (default: synthetic kernels that "
                        "compute at this CPU's speed, see --flops-scale) or FRONTEND:SPEC, a "
                        "frontend that captures SPEC again and runs its real kernels, e.g. "
                        "torch:models.py:factory")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="an option for the frontend of --kernels, as for import (repeatable)")
    parser.add_argument("--batch-size", type=int, metavar="N",
                        help="batch size for the frontend of --kernels, as for import")
    parser.add_argument("--bind", action="append", default=[], metavar="POOL=NODE",
                        help="bind a pool to this NUMA node instead of the system's (repeatable)")
    parser.add_argument("--arena", action="append", default=[], metavar="POOL=SIZE",
                        help="make a bounded pool's arena this size instead of its capacity; it "
                        "must hold the plan's offsets (repeatable), e.g. pmm=1GiB")
    parser.add_argument("--fit-machine", action=argparse.BooleanOptionalAction, default=None,
                        help="bind pools to the NUMA nodes this machine has where the system "
                        "names others, and make bounded pools' arenas as large as the plan uses "
                        "(default: for a preset, not for a system file); --no-fit-machine "
                        "insists on the system's nodes and capacities")
    parser.add_argument("--flops-scale", type=float, default=1.0, metavar="X",
                        help="scale every replay kernel's compute (default 1)")
    parser.add_argument("--no-check", action="store_true",
                        help="skip the comparison with the one-pool replay")
    add_json(parser)
    add_top(parser, "by measured time")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from rich.progress import Progress

    from autotm_core.costs.resolve import resolve_costs
    from autotm_core.executor import ReplayKernels, execute
    from autotm_core.report.run_report import render_run, run_facts
    from autotm_core.units import parse_size

    bind = parse_pairs(args.bind, "--bind", int)
    arenas = parse_pairs(args.arena, "--arena", parse_size)
    kernels = _kernels(args)
    plan, graph, system = plan_inputs(args, check=False)  # the run verifies it
    check_pool_names(bind, "--bind", system)
    check_pool_names(arenas, "--arena", system)
    costs = resolve_costs(graph, system, costs_path=args.costs)
    if kernels is not None:
        _check_calibrated_for(args.kernels.partition(":")[0], system, costs_path=args.costs)
    if kernels is None:
        _announce_replay(graph, system, args)
        kernels = ReplayKernels(check=not args.no_check)
    with Progress(console=console, transient=True, disable=args.json) as progress:
        task = progress.add_task("running the step", total=args.repeat)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done)

        report = execute(
            plan, graph, system, kernels=kernels, repeat=args.repeat, costs=costs, bind=bind,
            arena_nbytes=arenas, flops_scale=args.flops_scale, fit_machine=args.fit_machine,
            progress=advance,
        )
    facts = run_facts(report, top=max(0, args.top))
    if args.json:
        console.print_json(json.dumps(facts))
    else:
        console.print(render_run(facts))
    return 0 if report.check is None or report.check.matches else RESULTS_DIFFER_STATUS


def _kernels(args: argparse.Namespace) -> KernelRunner | None:
    """The runner of ``--kernels FRONTEND:SPEC`` (``None``: the replay kernels)."""
    from autotm_core.cli.import_command import parse_options
    from autotm_core.executor import KernelSource
    from autotm_core.plugins import get_frontend

    options: dict[str, object] = dict(parse_options(args.option))
    if args.batch_size is not None:
        options["batch_size"] = args.batch_size
    if args.kernels == "replay":
        if options:
            raise UsageError("--option and --batch-size are for the frontend of --kernels",
                             hint="give --kernels FRONTEND:SPEC, or leave them out")
        return None
    name, sep, spec = args.kernels.partition(":")
    if not sep or not name or not spec:
        raise UsageError(f"--kernels {args.kernels!r} is neither 'replay' nor FRONTEND:SPEC",
                         hint="e.g. --kernels torch:models.py:factory")
    if args.flops_scale != 1.0 or args.no_check:
        raise UsageError("--flops-scale and --no-check apply to replay kernels only",
                         hint=f"leave them out with --kernels {args.kernels}")
    frontend = get_frontend(name)
    if not isinstance(frontend, KernelSource):
        raise UsageError(f"frontend {name!r} cannot run plans with its own kernels (it has no "
                         "kernel_runner())", hint="use --kernels replay")
    return frontend.kernel_runner(spec, **options)


def _check_calibrated_for(frontend: str, system: MemorySystem, *, costs_path: str | None
                          ) -> None:
    """A warning when a frontend's real kernels run on a system file with no fixed time per
    kernel (calibrated for the replay kernels, or written by hand): its roofline predicts other
    kernels than these, so the comparison says little about the plan."""
    from autotm_core.cli.stderr import warn
    from autotm_core.presets import is_preset

    if costs_path is not None or is_preset(system) or system.kernel_overhead_seconds > 0:
        return
    warn([f"memory system {system.name!r} has no fixed time per kernel: it was not calibrated "
          f"for {frontend}'s kernels, so its roofline predicts other kernels than these "
          f"('calibrate --kernels {frontend} -o FILE' measures this machine for them)"])


def _announce_replay(graph: Graph, system: MemorySystem, args: argparse.Namespace) -> None:
    """Say how long the replay kernels will compute before a long run starts, and how to make
    them compute for the time the system predicts."""
    from autotm_core.calibration.measure import compute_rate
    from autotm_core.costs import estimate_flops
    from autotm_core.units import format_seconds

    flops = float(estimate_flops(graph).flops.sum()) * args.flops_scale
    if flops <= 0:
        return
    rate = compute_rate(iterations=1 << 20, repeat=3)
    per_step = flops / rate
    if per_step * (args.repeat + 1) < LONG_RUN_SECONDS:
        return
    scale = args.flops_scale * rate / system.flops_per_second
    runs = f"{args.repeat} repetition{'s' if args.repeat > 1 else ''}"
    Console(stderr=True, highlight=False).print(
        f"note: the replay kernels compute at this CPU's {rate / 1e9:,.3g} GFLOP/s "
        f"({system.name} assumes {system.flops_per_second / 1e9:,.0f} GFLOP/s): about "
        f"{format_seconds(per_step)} of compute per step, "
        f"{format_seconds(per_step * (args.repeat + 1))} for {runs} and a warm-up; "
        f"--flops-scale {scale:.3g} makes them compute for the time the system takes, and "
        "'calibrate -o system.json' measures this machine as a system", soft_wrap=True)
