"""Terminal tables that fit a width and cut no word: shared by the reports."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.markup import escape
from rich.table import Table


def words_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], *,
                width: int = 80, left: Sequence[str] = (), styles: Sequence[str] = ()) -> Table:
    """A table at most ``width`` columns wide whose cells wrap between words but never inside
    one: each column keeps its longest word (header and cells; markup not counted), and the
    columns with most room to spare give it up first. In 80 columns, a pipe or a log, a value
    and its unit may take two lines; a name or a unit is never cut short. Only when the
    longest words alone are too wide does the widest column (a long name) fold."""
    from rich.text import Text

    plain = [[Text.from_markup(cell).plain for cell in row] for row in rows]
    longest = [max([len(columns[c]), *(len(row[c]) for row in plain)])
               for c in range(len(columns))]
    shortest = [max(len(w) for w in [*columns[c].split(),
                                     *(w for row in plain for w in row[c].split())] or [""])
                for c in range(len(columns))]
    widths = list(longest)
    excess = sum(widths) + 2 * (len(columns) - 1) + 2 - width  # gaps, and the box's edges
    while excess > 0:
        c = max(range(len(columns)), key=lambda i: widths[i] - shortest[i])
        spare = widths[c] - shortest[c]
        if spare <= 0:  # every column at its longest word: the widest one folds (a long
            c = max(range(len(columns)), key=lambda i: widths[i])  # name, not a number)
            widths[c] = max(len(columns[c].split()[0]) if columns[c] else 1, widths[c] - excess)
            break
        give = min(spare, excess)
        widths[c] -= give
        excess -= give
    table = Table(title=escape(title), title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True)
    for c, column in enumerate(columns):
        table.add_column(column, width=widths[c], overflow="fold",
                         justify="left" if column in left else "right")
    for r, row in enumerate(rows):
        table.add_row(*row, style=styles[r] if r < len(styles) else "")
    return table
