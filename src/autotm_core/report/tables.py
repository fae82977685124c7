"""Terminal tables that fit a width and cut no word: shared by the reports."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from rich import box
from rich.markup import escape
from rich.table import Table

_ATOM = re.compile(r"[-+]?[\d.,]+\s+[^\s\d]\S*|\S+")
"""What a cell may not be cut inside: a word, or a number with the unit after it
(``0.81 s``, ``1.80 GiB``), which reads wrong over two lines."""


def atoms(text: str) -> list[str]:
    """The pieces of ``text`` a line may break between (see :data:`_ATOM`)."""
    return _ATOM.findall(text)


def words_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], *,
                width: int = 80, left: Sequence[str] = (), styles: Sequence[str] = ()) -> Table:
    """A table at most ``width`` columns wide whose cells wrap between words but never inside
    one: each column keeps its longest word (header and cells; markup not counted), and the
    columns with most room to spare give it up first. A number and its unit count as one word
    (``0.81 s`` on one line) while the table can fit that way, with columns two spaces apart
    or, when that is too wide, one (a three-pool sweep with a status column at 80 columns);
    only then may a value and its unit take two lines. A name or a unit is never cut short:
    only when the longest words alone are too wide does the widest column (a long name)
    fold."""
    from rich.text import Text

    plain = [[Text.from_markup(cell).plain for cell in row] for row in rows]
    longest = [max([len(columns[c]), *(len(row[c]) for row in plain)])
               for c in range(len(columns))]

    def shortest(split: Callable[[str], list[str]]) -> list[int]:
        return [max(len(w) for w in [*columns[c].split(),
                                     *(w for row in plain for w in split(row[c]))] or [""])
                for c in range(len(columns))]

    least_atoms = shortest(atoms)
    gap = 2 if sum(least_atoms) + 2 * (len(columns) - 1) + 2 <= width else 1
    widths = list(longest)
    excess = sum(widths) + gap * (len(columns) - 1) + 2 - width  # gaps, and the box's edges
    for least in (least_atoms, shortest(str.split)):
        while excess > 0:
            c = max(range(len(columns)), key=lambda i: widths[i] - least[i])
            give = min(widths[c] - least[c], excess)
            if give <= 0:
                break
            widths[c] -= give
            excess -= give
    if excess > 0:  # every column at its longest word: the widest one folds (a long name,
        c = max(range(len(columns)), key=lambda i: widths[i])  # not a number)
        widths[c] = max(len(columns[c].split()[0]) if columns[c] else 1, widths[c] - excess)
    table = Table(title=escape(title), title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True, padding=(0, gap - 1))
    for c, column in enumerate(columns):
        table.add_column(column, width=widths[c], overflow="fold",
                         justify="left" if column in left else "right")
    for r, row in enumerate(rows):
        table.add_row(*row, style=styles[r] if r < len(styles) else "")
    return table


def column_groups(columns: Sequence[str], rows: Sequence[Sequence[str]], *, width: int = 80,
                  keep: int = 1) -> list[list[int]]:
    """The columns split into groups, each of which fits ``width`` with every word whole
    (:func:`words_table`), the first ``keep`` columns (the rows' names) in every group; one
    group when they all fit together. A column too wide to share a table goes alone."""
    from rich.text import Text

    plain = [[Text.from_markup(cell).plain for cell in row] for row in rows]
    need = [max([len(w) for w in columns[c].split()]
                + [len(w) for row in plain for w in atoms(row[c])] or [1])
            for c in range(len(columns))]
    fixed = sum(need[:keep]) + 2 * keep
    groups: list[list[int]] = []
    used = width
    for c in range(keep, len(columns)):
        if used + need[c] + 2 > width and (not groups or len(groups[-1]) > keep):
            groups.append(list(range(keep)))
            used = fixed
        groups[-1].append(c)
        used += need[c] + 2
    return groups or [list(range(len(columns)))]
