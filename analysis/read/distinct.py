"""np.unique of a block's integer column, by hashing instead of sorting: the same arrays, faster.

    values, first, inverse, counts = distinct.unique(column, return_index=True,
                                                     return_inverse=True, return_counts=True)

The block pipeline asks np.unique for the few distinct phases, streams or threads of a block of
a million calls, every block of every pass; np.unique sorts the whole column for that (about
60 ms a block). pandas' factorize hashes it in one pass and numbers the distinct values in the
order they first appear, so the first occurrence of each is where the running maximum of the
numbers first reaches it; the few distinct values are then sorted. Every result is np.unique's,
element for element and dtype for dtype (tests/unit/test_distinct.py), for 1-D integer arrays;
anything else goes to np.unique itself.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def unique(values: np.ndarray, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False):
    """np.unique(values, return_index=..., return_inverse=..., return_counts=...)."""
    values = np.asarray(values)
    if values.ndim != 1 or values.dtype.kind not in "iu" or len(values) < 2:
        return np.unique(values, return_index=return_index, return_inverse=return_inverse,  # type: ignore[call-overload]
                         return_counts=return_counts)
    codes, seen = pd.factorize(values, sort=False)
    seen = np.asarray(seen, dtype=values.dtype)
    order = np.argsort(seen, kind="stable")
    out = [seen[order]]
    if return_index:
        first = np.searchsorted(np.maximum.accumulate(codes), np.arange(len(seen)), side="left")
        out.append(first[order].astype(np.intp))
    if return_inverse:
        rank = np.empty(len(seen), dtype=np.intp)
        rank[order] = np.arange(len(seen))
        out.append(rank[codes])
    if return_counts:
        out.append(np.bincount(codes, minlength=len(seen))[order].astype(np.intp))
    return out[0] if len(out) == 1 else tuple(out)
