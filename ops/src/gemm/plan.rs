//! What a GEMM runs: the kernel, the sm90 tile configuration and the split of K (of all its
//! rows, or of a sparse last wave's: [`split_tail`]) ([`GemmPlan`], resolved from
//! [`GemmOptions`](super::shape::GemmOptions) and the shape by
//! [`Ops::gemm_plan`](crate::Ops::gemm_plan)), and the cost model that picks the tile
//! ([`TileModel`], [`choose_tile`]).
//!
//! **The model.** A persistent launch of `T` tiles on `S` SMs gives its busiest SM `⌈T / S⌉`
//! tiles, one after the other, and every tile costs as much (a ragged tile at an edge of M or
//! N is computed in full from zero-filled boxes), so a configuration's time is modelled as
//!
//! ```text
//! cost = ⌈T / S⌉ x (⌈k / 64⌉ x step + fixed)
//! ```
//!
//! in units of one k-step (64 of K) of a 128 x 256 tile at the 128 x 256 kernel's rate. `step`
//! is the configuration's time per k-step of its own tile, `fixed` its time per tile outside
//! the k-loop (the consumers' epilogue: they store the tile from registers while the producer
//! already loads the next one, so the pipeline's fill is hidden but the stores are not). The
//! configuration of the lowest cost runs; a tie goes to 128 x 256 (the measured kernel). The
//! ragged last tile's waste and the partial last wave are both in `T` and the ceiling.
//!
//! **The parameters** ([`TILE_MODELS`]) are a least-squares fit of both kernels' times on one
//! H100 80GB (2026-12-06, 11 shapes each, `scripts/gemm_bench.py --tile 256,128`, the table in
//! `docs/gemm.md`): the unit is 0.73 µs there.
//!
//! * 128 x 256 (`N256`): `step = 1` (the unit), `fixed = 8.5` (6.2 µs per wave: the epilogue's
//!   stores of 64 KiB of C per tile, the pipeline's refill and the launch, which the model
//!   spreads over the waves). The derivation before the measurement had said 2.
//! * 128 x 128 (`N128`): `step = 0.62` (derived as `0.5 / 0.8 = 0.625`: half the FLOPs per
//!   k-step at 0.8 of the rate, the narrow tile moving 1.25 x the shared-memory bytes per
//!   FLOP), `fixed = 5.2` (derived: 1.25).
//!
//! The fit's worst row is 3000³ (K and N ragged by 56 and 184): both kernels 25–30 % slower
//! than the model says, the choice unchanged.
//!
//! So the narrow tile wins where the wide one's waves quantise badly: 133 to ~165 wide tiles on
//! 132 SMs are two waves (the second nearly empty) but three of narrow tiles (`3 x (0.62 k +
//! 5.2) < 2 x (k + 8.5)` at every K); where N leaves a last wide tile of at most 128 columns,
//! half of it wasted; and where few tiles of a short K leave SMs idle that twice as many
//! narrow tiles would fill. Large shapes keep 128 x 256 (`16 x 136.5` against `32 x 84.6` at
//! 8192³). Measured, the narrow tile's gain where it wins is small (5000 x 1000 x 4096: 105.7
//! against 110.4 µs) and its loss where it does not is large (8192³: 0.81 x the wide tile).
//!
//! **Re-tuning.** `gemm_bench --tile 256` / `--tile 128` times each configuration on the same
//! data (`scripts/gemm_bench.py --tile 256,128` over a table of shapes, each row beside cuBLAS);
//! `step` and `fixed` per configuration are then a least-squares fit of those times over
//! `(waves x k-steps, waves)`. The unit test below pins the choices of a table of shapes, so a
//! change of the parameters shows which choices moved.
//!
//! **Split-K composes with it.** [`SplitK::Auto`] decides first, as it always did (on 128 x 256
//! tiles: [`super::split_k::parts`]); a split GEMM runs the 128 x 256 split kernels, an unsplit
//! one the tile this model picks. A tile forced by the options ([`GemmTile::N128`]) runs
//! unsplit under `SplitK::Auto`; `SplitK::Parts(p > 1)` with it is refused (no 128 x 128 split
//! kernels). A graph capture never splits: where an eager call would, it records the unsplit
//! kernel on 128 x 256 tiles (the tensor maps the eager calls before it filled are those).
//!
//! **A split tail.** Where the last wave of 128 x 256 tiles is sparse (5000 x 1000: 160 tiles
//! on 132 SMs, the second wave 28 tiles), neither tile helps much: the narrow one has three
//! waves. Then the rows of the full waves run first, unsplit (`GemmPlan::split_from` rows:
//! 4224), and the rest run as a split-K GEMM of their own ([`super::split_k`]: 28 tiles in 4
//! parts of K fill 112 SMs for a quarter of the time), two launches and the reduction on the
//! stream. [`split_tail`] weighs it in the same units: `head + tail + SPLIT_PASS + bytes /
//! BYTES_PER_UNIT` (the reduction's launch, its reads of the parts and its writes of C)
//! against the best unsplit tile; at 5000 x 1000 x 4096, 107 against 135 units (the narrow
//! tile), ~78 µs (the model put the unsplit run at 98 µs, measured 105.7; cuBLAS 68.1).
//! Only under [`SplitK::Auto`] with [`GemmTile::Auto`]; a graph capture records the unsplit
//! 128 x 256 kernel instead, through the tensor maps the eager calls' head filled (it reads
//! A through the whole shape's maps; the tail has its own); [`SplitK::Off`] turns it off.
//! Prediction, not yet measured on a GPU.
//!
//! ```
//! use rshmem_ops::gemm::plan::choose_tile;
//! use rshmem_ops::GemmTile;
//! // 8192³ on 132 SMs: 2048 wide tiles, 16 waves; narrow ones would be 32.
//! assert_eq!(choose_tile(132, 8192, 8192, 8192), GemmTile::N256);
//! // 4224 x 1024 x 4096: 33 x 4 = 132 wide tiles, one wave: 128 x 256.
//! assert_eq!(choose_tile(132, 4224, 1024, 4096), GemmTile::N256);
//! // 4352 x 1024: 136 wide tiles (two waves, the second of 4), 272 narrow ones (three).
//! assert_eq!(choose_tile(132, 4352, 1024, 4096), GemmTile::N128);
//! ```

use super::shape::Kernel;
use super::split_k::SplitK;

/// The sm90 tile configuration of a bf16/f16 GEMM ([`GemmOptions::tile`](super::shape::GemmOptions::tile)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum GemmTile {
    /// The cost model's choice ([`choose_tile`]); 128 x 256 when K is split.
    #[default]
    Auto,
    /// 128 x 256 tiles (`rshmem_gemm::sm90::Tile256`, 4 stages of 48 KiB).
    N256,
    /// 128 x 128 tiles (`rshmem_gemm::sm90::Tile128`, 7 stages of 32 KiB); also what the sm80
    /// kernel's tiles are.
    N128,
}

impl GemmTile {
    /// Columns of C per tile: 256 or 128 (`Auto`: 0, unresolved).
    pub const fn bn(self) -> u32 {
        match self {
            GemmTile::Auto => 0,
            GemmTile::N256 => 256,
            GemmTile::N128 => 128,
        }
    }
}

/// Rows of C per tile, in every configuration.
pub const BM: u32 = 128;

/// K per k-step of the 16-bit configurations: the model's unit of K.
pub const BK: u32 = 64;

/// The model of one tile configuration (the module docs): its cost per k-step of its tile
/// and per tile, in k-steps of a 128 x 256 tile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TileModel {
    /// The configuration.
    pub tile: GemmTile,
    /// Time per k-step (64 of K) of one tile.
    pub step: f64,
    /// Time per tile outside the k-loop (the epilogue).
    pub fixed: f64,
}

/// The configurations [`choose_tile`] weighs, the default first (which wins ties).
pub const TILE_MODELS: [TileModel; 2] = [
    TileModel {
        tile: GemmTile::N256,
        step: 1.0,
        fixed: 8.5,
    },
    TileModel {
        tile: GemmTile::N128,
        step: 0.62,
        fixed: 5.2,
    },
];

impl TileModel {
    /// Tiles of `m x n`.
    pub fn tiles(&self, m: u32, n: u32) -> u64 {
        u64::from(m.div_ceil(BM)) * u64::from(n.div_ceil(self.tile.bn()))
    }

    /// The modelled time of `tiles` tiles of reduction length `k` on `sms` SMs: `⌈tiles /
    /// sms⌉ x (⌈k / 64⌉ x step + fixed)`.
    pub fn cost(&self, tiles: u64, sms: u32, k: u32) -> f64 {
        let waves = tiles.div_ceil(u64::from(sms.max(1)));
        waves as f64 * (f64::from(k.div_ceil(BK)) * self.step + self.fixed)
    }
}

/// The configuration of the lowest modelled cost for `tiles_of(model)` tiles (the default
/// on a tie).
pub fn choose_tile_by(sms: u32, k: u32, tiles_of: impl Fn(&TileModel) -> u64) -> GemmTile {
    best_tile_by(sms, k, tiles_of).1
}

/// [`choose_tile_by`]'s choice with its modelled cost.
fn best_tile_by(sms: u32, k: u32, tiles_of: impl Fn(&TileModel) -> u64) -> (f64, GemmTile) {
    let mut best = (f64::INFINITY, GemmTile::N256);
    for model in &TILE_MODELS {
        let cost = model.cost(tiles_of(model), sms, k);
        if cost < best.0 {
            best = (cost, model.tile);
        }
    }
    best
}

/// The configuration of the lowest modelled cost for `m x n x k` on `sms` SMs.
pub fn choose_tile(sms: u32, m: u32, n: u32, k: u32) -> GemmTile {
    choose_tile_by(sms, k, |model| model.tiles(m, n))
}

/// The model's cost of a split's second pass (the launch of the reduction, in units of the
/// module docs), beside the bytes it moves ([`split_tail`]).
pub const SPLIT_PASS: f64 = 4.0;

/// Bytes of HBM traffic per unit of the module docs: 0.73 µs at the H100's ~3.3 TB/s.
pub const BYTES_PER_UNIT: f64 = 2.4e6;

/// The split tail for `m x n x k` on `sms` SMs: `Some((from, parts))` where running rows
/// `..from` unsplit on 128 x 256 tiles (their full waves) and then rows `from..` split in
/// `parts` (`parts_of(rows)`: what [`SplitK::Auto`] would give a GEMM of those rows) costs
/// less in the model than the best unsplit tile (see the module docs, "A split tail").
pub fn split_tail(
    sms: u32,
    (m, n, k): (u32, u32, u32),
    parts_of: impl FnOnce(u32) -> u32,
) -> Option<(u32, u32)> {
    let wide = TILE_MODELS[0];
    let sms = sms.max(1);
    let tiles_n = n.div_ceil(wide.tile.bn());
    let full_waves = wide.tiles(m, n) / u64::from(sms);
    let head_tiles_m = full_waves * u64::from(sms) / u64::from(tiles_n);
    if head_tiles_m == 0 || head_tiles_m >= u64::from(m.div_ceil(BM)) {
        return None;
    }
    let from = head_tiles_m as u32 * BM;
    let parts = parts_of(m - from);
    if parts < 2 {
        return None;
    }
    let head = wide.cost(wide.tiles(from, n), sms, k);
    let part_k = k.div_ceil(BK).div_ceil(parts) * BK;
    let tail = wide.cost(wide.tiles(m - from, n) * u64::from(parts), sms, part_k);
    // The reduction reads every part and writes C's rows (2 bytes an element at most).
    let bytes = f64::from(m - from) * f64::from(n) * (4.0 * f64::from(parts) + 2.0);
    let split = head + tail + SPLIT_PASS + bytes / BYTES_PER_UNIT;
    let unsplit = best_tile_by(sms, k, |model| model.tiles(m, n)).0;
    (split < unsplit).then_some((from, parts))
}

/// What a GEMM runs, resolved from its options for its shape on a device: the kernel
/// ([`Kernel::Sm90`] or [`Kernel::Sm80`]), the tile configuration (never `Auto`; the sm80
/// kernel's tiles are [`GemmTile::N128`]) and the parts K is split into (1: none).
/// [`Ops::gemm_plan`](crate::Ops::gemm_plan) gives it; the calls run exactly it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmPlan {
    /// The kernel.
    pub kernel: Kernel,
    /// The tile configuration.
    pub tile: GemmTile,
    /// Parts of K (1: not split).
    pub split: u32,
    /// Where K is split: rows `split_from..m` of a split plan (0: all of them); the rows
    /// before run unsplit first ([`split_tail`]).
    pub split_from: u32,
}

/// The sm80 kernel's plan for the tile `tile` asked for: its tiles are 128 x 128, and it never
/// splits K. `Err` names the conflict.
pub(crate) fn sm80_plan(tile: GemmTile) -> Result<GemmPlan, String> {
    match tile {
        GemmTile::N256 => Err(
            "with GemmTile::N256 on the sm80 kernel: its tiles are 128 x 128 \
                               (GemmTile::N128 or Auto)"
                .into(),
        ),
        _ => Ok(GemmPlan {
            kernel: Kernel::Sm80,
            tile: GemmTile::N128,
            split: 1,
            split_from: 0,
        }),
    }
}

/// The sm90 plan of a 16-bit GEMM whose K splits into `parts` from row `from` on (0: every
/// row; a split tail's first row, [`split_tail`]) under `split` ([`SplitK::Auto`] already
/// resolved into the parts an eager call splits into), with the tile `tile` asked for, on a
/// stream that is `capturing` a graph or not; `choose` gives the model's tile. A capture
/// never splits: where an eager call would, it records the unsplit kernel on the split's
/// 128 x 256 tiles, whose tensor maps the eager calls before it filled (a split tail's head
/// reads through the whole shape's). `Err` names the conflict.
pub(crate) fn sm90_plan(
    tile: GemmTile,
    (split, parts, from): (SplitK, u32, u32),
    capturing: bool,
    choose: impl FnOnce() -> GemmTile,
) -> Result<GemmPlan, String> {
    let plan = |tile, split| GemmPlan {
        kernel: Kernel::Sm90,
        tile,
        split,
        split_from: if split > 1 { from } else { 0 },
    };
    match (tile, parts > 1) {
        (GemmTile::N128, true) if matches!(split, SplitK::Parts(_)) => Err(format!(
            "with GemmTile::N128 and SplitK::Parts({parts}): the split-K kernels run 128 x 256 \
             tiles only; use GemmTile::Auto or N256 to split, or SplitK::Off / Auto with N128"
        )),
        (GemmTile::N128, _) => Ok(plan(GemmTile::N128, 1)),
        (_, true) => Ok(plan(GemmTile::N256, if capturing { 1 } else { parts })),
        (GemmTile::N256, false) => Ok(plan(GemmTile::N256, 1)),
        (GemmTile::Auto, false) => Ok(plan(choose(), 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The model's choices on an H100/H200 (132 SMs), each with why.
    #[test]
    fn the_model_picks_the_tile_per_shape() {
        use GemmTile::{N128, N256};
        let table: &[((u32, u32, u32), GemmTile, &str)] = &[
            (
                (8192, 8192, 8192),
                N256,
                "16 waves of wide tiles, 32 of narrow",
            ),
            ((4096, 4096, 4096), N256, "4 waves against 8"),
            ((2048, 2048, 2048), N256, "128 tiles: one wave"),
            ((8192, 1024, 8192), N256, "256 tiles: 2 waves, full"),
            ((4096, 6144, 12288), N256, "768 tiles: 6 waves against 12"),
            ((4096, 14336, 4096), N256, "1792 tiles: 14 waves against 28"),
            ((4224, 1024, 4096), N256, "132 tiles: exactly one wave"),
            (
                (4352, 1024, 4096),
                N128,
                "136 tiles: 2 waves, 272 narrow: 3",
            ),
            (
                (5000, 1000, 4096),
                N128,
                "160 tiles: 2 waves, 320 narrow: 3",
            ),
            (
                (6000, 1000, 4096),
                N128,
                "188 tiles: 2 waves, 376 narrow: 3",
            ),
            (
                (7999, 999, 4096),
                N256,
                "252 tiles: 2 waves full; narrow: 4 waves",
            ),
            (
                (2048, 1100, 4096),
                N256,
                "80 tiles (N ragged: 1280 of 1100); narrow: 144, 2 waves",
            ),
            (
                (1024, 1100, 4096),
                N128,
                "40 wide tiles, one wave; narrow: 72, one wave",
            ),
            (
                (128, 4096, 4096),
                N128,
                "16 tiles, 32 narrow: one wave each (unsplit)",
            ),
            ((16, 100, 8192), N128, "one tile: N 100 fits the narrow one"),
            (
                (1, 1, 8),
                N128,
                "one tile of one k-step: the narrow one's smaller fixed cost",
            ),
            ((256, 256, 64), N128, "2 wide tiles, 4 narrow: one wave"),
            ((16384, 16384, 16384), N256, "large"),
        ];
        for &((m, n, k), want, why) in table {
            assert_eq!(choose_tile(132, m, n, k), want, "{m} x {n} x {k}: {why}");
        }
        // Fewer SMs (the simulator's 2): small shapes decide by waves too.
        assert_eq!(choose_tile(2, 128, 512, 64), N256);
        assert_eq!(choose_tile(2, 128, 384, 64), N256);
        assert_eq!(choose_tile(2, 128, 256, 64), N128);
    }

    #[test]
    fn the_cost_is_waves_times_tile_time() {
        let [wide, narrow] = TILE_MODELS;
        assert_eq!(wide.tiles(8192, 8192), 2048);
        assert_eq!(narrow.tiles(8192, 8192), 4096);
        assert_eq!(wide.cost(2048, 132, 8192), 16.0 * (128.0 + 8.5));
        assert_eq!(narrow.cost(4096, 132, 8192), 32.0 * (128.0 * 0.62 + 5.2));
        // A ragged tile costs a whole one.
        assert_eq!(wide.tiles(129, 257), 4);
    }

    /// Where the model splits a tail on 132 SMs (`parts` as `SplitK::Auto` gives the tail
    /// rows: the SMs over its tiles, at most 16, at least 4 k-steps each).
    #[test]
    fn the_model_splits_a_sparse_last_wave() {
        let parts = |rows: u32, n: u32, k: u32| {
            let tiles = rows.div_ceil(BM) * n.div_ceil(256);
            (132 / tiles).min(k.div_ceil(BK) / 4).min(16)
        };
        let tail = |m, n, k| split_tail(132, (m, n, k), |rows| parts(rows, n, k));
        // 40 x 4 tiles: 33 rows of tiles fill a wave, the last 7 (28 tiles) split in 4.
        assert_eq!(tail(5000, 1000, 4096), Some((4224, 4)));
        // 136 tiles: the 4 of the second wave split in 16.
        assert_eq!(tail(4352, 1024, 4096), Some((4224, 16)));
        // Full waves, or fewer tiles than SMs (a whole split's business): none.
        assert_eq!(tail(8192, 8192, 8192), None);
        assert_eq!(tail(4224, 1024, 4096), None);
        assert_eq!(tail(2048, 1024, 4096), None);
        // 448 tiles, 3.4 waves: the last 56 tiles split in 2.
        assert_eq!(tail(8192, 1792, 4096), Some((7168, 2)));
        // A last wave nearly full (128 of 132 tiles) cannot split: none.
        assert_eq!(tail(8320, 1024, 4096), None);
        // Too short a K to split: none.
        assert_eq!(tail(5000, 1000, 192), None);
    }

    #[test]
    fn split_k_composes_with_the_tile() {
        let auto = || GemmTile::N128;
        let p = |tile, split, parts| sm90_plan(tile, (split, parts, 0), false, auto);
        let plan = |tile, split| {
            Ok(GemmPlan {
                kernel: Kernel::Sm90,
                tile,
                split,
                split_from: 0,
            })
        };
        // A split runs 128 x 256 whatever the model says.
        assert_eq!(p(GemmTile::Auto, SplitK::Auto, 8), plan(GemmTile::N256, 8));
        assert_eq!(p(GemmTile::Auto, SplitK::Auto, 1), plan(GemmTile::N128, 1));
        assert_eq!(p(GemmTile::N256, SplitK::Off, 1), plan(GemmTile::N256, 1));
        // A forced narrow tile runs unsplit under Auto, and refuses forced parts.
        assert_eq!(p(GemmTile::N128, SplitK::Auto, 8), plan(GemmTile::N128, 1));
        let e = p(GemmTile::N128, SplitK::Parts(4), 4).unwrap_err();
        assert!(e.contains("128 x 256 tiles only"), "{e}");
        assert_eq!(
            p(GemmTile::N128, SplitK::Parts(1), 1),
            plan(GemmTile::N128, 1)
        );
        // A capture records the unsplit kernel of the split's tile.
        let captured = sm90_plan(GemmTile::Auto, (SplitK::Auto, 8, 0), true, auto);
        assert_eq!(captured, plan(GemmTile::N256, 1));
        let captured = sm90_plan(GemmTile::Auto, (SplitK::Auto, 1, 0), true, auto);
        assert_eq!(captured, plan(GemmTile::N128, 1));
        // A split tail: its rows and parts eagerly, the unsplit 128 x 256 kernel in a capture.
        let tail = sm90_plan(GemmTile::Auto, (SplitK::Auto, 4, 4224), false, auto);
        let want = GemmPlan {
            kernel: Kernel::Sm90,
            tile: GemmTile::N256,
            split: 4,
            split_from: 4224,
        };
        assert_eq!(tail, Ok(want));
        let captured = sm90_plan(GemmTile::Auto, (SplitK::Auto, 4, 4224), true, auto);
        assert_eq!(captured, plan(GemmTile::N256, 1));
    }
}
