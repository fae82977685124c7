"""``explain PLAN --graph G --system S --tensor T | --kernel K``: why a plan does what it does."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

import attrs
from rich.console import Console

from autotm_core.cli.options import (
    add_command,
    add_costs,
    add_json,
    add_plan_arguments,
    plan_inputs,
)

if TYPE_CHECKING:
    from autotm_core.explain import KernelExplanation, TensorExplanation
    from autotm_core.ir import Graph
    from autotm_core.memory import MemorySystem
    from autotm_core.plans import Plan


DESCRIPTION = """\
For a tensor: where it lived over time, each move with its copy time, and what each absence
from the fastest pool made room for (the tensors that entered it meanwhile). For a kernel:
its tensors' pools, its time against its best placement under the costs, and the moves
charged to it. With neither: the plan by tensor kind (parameters, gradients, optimizer
state, activations, ...): bytes in each pool, moved each way and used in place from a slower
pool, and each kind's share of the time added over all in the fastest pool."""
"""What ``explain --help`` says the command does."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "explain", DESCRIPTION,
                         help="explain a tensor's moves or a kernel's placement in a plan")
    add_plan_arguments(parser)
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--tensor", metavar="NAME",
                      help="the tensor to explain (neither: the plan by tensor kind)")
    what.add_argument("--kernel", metavar="NAME",
                      help="the kernel to explain (neither: the plan by tensor kind)")
    add_costs(parser)
    add_json(parser, "the explanation")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from autotm_core.explain import explain_kernel, explain_tensor
    from autotm_core.report.explain_report import render_kernel, render_tensor

    plan, graph, system = plan_inputs(args)
    if args.tensor is None and args.kernel is None:
        return _explain_kinds(args, console, plan, graph, system)
    explanation: TensorExplanation | KernelExplanation
    if args.tensor is not None:
        explanation = explain_tensor(plan, graph, system, tensor=args.tensor)
        view = render_tensor(explanation, tuple(k.name for k in graph.kernels))
    else:
        from autotm_core.planning import load_problem

        problem = load_problem(graph, system, costs_path=args.costs)
        explanation = explain_kernel(plan, graph, system, problem.costs, kernel=args.kernel)
        view = render_kernel(explanation)
    if args.json:
        console.print_json(json.dumps(attrs.asdict(explanation, value_serializer=_json_value)))
        return 0
    console.print(view)
    return 0


def _explain_kinds(args: argparse.Namespace, console: Console, plan: Plan, graph: Graph,
                   system: MemorySystem) -> int:
    """The plan as a whole: the breakdown by tensor kind."""
    from autotm_core.planning import load_problem
    from autotm_core.planning.breakdown import plan_breakdown
    from autotm_core.report.kinds_report import render_kinds

    breakdown = plan_breakdown(load_problem(graph, system, costs_path=args.costs), plan)
    if args.json:
        console.print_json(json.dumps(breakdown.to_json()))
    else:
        console.print(render_kinds(breakdown, width=console.width,
                                   title=f"{plan.planner or 'plan'} for {graph.name} by "
                                   "tensor kind"))
    return 0


def _json_value(_instance: object, _field: object, value: object) -> object:
    import enum

    return value.value if isinstance(value, enum.Enum) else value
