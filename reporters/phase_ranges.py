"""A verdict's phases as people read them: ranges, never a list of thousands.

    >>> ranges([3])                       # "phase 3"
    >>> ranges([1, 2, 3, 7])              # "phases 1–3, 7"
    >>> ranges(range(12, 9874))           # "phases 12–9,873, 9,862 phases"

At most MOST_RANGES runs of consecutive numbers are written out; more make one range from the
first to the last with the count. The text, Markdown and HTML reports use it (JSON keeps the
list); `check -v` prints every phase.
"""

from __future__ import annotations

MOST_RANGES = 4


def runs(phases) -> list[tuple[int, int]]:
    """(first, last) of each run of consecutive phase numbers, ascending."""
    numbers = sorted({int(p) for p in phases})
    out: list[tuple[int, int]] = []
    for p in numbers:
        if out and p == out[-1][1] + 1:
            out[-1] = (out[-1][0], p)
        else:
            out.append((p, p))
    return out


def _run(first: int, last: int, link) -> str:
    if first == last:
        return link(first)
    return f"{link(first)}–{link(last)}"


def ranges(phases, link=None, word: bool = True) -> str:
    """The phases as ranges, after "phase"/"phases" when `word`; `link(p)` writes one number
    (an HTML anchor), f"{p:,}" by default."""
    link = link or (lambda p: f"{p:,}")
    found = runs(phases)
    count = sum(last - first + 1 for first, last in found)
    if not found:
        return ""
    if len(found) > MOST_RANGES:
        text = f"{_run(found[0][0], found[-1][1], link)}, {count:,} phases"
    else:
        text = ", ".join(_run(first, last, link) for first, last in found)
    if not word:
        return text
    return f"{'phase' if count == 1 else 'phases'} {text}"
