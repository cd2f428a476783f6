"""Team splits, and the collectives over a team against numpy."""

import numpy as np
import pytest

import rshmem
from conftest import data, run


def test_strided_split_and_collectives_over_it():
    """On 3 PEs: the team of PEs 0 and 2 reduces, scatters and gathers among itself; PE 1
    gets None and its data stays out."""

    def pe_main():
        me = rshmem.my_pe()
        even = rshmem.team_split_strided(0, 2, 2)
        # The stream's collective workspace, and allocations: collective over all PEs.
        rshmem.prepare_collectives()
        x, out = rshmem.empty(8, "f32"), rshmem.empty(8, "f32")
        g, mine = rshmem.empty(8, "i32"), rshmem.empty(4, "i32")
        x[...] = data(me, 8, seed=3)
        if even is None:
            return None
        assert (even.my_pe, even.n_pes) == (me // 2, 2)
        assert even.translate_pe(1) == 2 and even.translate_pe(5) is None
        rshmem.all_reduce(x, out, team=even)
        rs = rshmem.reduce_scatter(x, team=even)  # in place: this member's chunk of 4
        mine[...] = 10 * me + np.arange(4)
        rshmem.all_gather(mine, g, team=even)
        return out.copy(), rs.copy(), g.copy()

    results = run(pe_main, 3)
    assert results[1] is None
    summed = data(0, 8, seed=3) + data(2, 8, seed=3)
    for me in (0, 2):
        out, rs, g = results[me]
        np.testing.assert_array_equal(out, summed)
        np.testing.assert_array_equal(rs, summed[(me // 2) * 4:(me // 2 + 1) * 4])
        assert g.tolist() == [0, 1, 2, 3, 20, 21, 22, 23]


def test_split_2d_rows_and_columns():
    def pe_main():
        me = rshmem.my_pe()
        row, col = rshmem.team_split_2d(2)
        rshmem.prepare_collectives()
        x = rshmem.empty(1, "i64")
        x[...] = 1 << me
        r, c = rshmem.empty(1, "i64"), rshmem.empty(1, "i64")
        rshmem.all_reduce(x, r, team=row)
        rshmem.all_reduce(x, c, team=col)
        return (row.my_pe, row.n_pes, col.my_pe, col.n_pes), int(r[0]), int(c[0])

    got = run(pe_main, 3)
    # Rows {0, 1}, {2}; columns {0, 2}, {1}.
    assert got == [((0, 2, 0, 2), 3, 5), ((1, 2, 0, 1), 3, 2), ((0, 1, 1, 2), 4, 5)]


def test_team_errors():
    holder = {}

    def pe_main():
        with pytest.raises(rshmem.ArgumentError, match="stride 0"):
            rshmem.team_split_strided(0, 0, 2)
        with pytest.raises(rshmem.ArgumentError, match="xrange 0"):
            rshmem.team_split_2d(0)
        team = rshmem.team_split_strided(0, 1, 2)
        holder[rshmem.my_pe()] = team
        x = rshmem.empty(4, "f32")  # collective: both PEs' teams are in `holder` after it
        other = holder[1 - rshmem.my_pe()]
        with pytest.raises(rshmem.ArgumentError, match="first collective on this stream.*prepare_collectives"):
            rshmem.all_reduce(x, team=rshmem.team_split_2d(1)[0])  # a row of one PE
        with pytest.raises(rshmem.ArgumentError, match="a team of PE .* passed to PE"):
            rshmem.all_reduce(x, team=other)
        rshmem.barrier_all()
        return repr(team)

    got = run(pe_main, 2)
    holder.clear()
    assert got[0].startswith("rshmem.Team(my_pe=0, n_pes=2")


def test_a_team_keeps_finalize_waiting_until_it_goes():
    """Teams count among what the PE lends out: its object alive, the PE is not torn down
    under it (the job ends cleanly when the function returns)."""

    def pe_main():
        team = rshmem.team_split_strided(0, 1, rshmem.n_pes())
        x = rshmem.empty(2, "f32")
        x[...] = 1
        rshmem.all_reduce(x, team=team)
        return team, x

    teams = run(pe_main, 2)
    team, x = teams[0]
    assert x.tolist() == [2, 2] and team.n_pes == 2
    with pytest.raises(rshmem.RshmemError, match="PE 0 has ended"):
        team.translate_pe(0)
