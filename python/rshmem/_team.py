"""Teams: collective splits of all PEs (or of a team) into smaller teams, which every op with a
`team=` argument takes. A split returns the new team on its members only (None elsewhere), and
each PE passes the team its own split returned. The team is destroyed when its object goes."""

from . import _native, _runtime
from ._native import Team


def team_split_strided(start, stride, size, parent=None):
    """The team of `parent`'s PEs `start, start + stride, ..., start + (size - 1)·stride`
    (`parent` None: all PEs), numbered in that order; None on the parent's other PEs.
    Collective over the parent: every member calls it with the same arguments."""
    return _native.team_split_strided(_runtime.current(), start, stride, size, parent)


def team_split_2d(xrange, parent=None):
    """This PE's `(row, column)` of `parent` (None: all PEs) laid out in rows of `xrange`
    consecutive PEs. Collective over the parent."""
    return _native.team_split_2d(_runtime.current(), xrange, parent)


__all__ = ["Team", "team_split_2d", "team_split_strided"]
