//! The fused tensor-parallel ops (`Ops::all_gather_gemm`, `Ops::gemm_reduce_scatter`) on every
//! backend against a host reference, on 2 to 4 PEs: chunks of A that do not fall on tile
//! boundaries (tiles straddling two, three or four PEs' rows), odd tile counts along M and N,
//! both kernels (sm90 where it runs, sm80 everywhere), both layouts of B, waiting in the GEMM
//! and outside it (`Waits`), several calls in a row on the same buffers (the flags' epochs,
//! the workspace's reuse), a PE whose data arrives last (`Ops::set_send_delay_for_tests`),
//! split teams, graphs launched many times on fresh data with eager calls in between, and the
//! errors of bad shapes and of what a graph cannot record.
//!
//! Inputs are small integers from a fresh seed: products and their sums are exact in f32, and
//! the reduce-scatter's partials stay below 256 in magnitude (exact in bf16), so every result
//! equals the exact sum rounded once to bf16, which the test compares bit for bit. Whatever
//! the GEMM must not have read yet is poisoned: the rows of A that peers send are NaN until
//! they arrive (a tile that read them early gives NaN), and C is NaN with a guard band past
//! its end.

#[macro_use]
#[path = "../../tests/common/mod.rs"]
mod common;

use common::{agreed_seed, random_u32, Outcome};
use rshmem::{bf16, Result, Shmem, Stream, SymBuffer, Team};
use rshmem_ops::{BLayout, FusedOptions, GemmShape, Kernel, Ops, Waits};
use std::time::Duration;

per_backend! {
    all_gather_gemm_odd_shapes => [2, 3, 4];
    all_gather_gemm_late_chunk => [3];
    all_gather_gemm_more_tiles_than_multiprocessors => [2, 4];
    gemm_reduce_scatter_more_tiles_than_multiprocessors => [2, 4];
    gemm_reduce_scatter_odd_shapes => [2, 3, 4];
    gemm_reduce_scatter_late_partials => [3];
    fused_calls_over_split_teams => [4];
    fused_errors_name_the_problem => [2];
    fused_graphs_replay_on_new_data => [2, 3];
    fused_calls_on_sub_ranges => [2];
}

/// Poison past C's end.
const TAIL: usize = 29;

/// Both places to wait (in the GEMM, outside it), forced whatever `Auto` would pick here.
const WAITS: [Waits; 2] = [Waits::InGemm, Waits::OutsideGemm];

/// The kernels to run on `npes` PEs: the simulated sm90 kernel is the slow one (three
/// warpgroups of host threads per block), so the tests run both kernels on 2 PEs, sm90 alone
/// on 3 and sm80 alone on 4; a GPU without sm90 runs sm80 everywhere.
fn kernels(ops: &Ops<'_>, npes: usize) -> Vec<Kernel> {
    match (ops.device_info().sm == 90, npes) {
        (false, _) => vec![Kernel::Sm80],
        (true, 2) => vec![Kernel::Sm90, Kernel::Sm80],
        (true, 3) => vec![Kernel::Sm90],
        (true, _) => vec![Kernel::Sm80],
    }
}

/// `len` small integers in `lo..=hi` from `seed`.
fn small(len: usize, seed: u64, (lo, hi): (i32, i32)) -> Vec<f32> {
    let span = (hi - lo + 1) as u32;
    random_u32(len, seed)
        .into_iter()
        .map(|r| (lo + (r % span) as i32) as f32)
        .collect()
}

fn to_bf16(v: &[f32]) -> Vec<bf16> {
    v.iter().map(|&x| bf16::from_f32(x)).collect()
}

/// `A (rows x k) · B` for B as `layout` says (`b` n x k or k x n), exact in f64.
fn matmul(a: &[f32], b: &[f32], (rows, n, k): (usize, usize, usize), layout: BLayout) -> Vec<f64> {
    let mut c = vec![0.0f64; rows * n];
    for r in 0..rows {
        for q in 0..k {
            let x = f64::from(a[r * k + q]);
            for j in 0..n {
                let y = match layout {
                    BLayout::NK => b[j * k + q],
                    BLayout::KN => b[q * n + j],
                };
                c[r * n + j] += x * f64::from(y);
            }
        }
    }
    c
}

/// Compares `got` (`rows x n` of bf16, then the tail) with the exact `want` rounded to bf16.
fn compare(got: &[bf16], want: &[f64], n: usize, what: &str) {
    for (i, &w) in want.iter().enumerate() {
        let w16 = bf16::from_f64(w);
        assert!(
            got[i].to_bits() == w16.to_bits(),
            "{what}: C[{}][{}] = {}, want {w16} (exact {w})",
            i / n,
            i % n,
            got[i]
        );
    }
    assert!(
        got[want.len()..].iter().all(|v| v.is_nan()),
        "{what}: a store past C's end"
    );
}

/// What precedes A and B in their buffers when a case puts them further in (`at`): a value a
/// GEMM that ignored the offset would read, and which must stay.
const PREFIX: bf16 = bf16::from_f32_const(3.0);

/// `c` from element `at` on, once the elements before it are checked to be the poison (NaN)
/// the fill wrote: the call wrote nothing before its C.
fn before(c: &[bf16], at: usize, what: &str) -> std::result::Result<Vec<bf16>, String> {
    match c[..at].iter().position(|v| !v.is_nan()) {
        Some(i) => Err(format!(
            "{what}: element {i} of C's buffer, before C, was written"
        )),
        None => Ok(c[at..].to_vec()),
    }
}

/// Distinguishes the data of different teams: the world number of the team's first PE.
fn team_salt(shmem: &Shmem, team: Team) -> u64 {
    let first = shmem
        .team_translate_pe(team, 0, Team::WORLD)
        .expect("a team");
    0x5EED_0000 + first as u64
}

/// The shapes, per PE: rows, N, K, B's layout and how many calls in a row. Chunks of 37 rows
/// (every tile straddles chunks; the reduce-scatter's rows all go through its fix-up), of 150
/// (a whole band per chunk, bands straddling at the chunk ends) and of 128 (whole tiles only);
/// N gives one column tile, or three of the sm80 kernel's (128 wide; the simulated sm90
/// kernel, 256 wide, costs too much host time at two: the tile arithmetic it would test is the
/// hooks', shared by both); K one k-step or a partial one.
const SHAPES: [((u32, u32, u32), BLayout, usize); 3] = [
    ((37, 40, 24), BLayout::NK, 2),
    ((150, 40, 16), BLayout::KN, 1),
    ((128, 264, 8), BLayout::NK, 1),
];

/// The shapes to run with `kernel` on `npes` PEs: every shape on 2 PEs (the multi-column one
/// with sm80 only); on 3 and 4 PEs the two whose chunks straddle tiles (sim time: a simulated
/// tile costs a good part of a second of host threads).
fn shapes(kernel: Kernel, npes: usize) -> &'static [((u32, u32, u32), BLayout, usize)] {
    match (npes, kernel) {
        (2, Kernel::Sm80) => &SHAPES,
        _ => &SHAPES[..2],
    }
}

/// One all-gather + GEMM problem on this PE: its buffers, and what the last `fill` expects.
struct AllGather<'s> {
    a: SymBuffer<'s, bf16>,
    b: SymBuffer<'s, bf16>,
    c: SymBuffer<'s, bf16>,
    /// Where A, B and C start in their buffers (the call passes ranges from there on).
    at: [usize; 3],
    shape: GemmShape,
    /// Rows per rank, N, K (as usize).
    dims: (usize, usize, usize),
    rank: usize,
    salt: u64,
    what: String,
    /// The whole A of the last fill, and C as it must come out.
    a_all: Vec<f32>,
    want: Vec<f64>,
}

/// What the tests do with a problem of either op: fill its inputs (`seed` agreed by the
/// team), queue the call, check its outputs.
trait FusedCase {
    fn fill(&mut self, shmem: &Shmem, seed: u64) -> Outcome;
    fn call(&mut self, ops: &Ops<'_>, stream: &Stream<'_>, options: FusedOptions) -> Result<()>;
    /// Checks the outputs against the last fill; `call` names the call in messages.
    fn check(&self, call: &str) -> Outcome;
}

/// A fused case's team rank and whole shape: `rows` per rank, `n` rounded up to the 8 that
/// B K x N needs.
struct Dims {
    team_n: usize,
    rank: usize,
    m: u32,
    n: u32,
}

/// How a problem of either op is made, its buffers allocated (collective).
trait NewCase<'s>: Sized {
    /// A problem whose A, B and C start `at` elements into their buffers.
    fn new_at(
        shmem: &'s Shmem,
        rows_n_k: (u32, u32, u32),
        layout: BLayout,
        options: FusedOptions,
        at: [usize; 3],
    ) -> Result<Self>;

    /// A problem whose A, B and C start their buffers.
    fn new(
        shmem: &'s Shmem,
        rows_n_k: (u32, u32, u32),
        layout: BLayout,
        options: FusedOptions,
    ) -> Result<Self> {
        Self::new_at(shmem, rows_n_k, layout, options, [0; 3])
    }
}

impl Dims {
    fn of(shmem: &Shmem, rows: u32, n: u32, layout: BLayout, options: FusedOptions) -> Self {
        let team_n = shmem.team_n_pes(options.team).expect("a member");
        let rank = shmem.team_my_pe(options.team).expect("a member");
        let n = if layout == BLayout::KN {
            n.next_multiple_of(8)
        } else {
            n
        };
        Dims {
            team_n,
            rank,
            m: rows * team_n as u32,
            n,
        }
    }
}

impl<'s> NewCase<'s> for AllGather<'s> {
    fn new_at(
        shmem: &'s Shmem,
        (rows, n, k): (u32, u32, u32),
        layout: BLayout,
        options: FusedOptions,
        at: [usize; 3],
    ) -> Result<Self> {
        let Dims { team_n, rank, m, n } = Dims::of(shmem, rows, n, layout, options);
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        Ok(Self {
            a: shmem.alloc_zeroed::<bf16>(at[0] + mu * ku)?,
            b: shmem.alloc_zeroed::<bf16>(at[1] + nu * ku)?,
            c: shmem.alloc_zeroed::<bf16>(at[2] + mu * nu + TAIL)?,
            at,
            shape: GemmShape::new(m, n, k, layout),
            dims: (rows as usize, nu, ku),
            rank,
            salt: team_salt(shmem, options.team),
            what: format!(
                "all_gather_gemm {m}x{n}x{k} B {layout:?} {:?} on {team_n} PEs (rank {rank})",
                options.kernel
            ),
            a_all: Vec::new(),
            want: Vec::new(),
        })
    }
}

impl FusedCase for AllGather<'_> {
    /// Writes fresh inputs from `seed` (the team's A, agreed; this PE's own B), NaN where the
    /// peers' chunks of A will arrive and in C.
    fn fill(&mut self, shmem: &Shmem, seed: u64) -> Outcome {
        let (ru, nu, ku) = self.dims;
        let mu = self.shape.m as usize;
        self.a_all = small(mu * ku, seed ^ self.salt, (-2, 2));
        let b_mine = small(nu * ku, seed ^ (0xB0 + shmem.my_pe() as u64), (-3, 3));
        let mut a_host = vec![bf16::NAN; mu * ku];
        let own = self.rank * ru * ku..(self.rank + 1) * ru * ku;
        a_host[own.clone()].copy_from_slice(&to_bf16(&self.a_all[own]));
        let [at_a, at_b, at_c] = self.at;
        self.a
            .copy_from_host(&[vec![PREFIX; at_a], a_host].concat())?;
        self.b
            .copy_from_host(&[vec![PREFIX; at_b], to_bf16(&b_mine)].concat())?;
        self.c
            .copy_from_host(&vec![bf16::NAN; at_c + mu * nu + TAIL])?;
        self.want = matmul(&self.a_all, &b_mine, (mu, nu, ku), self.shape.b_layout);
        Ok(())
    }

    fn call(&mut self, ops: &Ops<'_>, stream: &Stream<'_>, options: FusedOptions) -> Result<()> {
        let Self { a, b, c, shape, .. } = self;
        let [at_a, at_b, at_c] = self.at;
        let (a, b, c) = (a.range_mut(at_a..)?, b.range(at_b..)?, c.range_mut(at_c..)?);
        ops.all_gather_gemm_with(stream, a, b, c, *shape, options)
    }

    /// C and the gathered A, and what is before them in their buffers.
    fn check(&self, call: &str) -> Outcome {
        let what = format!("{}, {call}", self.what);
        let [at_a, _, at_c] = self.at;
        compare(
            &before(&self.c.to_vec()?, at_c, &what)?,
            &self.want,
            self.dims.1,
            &what,
        );
        let gathered = self.a.to_vec()?;
        if gathered[..at_a]
            .iter()
            .any(|v| v.to_bits() != PREFIX.to_bits())
        {
            return Err(format!("{what}: A's buffer changed before A").into());
        }
        let gathered = &gathered[at_a..];
        assert!(
            gathered
                .iter()
                .zip(&self.a_all)
                .all(|(g, &w)| g.to_f32() == w),
            "{what}: the gathered A differs"
        );
        Ok(())
    }
}

/// One GEMM + reduce-scatter problem on this PE: its buffers, and what the last `fill`
/// expects.
struct ReduceScatter<'s> {
    a: SymBuffer<'s, bf16>,
    b: SymBuffer<'s, bf16>,
    c: SymBuffer<'s, bf16>,
    /// Where A, B and C start in their buffers.
    at: [usize; 3],
    shape: GemmShape,
    /// Rows per rank, N, K (as usize).
    dims: (usize, usize, usize),
    rank: usize,
    team_n: usize,
    salt: u64,
    what: String,
    /// This rank's rows of the sum as they must come out.
    want: Vec<f64>,
}

impl<'s> NewCase<'s> for ReduceScatter<'s> {
    fn new_at(
        shmem: &'s Shmem,
        (rows, n, k): (u32, u32, u32),
        layout: BLayout,
        options: FusedOptions,
        at: [usize; 3],
    ) -> Result<Self> {
        let Dims { team_n, rank, m, n } = Dims::of(shmem, rows, n, layout, options);
        let (mu, nu, ku, ru) = (m as usize, n as usize, k as usize, rows as usize);
        Ok(Self {
            a: shmem.alloc_zeroed::<bf16>(at[0] + mu * ku)?,
            b: shmem.alloc_zeroed::<bf16>(at[1] + nu * ku)?,
            c: shmem.alloc_zeroed::<bf16>(at[2] + ru * nu + TAIL)?,
            at,
            shape: GemmShape::new(m, n, k, layout),
            dims: (ru, nu, ku),
            rank,
            team_n,
            salt: team_salt(shmem, options.team),
            what: format!(
                "gemm_reduce_scatter {m}x{n}x{k} B {layout:?} {:?} on {team_n} PEs (rank {rank})",
                options.kernel
            ),
            want: Vec::new(),
        })
    }
}

impl FusedCase for ReduceScatter<'_> {
    /// Writes this rank's fresh A and B from `seed` and NaN into C.
    fn fill(&mut self, _: &Shmem, seed: u64) -> Outcome {
        let (ru, nu, ku) = self.dims;
        let mu = self.shape.m as usize;
        let seed = seed ^ self.salt;
        // Rank r's A (m x k) and B: partials are sums of k <= 72 products of magnitude <= 2,
        // below 256 (exact in bf16).
        let data = |r: usize| {
            (
                small(mu * ku, seed ^ (0xA0 + r as u64), (-1, 1)),
                small(nu * ku, seed ^ (0xB0 + r as u64), (-1, 2)),
            )
        };
        let (a_mine, b_mine) = data(self.rank);
        let [at_a, at_b, at_c] = self.at;
        self.a
            .copy_from_host(&[vec![PREFIX; at_a], to_bf16(&a_mine)].concat())?;
        self.b
            .copy_from_host(&[vec![PREFIX; at_b], to_bf16(&b_mine)].concat())?;
        self.c
            .copy_from_host(&vec![bf16::NAN; at_c + ru * nu + TAIL])?;
        self.want = vec![0.0f64; ru * nu];
        let rows = self.rank * ru * ku..(self.rank + 1) * ru * ku;
        for r in 0..self.team_n {
            let (ar, br) = data(r);
            let p = matmul(&ar[rows.clone()], &br, (ru, nu, ku), self.shape.b_layout);
            self.want.iter_mut().zip(p).for_each(|(w, x)| *w += x);
        }
        Ok(())
    }

    fn call(&mut self, ops: &Ops<'_>, stream: &Stream<'_>, options: FusedOptions) -> Result<()> {
        let Self { a, b, c, shape, .. } = self;
        let [at_a, at_b, at_c] = self.at;
        let (a, b, c) = (a.range(at_a..)?, b.range(at_b..)?, c.range_mut(at_c..)?);
        ops.gemm_reduce_scatter_with(stream, a, b, c, *shape, options)
    }

    /// This rank's rows of the sum, and the poison before them.
    fn check(&self, call: &str) -> Outcome {
        let what = format!("{}, {call}", self.what);
        let c = before(&self.c.to_vec()?, self.at[2], &what)?;
        compare(&c, &self.want, self.dims.1, &what);
        Ok(())
    }
}

/// `calls` calls in a row on the same buffers, fresh data each.
fn check_calls(
    shmem: &Shmem,
    ops: &Ops<'_>,
    case: &mut impl FusedCase,
    options: FusedOptions,
    calls: usize,
) -> Outcome {
    for call in 0..calls {
        case.fill(shmem, agreed_seed(shmem)? ^ (call as u64) << 40)?;
        case.call(ops, &shmem.stream(), options)?;
        case.check(&format!("call {call}"))?;
    }
    Ok(())
}

/// [`check_calls`] of an all-gather + GEMM.
fn check_all_gather(
    shmem: &Shmem,
    ops: &Ops<'_>,
    rows_n_k: (u32, u32, u32),
    layout: BLayout,
    options: FusedOptions,
    calls: usize,
) -> Outcome {
    let mut case = AllGather::new(shmem, rows_n_k, layout, options)?;
    check_calls(shmem, ops, &mut case, options, calls)
}

/// [`check_calls`] of a GEMM + reduce-scatter.
fn check_reduce_scatter(
    shmem: &Shmem,
    ops: &Ops<'_>,
    rows_n_k: (u32, u32, u32),
    layout: BLayout,
    options: FusedOptions,
    calls: usize,
) -> Outcome {
    let mut case = ReduceScatter::new(shmem, rows_n_k, layout, options)?;
    check_calls(shmem, ops, &mut case, options, calls)
}

fn all_gather_gemm_odd_shapes(shmem: &Shmem) -> Outcome {
    odd_shapes(shmem, check_all_gather)
}

/// The last rank sends its chunk 100 ms late: waiting in the GEMM, every other PE's tiles of
/// it wait (the rest of its GEMM goes on); outside it, `ag_wait` does; nothing reads it
/// before it arrived.
fn all_gather_gemm_late_chunk(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let late = shmem.my_pe() + 1 == shmem.n_pes();
    ops.set_send_delay_for_tests(Duration::from_millis(if late { 100 } else { 0 }));
    for options in every_wait(kernels(&ops, 2)) {
        check_all_gather(shmem, &ops, (64, 40, 16), BLayout::NK, options, 1)?;
    }
    Ok(())
}

/// Twice as many tiles as the PE has multiprocessors (so the persistent grid is as large as it
/// gets) while the chunks are still being pushed: where PEs share a GPU the call waits for
/// them outside its GEMM ([`Waits::Auto`]; waiting in it with the whole share, 2 PEs under
/// MPS hung at 4096³, and 4 PEs now and then with SMs left free).
fn all_gather_gemm_more_tiles_than_multiprocessors(shmem: &Shmem) -> Outcome {
    more_tiles_than_multiprocessors(shmem, check_all_gather)
}

/// The same for the reduce-scatter, whose blocks would wait for the other PEs' partials:
/// where PEs share a GPU it reduces after its GEMM ([`Waits::Auto`]; reducing in the
/// epilogue, 4 PEs under MPS hung: MPS does not keep every PE's grid resident).
fn gemm_reduce_scatter_more_tiles_than_multiprocessors(shmem: &Shmem) -> Outcome {
    more_tiles_than_multiprocessors(shmem, check_reduce_scatter)
}

/// [`check_all_gather`] or [`check_reduce_scatter`].
type Check = fn(&Shmem, &Ops<'_>, (u32, u32, u32), BLayout, FusedOptions, usize) -> Outcome;

/// `check` (of a fused op) of a problem with twice as many 128 x 256 tiles as the PE has
/// multiprocessors, with each kernel (on the simulator those [`kernels`] picks).
fn more_tiles_than_multiprocessors(shmem: &Shmem, check: Check) -> Outcome {
    let ops = Ops::new(shmem)?;
    let sms = ops.device_info().multiprocessors;
    let rows = 256 * sms / shmem.n_pes() as u32; // 128-row tiles, n in one 256-column tile
    let sim = shmem.backend() == rshmem::Backend::Sim;
    for kernel in kernels(&ops, if sim { shmem.n_pes() } else { 2 }) {
        let options = FusedOptions {
            kernel,
            ..FusedOptions::default()
        };
        check(shmem, &ops, (rows, 256, 64), BLayout::NK, options, 1)?;
    }
    Ok(())
}

fn gemm_reduce_scatter_odd_shapes(shmem: &Shmem) -> Outcome {
    odd_shapes(shmem, check_reduce_scatter)
}

/// `check` (of a fused op) of every shape of [`shapes`], with the kernels [`kernels`] picks,
/// waiting in the GEMM and outside it.
fn odd_shapes(shmem: &Shmem, check: Check) -> Outcome {
    let ops = Ops::new(shmem)?;
    for options in every_wait(kernels(&ops, shmem.n_pes())) {
        for &(shape, layout, calls) in shapes(options.kernel, shmem.n_pes()) {
            check(shmem, &ops, shape, layout, options, calls)?;
        }
    }
    Ok(())
}

/// The options of each of `kernels` with each of [`WAITS`].
fn every_wait(kernels: Vec<Kernel>) -> impl Iterator<Item = FusedOptions> {
    kernels.into_iter().flat_map(|kernel| {
        WAITS.map(|waits| FusedOptions {
            kernel,
            waits,
            ..FusedOptions::default()
        })
    })
}

/// Rank 0 starts its GEMM 100 ms late: its partials of everyone else's rows arrive last, and
/// every owner waits for them: reducing in the epilogue, rank 2 (rows 128..192, a whole band)
/// in its epilogue, ranks 0 and 1 (band 0 straddles them) in the fix-up; reducing after the
/// GEMM, every rank in `rs_wait`.
fn gemm_reduce_scatter_late_partials(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let late = shmem.my_pe() == 0;
    ops.set_send_delay_for_tests(Duration::from_millis(if late { 100 } else { 0 }));
    for options in every_wait(kernels(&ops, 2)) {
        check_reduce_scatter(shmem, &ops, (64, 40, 16), BLayout::NK, options, 1)?;
    }
    Ok(())
}

/// Four PEs as two teams of two, PEs {0, 2} and {1, 3} (stride 2), each running its own calls
/// at the same time on its own data; then the world team again on the same `Ops`.
fn fused_calls_over_split_teams(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let mine = shmem.my_pe() % 2;
    let even = shmem.team_split_strided(Team::WORLD, 0, 2, 2)?;
    let odd = shmem.team_split_strided(Team::WORLD, 1, 2, 2)?;
    let team = if mine == 0 {
        even.as_ref()
    } else {
        odd.as_ref()
    }
    .expect("a member");
    let kernel = *kernels(&ops, 4).first().expect("one kernel");
    let options = FusedOptions {
        kernel,
        team: team.team(),
        ..FusedOptions::default()
    };
    check_all_gather(shmem, &ops, (150, 40, 24), BLayout::NK, options, 1)?;
    check_reduce_scatter(shmem, &ops, (37, 40, 24), BLayout::KN, options, 1)?;
    let world = FusedOptions {
        kernel,
        ..FusedOptions::default()
    };
    check_reduce_scatter(shmem, &ops, (64, 40, 16), BLayout::NK, world, 1)?;
    Ok(())
}

/// Nine PEs: one more than the reduce-scatter epilogue's table of mapped peers
/// (`rshmem_coll::MAX_PEERS`); refused on the host with what the limit is, nothing launched.
/// The simulator only: the GPU machine has one GPU, and nine PEs sharing it test nothing more.
#[test]
fn sim_reduce_scatter_refuses_a_team_past_its_peer_table_9pe() {
    common::run_case(
        rshmem::Backend::Sim,
        9,
        "sim_reduce_scatter_refuses_a_team_past_its_peer_table_9pe",
        fused_reduce_scatter_refuses_a_team_past_its_peer_table,
    )
}

fn fused_reduce_scatter_refuses_a_team_past_its_peer_table(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let stream = shmem.stream();
    let a = shmem.alloc_zeroed::<bf16>(72 * 8)?;
    let b = shmem.alloc_zeroed::<bf16>(8 * 8)?;
    let mut c = shmem.alloc_zeroed::<bf16>(8 * 8)?;
    let e = ops
        .gemm_reduce_scatter(
            &stream,
            &a,
            &b,
            &mut c,
            GemmShape::new(72, 8, 8, BLayout::NK),
        )
        .expect_err("9 PEs")
        .to_string();
    assert!(
        e.contains("Ops::gemm_reduce_scatter") && e.contains("9 PEs") && e.contains("at most 8"),
        "{e}"
    );
    Ok(())
}

fn fused_errors_name_the_problem(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let stream = shmem.stream();
    let mut a = shmem.alloc_zeroed::<bf16>(1024)?;
    let b = shmem.alloc_zeroed::<bf16>(1024)?;
    let mut c = shmem.alloc_zeroed::<bf16>(1024)?;
    let nk = |m, n, k| GemmShape::new(m, n, k, BLayout::NK);
    let e = ops
        .all_gather_gemm(&stream, &mut a, &b, &mut c, nk(7, 8, 8))
        .expect_err("7 rows over 2 PEs")
        .to_string();
    assert!(
        e.contains("Ops::all_gather_gemm")
            && e.contains("m = 7")
            && e.contains("pad M with zero rows to 8"),
        "{e}"
    );
    let e = ops
        .gemm_reduce_scatter(&stream, &a, &b, &mut c, nk(64, 40, 8))
        .expect_err("c too short")
        .to_string();
    assert!(
        e.contains("Ops::gemm_reduce_scatter")
            && e.contains("`c` has 1024 elements")
            && e.contains("m / size x n = 32 x 40 = 1280"),
        "{e}"
    );
    let e = ops
        .all_gather_gemm(&stream, &mut a, &b, &mut c, nk(32, 8, 12))
        .expect_err("k = 12")
        .to_string();
    assert!(
        e.contains("k = 12") && e.contains("Ops::all_gather_gemm"),
        "{e}"
    );
    let bad_team = FusedOptions {
        team: Team::INVALID,
        ..FusedOptions::default()
    };
    let e = ops
        .gemm_reduce_scatter_with(&stream, &a, &b, &mut c, nk(8, 8, 8), bad_team)
        .expect_err("not a member")
        .to_string();
    assert!(e.contains("not a member"), "{e}");
    // The first call cannot be recorded: it makes the workspace (a symmetric allocation).
    let sm80 = FusedOptions {
        kernel: Kernel::Sm80,
        ..FusedOptions::default()
    };
    let side = shmem.new_stream()?;
    let e = side
        .capture(|| ops.all_gather_gemm_with(&side, &mut a, &b, &mut c, nk(32, 8, 8), sm80))
        .expect_err("not recordable")
        .to_string();
    assert!(
        e.contains("graph capture: Ops::all_gather_gemm")
            && e.contains("symmetric allocation")
            && e.contains("once outside the capture first"),
        "{e}"
    );
    // Nothing ran: C is untouched, and a good call still works after the refusals.
    assert!(c.to_vec()?.iter().all(|v| v.to_f32() == 0.0));
    check_reduce_scatter(shmem, &ops, (16, 8, 8), BLayout::NK, sm80, 1)?;
    if ops.device_info().sm == 90 {
        // The sm90 path's first call on new operands fills their tensor-map slot.
        let sm90 = FusedOptions {
            kernel: Kernel::Sm90,
            ..FusedOptions::default()
        };
        let e = side
            .capture(|| ops.gemm_reduce_scatter_with(&side, &a, &b, &mut c, nk(32, 8, 8), sm90))
            .expect_err("new operands")
            .to_string();
        assert!(
            e.contains("graph capture: Ops::gemm_reduce_scatter")
                && e.contains("tensor-map slot")
                && e.contains("run the call once on the same buffers and shape"),
            "{e}"
        );
    }
    // A live graph keeps the workspace: a call that needs a larger one is refused until the
    // graph is dropped.
    let mut small = ReduceScatter::new(shmem, (16, 8, 8), BLayout::NK, sm80)?;
    small.fill(shmem, 1)?;
    small.call(&ops, &side, sm80)?;
    let graph = side.capture(|| small.call(&ops, &side, sm80))?;
    let mut large = ReduceScatter::new(shmem, (128, 40, 8), BLayout::NK, sm80)?;
    large.fill(shmem, agreed_seed(shmem)?)?;
    let e = large
        .call(&ops, &side, sm80)
        .expect_err("the workspace is pinned")
        .to_string();
    assert!(
        e.contains("Ops::gemm_reduce_scatter is not available")
            && e.contains("live graphs read the current one")
            && e.contains("drop those graphs on every PE first"),
        "{e}"
    );
    drop(graph);
    large.call(&ops, &side, sm80)?;
    large.check("after the graph was dropped")?;
    Ok(())
}

/// Launches of each graph below: 50, but 10 for the sm90 kernel on the simulator (its three
/// warpgroups of host threads make a call several times dearer than the sm80 kernel's; what
/// a graph relies on is the same for both: the epoch, the flags, the workspace; the sm90
/// path's own part, the pinned tensor-map slot, every launch reads alike).
fn launches(sim: bool, kernel: Kernel) -> usize {
    if sim && kernel == Kernel::Sm90 {
        10
    } else {
        50
    }
}

/// Records one call of `case` in a graph and launches it `launches` times on fresh data
/// (written before each launch; the host copies wait for the PE's streams), checking every
/// result; every 10 launches an eager call of the same `Ops` on the same buffers and stream
/// comes in between (its epoch counted in the same sequence as the graph's).
fn replay_graph(
    shmem: &Shmem,
    ops: &Ops<'_>,
    case: &mut impl FusedCase,
    options: FusedOptions,
    launches: usize,
) -> Outcome {
    let stream = shmem.new_stream()?;
    let seed = agreed_seed(shmem)?;
    // Made once eagerly: the workspace, the side stream, the sm90 path's tensor maps.
    case.fill(shmem, seed)?;
    case.call(ops, &stream, options)?;
    case.check("the eager call before the capture")?;
    let graph = stream.capture(|| case.call(ops, &stream, options))?;
    for launch in 1..=launches {
        let fresh = seed ^ (launch as u64) << 40;
        case.fill(shmem, fresh)?;
        // SAFETY: the graph's call reads and writes `case`'s buffers and the `Ops`' workspace,
        // alive until it is dropped; every PE launches it at the same point of its calls.
        unsafe { graph.launch(&stream)? };
        case.check(&format!("graph launch {launch}"))?;
        if launch % 10 == 0 {
            case.fill(shmem, fresh ^ 0xE)?;
            case.call(ops, &stream, options)?;
            case.check(&format!("the eager call after graph launch {launch}"))?;
        }
    }
    Ok(())
}

/// The graphs to record on `npes` PEs, per op: (kernel, layout of B). On GPUs every kernel
/// that runs with both layouts. On the simulator, where a call costs a good part of a second
/// of host threads (the sm90 kernel's three warpgroups several times that), a set that still
/// meets every op with each layout on 2 and on 3 PEs and with each kernel on 2 PEs.
fn graph_cases(ops: &Ops<'_>, npes: usize, sim: bool) -> [Vec<(Kernel, BLayout)>; 2] {
    use BLayout::{KN, NK};
    use Kernel::{Sm80, Sm90};
    let sm90 = ops.device_info().sm == 90;
    match (sim, npes) {
        (false, _) => {
            let kernels = if sm90 { vec![Sm90, Sm80] } else { vec![Sm80] };
            let all: Vec<_> = kernels
                .into_iter()
                .flat_map(|k| [(k, NK), (k, KN)])
                .collect();
            [all.clone(), all]
        }
        (true, 2) => [vec![(Sm80, NK), (Sm90, KN)], vec![(Sm80, KN), (Sm90, NK)]],
        (true, _) => [vec![(Sm80, KN)], vec![(Sm80, NK)]],
    }
}

/// Graphs of both ops (see [`graph_cases`] for which kernels and layouts), each call small
/// (one tile holding rows of every chunk: the reduce-scatter reduces in its fix-up) so that
/// the simulator's launches stay cheap.
fn fused_graphs_replay_on_new_data(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let sim = shmem.backend() == rshmem::Backend::Sim;
    let [ag, rs] = graph_cases(&ops, shmem.n_pes(), sim);
    let options = |kernel| FusedOptions {
        kernel,
        ..FusedOptions::default()
    };
    for (kernel, layout) in ag {
        let mut case = AllGather::new(shmem, (12, 16, 16), layout, options(kernel))?;
        replay_graph(
            shmem,
            &ops,
            &mut case,
            options(kernel),
            launches(sim, kernel),
        )?;
    }
    for (kernel, layout) in rs {
        let mut case = ReduceScatter::new(shmem, (12, 16, 16), layout, options(kernel))?;
        replay_graph(
            shmem,
            &ops,
            &mut case,
            options(kernel),
            launches(sim, kernel),
        )?;
    }
    Ok(())
}

/// `tp_bench` (the benchmark binary `scripts/tp_bench.py` drives) on 2 simulated PEs: reads
/// its inputs, writes each PE's C (checked here against the host) and prints a JSON line per
/// PE, for both ops.
#[test]
fn tp_bench_runs_both_ops_on_the_simulator() {
    let dir = std::env::temp_dir().join(format!("rshmem-tp-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (npes, m, n, k) = (2usize, 64usize, 40usize, 16usize);
    let write = |name: &str, v: &[f32]| {
        let bits: Vec<bf16> = to_bf16(v);
        std::fs::write(dir.join(name), bytemuck::cast_slice(&bits)).unwrap();
    };
    let read = |name: &str| -> Vec<bf16> {
        bytemuck::cast_slice(&std::fs::read(dir.join(name)).unwrap()).to_vec()
    };
    let bs: Vec<Vec<f32>> = (0..npes)
        .map(|r| small(n * k, 7 + r as u64, (-3, 3)))
        .collect();
    for (r, b) in bs.iter().enumerate() {
        write(&format!("b{r}.bin"), b);
    }
    let a = small(m * k, 5, (-2, 2));
    write("a.bin", &a);
    let parts: Vec<Vec<f32>> = (0..npes)
        .map(|r| small(m * k, 11 + r as u64, (-1, 1)))
        .collect();
    for (r, p) in parts.iter().enumerate() {
        write(&format!("a{r}.bin"), p);
    }
    for op in ["ag", "rs"] {
        let dims = [("--m", m), ("--n", n), ("--k", k)];
        let mut args = vec![
            "--dir",
            dir.to_str().unwrap(),
            "--op",
            op,
            "--iters",
            "1",
            "--warmup",
            "0",
        ];
        let nums: Vec<String> = dims.iter().map(|d| d.1.to_string()).collect();
        for (d, v) in dims.iter().zip(&nums) {
            args.extend([d.0, v.as_str()]);
        }
        if op == "rs" {
            args.extend(["--waits", "outside"]); // what PEs sharing a GPU run
        }
        let out = common::run_example_sim("tp_bench", npes, &args);
        for r in 0..npes {
            assert!(
                out.contains(&format!("{{\"pe\": {r}, \"npes\": 2, \"op\": \"{op}\"")),
                "{out}"
            );
            let got = read(&format!("c{r}.bin"));
            let want: Vec<f64> = if op == "ag" {
                matmul(&a, &bs[r], (m, n, k), BLayout::NK)
            } else {
                let rows = m / npes;
                (0..npes)
                    .map(|q| {
                        matmul(
                            &parts[q][r * rows * k..(r + 1) * rows * k],
                            &bs[q],
                            (rows, n, k),
                            BLayout::NK,
                        )
                    })
                    .fold(vec![0.0; rows * n], |acc, p| {
                        acc.iter().zip(p).map(|(x, y)| x + y).collect()
                    })
            };
            assert_eq!(got.len(), want.len(), "{op} PE {r}");
            let mut padded = got.clone();
            padded.extend(std::iter::repeat_n(bf16::NAN, TAIL));
            compare(&padded, &want, n, &format!("tp_bench {op} PE {r}"));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Both fused ops on ranges of larger buffers (A, B and C each some elements in, as aligned as
/// the kernels need), on every kernel: the results, the gathered A, and nothing written before
/// the ranges. A misaligned range is refused by name.
fn fused_calls_on_sub_ranges(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    for kernel in kernels(&ops, shmem.n_pes()) {
        let options = FusedOptions {
            kernel,
            ..FusedOptions::default()
        };
        for (at, layout) in [([8, 24, 2], BLayout::NK), ([40, 8, 6], BLayout::KN)] {
            let mut case = AllGather::new_at(shmem, (40, 24, 32), layout, options, at)?;
            check_calls(shmem, &ops, &mut case, options, 2)?;
            let mut case = ReduceScatter::new_at(shmem, (40, 24, 32), layout, options, at)?;
            check_calls(shmem, &ops, &mut case, options, 2)?;
        }
    }
    let stream = shmem.stream();
    let mut a = shmem.alloc_zeroed::<bf16>(1024)?;
    let b = shmem.alloc_zeroed::<bf16>(1024)?;
    let mut c = shmem.alloc_zeroed::<bf16>(1024)?;
    let shape = GemmShape::new(16, 8, 8, BLayout::NK);
    let e = ops
        .all_gather_gemm(&stream, a.range_mut(4..)?, &b, &mut c, shape)
        .expect_err("A 8 bytes in")
        .to_string();
    assert!(
        e.contains("Ops::all_gather_gemm") && e.contains("`a` starts") && e.contains("16-byte"),
        "{e}"
    );
    let e = ops
        .gemm_reduce_scatter(&stream, &a, &b, c.range_mut(1..)?, shape)
        .expect_err("C 2 bytes in")
        .to_string();
    assert!(
        e.contains("Ops::gemm_reduce_scatter") && e.contains("`c` starts") && e.contains("4-byte"),
        "{e}"
    );
    Ok(())
}
