"""The breakdown of a plan by tensor kind, in a terminal and in HTML.

It renders a :class:`~autotm_core.planning.breakdown.KindBreakdown`; the numbers are
computed in :mod:`autotm_core.planning.breakdown`.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.markup import escape

from autotm_core.ir import TensorKind
from autotm_core.planning.breakdown import KindBreakdown, KindUse, MoveDirection
from autotm_core.report.tables import column_groups, words_table
from autotm_core.units import format_bytes, format_seconds

KINDS_NOTE = ("in a pool: bytes of the kind that spend some of the step there; moved: copied "
              "into a faster or a slower pool; in place: used by kernels from a slower pool, "
              "without a move; added time: the kind's share of the time over all-fast (its "
              "kernels' slowdown outside the fastest pool, its moves and its reruns)")
"""How to read the table, printed under it."""


def kind_name(kind: TensorKind) -> str:
    """A kind as people write it (``optimizer state``)."""
    return kind.value.replace("_", " ")


def _share(breakdown: KindBreakdown, use: KindUse) -> str:
    share = breakdown.share(use)
    return "-" if share is None else f"{share:.1%}"


def kinds_rows(breakdown: KindBreakdown) -> tuple[list[str], list[list[str]]]:
    """The table's header and rows as plain text (shared by the terminal and HTML)."""
    header = ["kind", *(f"in {p}" for p in breakdown.pools), "moved to faster",
              "moved to slower", "in place", "added time"]
    rows = [[kind_name(u.kind), *(format_bytes(b) for b in u.kept_nbytes),
             format_bytes(u.moved_nbytes[MoveDirection.TO_FASTER]),
             format_bytes(u.moved_nbytes[MoveDirection.TO_SLOWER]),
             format_bytes(u.in_place_nbytes), _share(breakdown, u)] for u in breakdown.uses]
    return header, rows


def kinds_caption(breakdown: KindBreakdown) -> str:
    """What the added time is, and what no kind explains."""
    if breakdown.added_seconds is None:
        return ("added time: not attributed (the step time is not the simulator's, or the "
                "costs cannot price every tensor in the fastest pool)")
    text = f"{format_seconds(breakdown.added_seconds)} over all-fast"
    rest = breakdown.unattributed_seconds or 0.0
    if breakdown.added_seconds > 0 and abs(rest) >= 0.0005 * breakdown.added_seconds:
        text += (f", of which {format_seconds(rest)} ({rest / breakdown.added_seconds:.1%}) "
                 "no tensor causes (kernel time that does not depend on placement, a kernel's "
                 "own traffic over a link)")
    return text


def render_kinds(breakdown: KindBreakdown, *, width: int = 80,
                 title: str = "by tensor kind") -> RenderableType:
    """The breakdown as a table that fits ``width``, with how to read it."""
    header, rows = kinds_rows(breakdown)
    table = words_table("", header, [[escape(c) for c in row] for row in rows], width=width,
                        left=("kind",))
    return Group(f"[bold]{escape(title)}[/]: {escape(kinds_caption(breakdown))}", table,
                 f"[dim]{escape(KINDS_NOTE)}[/]")


def render_kinds_by_planner(planners: Sequence[str], breakdowns: Sequence[KindBreakdown | None],
                            *, width: int = 80) -> RenderableType:
    """Per planner (columns), each kind's share of the added time and its bytes in the
    fastest pool: what ``compare`` shows under its table."""
    kinds = list(dict.fromkeys(u.kind for b in breakdowns if b is not None for u in b.uses))
    if not kinds:
        return Group()
    fastest = next(b.pools[0] for b in breakdowns if b is not None)
    columns = ["kind", *planners]
    shares, kept = [], []
    for kind in kinds:
        share_row, kept_row = [kind_name(kind)], [kind_name(kind)]
        for b in breakdowns:
            use = None if b is None else next((u for u in b.uses if u.kind is kind), None)
            share_row.append("-" if b is None or use is None else _share(b, use))
            kept_row.append("-" if use is None else format_bytes(use.kept_nbytes[0]))
        shares.append(share_row)
        kept.append(kept_row)
    plain = [escape(p) for p in columns]

    def tables(rows: list[list[str]]) -> list[RenderableType]:
        """As many tables as the planners need to fit ``width``, each naming the kinds."""
        return [words_table("", [plain[c] for c in group], [[row[c] for c in group]
                                                           for row in rows],
                            width=width, left=("kind",))
                for group in column_groups(plain, [*shares, *kept], width=width)]

    # headings as lines of their own: a table's title would wrap to the table's width
    return Group(
        "share of the time added over all-fast, by tensor kind",
        *tables(shares),
        f"bytes of each kind that spend some of the step in {escape(fastest)}",
        *tables(kept),
    )


__all__ = ["KINDS_NOTE", "kind_name", "kinds_caption", "kinds_rows", "render_kinds",
           "render_kinds_by_planner"]
