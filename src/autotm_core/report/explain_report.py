"""Terminal report of ``explain``: a tensor's life across pools, or a kernel's cost."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table

from autotm_core.explain import KernelExplanation, TensorExplanation
from autotm_core.units import format_bytes, format_seconds


def render_tensor(e: TensorExplanation, kernel_names: tuple[str, ...]) -> RenderableType:
    """Residencies, moves, and what each absence from the fastest pool made room for."""
    def at(k: int) -> str:
        return f"#{k} {escape(kernel_names[k])}"

    head = (f"[bold]{escape(e.tensor)}[/] ({e.kind}, {format_bytes(e.nbytes)}): live from "
            f"{at(e.first_live)} to {at(e.last_live)}, used by {len(e.users)} kernels")
    stays = Table(title="where it lived", title_justify="left")
    for column in ("pool", "from", "to", "kernels"):
        stays.add_column(column, justify="right" if column == "kernels" else "left")
    for r in e.residencies:
        stays.add_row(escape(r.pool), at(r.first), at(r.last), f"{r.last - r.first + 1:,}")
    moves = Table(title="moves", title_justify="left")
    for column in ("kernel", "kind", "from", "to", "copy time"):
        moves.add_column(column, justify="right" if column == "copy time" else "left")
    for m in e.moves:
        if m.move.spans_kernels:  # in flight until kernel `until`, or the step's end
            done = (f"before {at(m.move.until)}" if m.move.until < len(kernel_names)
                    else "by the step's end")
            when = f"from {at(m.move.kernel)}, done {done}"
        else:
            when = f"{'before' if m.move.kind.value == 'sync' else 'during'} {at(m.move.kernel)}"
        moves.add_row(when, m.move.kind.value, escape(m.move.source),
                      escape(m.move.target), format_seconds(m.seconds))
    parts: list[RenderableType] = [head, "", stays, ""]
    parts.append(moves if e.moves else "no moves: it stays where it is created")
    for a in e.absences:
        parts.append("")
        parts.append(f"[bold]out of the fastest pool[/] from {at(a.first)} to {at(a.last)} "
                     f"(in {escape(', '.join(a.pools) or 'no pool')}); meanwhile "
                     f"{format_bytes(a.room_for_nbytes)} of other tensors entered it:")
        if a.room_for:
            parts.append("  " + ", ".join(f"{escape(n)} ({format_bytes(b)})"
                                          for n, b in a.room_for))
    if not e.absences:
        parts.append("")
        parts.append("it stays in the fastest pool for its whole life")
    return Group(*parts)


def render_kernel(e: KernelExplanation) -> RenderableType:
    """The kernel's tensors and pools, its time against its best placement, its moves."""
    table = Table(title=f"kernel #{e.index} {escape(e.kernel)}", title_justify="left")
    for column in ("tensor", "bytes", "pool in plan", "pool at best"):
        table.add_column(column, justify="right" if column == "bytes" else "left")
    for (name, nbytes, pool), best in zip(e.tensors, e.best_pools, strict=True):
        mark = "" if pool == best else " [yellow]≠[/]"
        table.add_row(escape(name), format_bytes(nbytes), escape(pool) + mark, escape(best))
    lines: list[RenderableType] = [table,
        f"run time in the plan's placement: {format_seconds(e.seconds)}; at its best placement "
        f"{format_seconds(e.best_seconds)} ({e.slowdown:.2f}x)",
        f"moves charged to it: sync before {format_seconds(e.sync_move_seconds)}, async "
        f"issued at it {format_seconds(e.async_move_seconds)}"]
    for m in e.moves:
        flight = f", in flight until kernel #{m.move.until}" if m.move.spans_kernels else ""
        lines.append(f"  {m.move.kind.value} {escape(m.move.tensor)} "
                     f"{escape(m.move.source)} -> {escape(m.move.target)} "
                     f"({format_bytes(m.nbytes)}, {format_seconds(m.seconds)}{flight})")
    return Group(*lines)
