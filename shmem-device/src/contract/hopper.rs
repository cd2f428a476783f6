//! The Hopper vocabulary (sm_90a) both backends and `crate::hopper` speak: shared-memory
//! swizzles and `wgmma` matrix descriptors, tensor maps and their element types, the register
//! layouts of `wgmma` fragments. Pure data and layout arithmetic; the operations on them are in
//! `crate::hopper` (public) and the backends.
//!
//! Shared-memory layouts for `wgmma` and TMA: the swizzle patterns and the 64-bit matrix
//! descriptor (PTX ISA, "Matrix Descriptor Format" of `wgmma`).
//!
//! A swizzle permutes the 16-byte chunks of each row of `W` bytes (W = 32, 64, 128) by the
//! row's position in a group of 8 rows, so that the 8 rows of a core matrix fall in different
//! shared-memory banks. It is a function of the *shared-memory address* (bits 4.. XOR bits
//! 7..), so TMA writes and `wgmma` reads agree when both use the same mode and the buffer is
//! aligned to the pattern's repeat (`8 * W` bytes):
//!
//! ```
//! use rshmem_device::hopper::Swizzle;
//! // 128-byte swizzle: row 1's first chunk lands in chunk 1, row 2's in chunk 2, ...
//! assert_eq!(Swizzle::B128.apply(128), 128 + 16);
//! assert_eq!(Swizzle::B128.apply(2 * 128 + 16), 2 * 128 + 48);
//! assert_eq!(Swizzle::None.apply(300), 300);
//! ```

/// A shared-memory swizzle mode, as `wgmma` descriptors and tensor maps name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Swizzle {
    /// No swizzle: `wgmma` reads "interleaved" core matrices of 8 rows x 16 bytes.
    None = 0,
    /// 32-byte rows, chunk bit 4 ^= address bit 7.
    B32 = 1,
    /// 64-byte rows, chunk bits 4..=5 ^= address bits 7..=8.
    B64 = 2,
    /// 128-byte rows, chunk bits 4..=6 ^= address bits 7..=9.
    B128 = 3,
}

impl Swizzle {
    /// Bytes per swizzled row (the mode's span); 16 (one chunk) for [`Swizzle::None`].
    pub const fn row_bytes(self) -> u32 {
        match self {
            Swizzle::None => 16,
            Swizzle::B32 => 32,
            Swizzle::B64 => 64,
            Swizzle::B128 => 128,
        }
    }

    /// The alignment a swizzled buffer's shared address needs for its pattern to start at
    /// row 0: 8 rows of the span (256, 512, 1024 bytes); 16 without swizzle.
    pub const fn alignment(self) -> u32 {
        match self {
            Swizzle::None => 16,
            s => 8 * s.row_bytes(),
        }
    }

    /// The physical shared-memory address of logical address `addr` (both in the
    /// `.shared::cta` window, see `hopper::shared_address`).
    #[inline(always)]
    pub const fn apply(self, addr: u32) -> u32 {
        let mask = match self {
            Swizzle::None => 0,
            Swizzle::B32 => 0b1,
            Swizzle::B64 => 0b11,
            Swizzle::B128 => 0b111,
        };
        addr ^ (((addr >> 7) & mask) << 4)
    }

    /// The 2-bit layout code of a `wgmma` descriptor (bits 62..64).
    const fn desc_code(self) -> u64 {
        match self {
            Swizzle::None => 0,
            Swizzle::B128 => 1,
            Swizzle::B64 => 2,
            Swizzle::B32 => 3,
        }
    }

    /// The mode of a descriptor's layout code.
    pub const fn from_desc_code(code: u64) -> Swizzle {
        match code & 3 {
            0 => Swizzle::None,
            1 => Swizzle::B128,
            2 => Swizzle::B64,
            _ => Swizzle::B32,
        }
    }
}

/// A 14-bit descriptor field: a byte value `>> 4`.
const fn field(v: u32) -> u64 {
    (v as u64 >> 4) & 0x3FFF
}

/// A `wgmma` shared-memory matrix descriptor: start address, leading- and stride-dimension
/// byte offsets (each encoded `>> 4` in 14 bits), base offset 0, and the swizzle mode.
///
/// rshmem supports the K-major layouts (A as M x K and B as N x K, K contiguous: the
/// non-transposed `wgmma` operands). For an operand of R rows (M or N) by 16 K-elements of
/// 16 bits, element (r, k) is read from shared address
///
/// * [`Swizzle::None`]: `start + (r / 8) * sbo + (k / 8) * lbo + (r % 8) * 16 + (k % 8) * 2`
///   (core matrices of 8 rows x 16 bytes, `lbo` apart along K, `sbo` apart along R);
/// * swizzled with rows of W bytes: `swizzle(start + (r / 8) * sbo + (r % 8) * W + k * 2)`
///   (`lbo` unused: the 32 bytes of K fit in one row; `sbo` is usually `8 * W`).
///
/// Advancing `start` by 32 bytes selects the next 16 K-elements of a swizzled row (the
/// swizzle applies to the address sum, as on the GPU).
///
/// B may also be MN-major (N contiguous: a K x N row-major matrix, `imm-trans-b = 1`, see
/// [`SmemDesc::element_address_mn`]); the PTX ISA's canonical layouts then swap the offsets'
/// roles: `lbo` steps along N between swizzle atoms, `sbo` along K between 8-row groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct SmemDesc(pub u64);

impl SmemDesc {
    /// A descriptor from shared addresses and byte offsets (all multiples of 16 below
    /// 2^18; checked in debug builds).
    #[inline(always)]
    pub const fn new(start: u32, lbo: u32, sbo: u32, swizzle: Swizzle) -> Self {
        debug_assert!(start % 16 == 0 && lbo % 16 == 0 && sbo % 16 == 0);
        debug_assert!(start < 1 << 18 && lbo < 1 << 18 && sbo < 1 << 18);
        SmemDesc(field(start) | field(lbo) << 16 | field(sbo) << 32 | swizzle.desc_code() << 62)
    }

    /// The start address (shared window, bytes).
    pub const fn start(self) -> u32 {
        ((self.0 & 0x3FFF) << 4) as u32
    }

    /// The leading-dimension byte offset.
    pub const fn lbo(self) -> u32 {
        (((self.0 >> 16) & 0x3FFF) << 4) as u32
    }

    /// The stride-dimension byte offset.
    pub const fn sbo(self) -> u32 {
        (((self.0 >> 32) & 0x3FFF) << 4) as u32
    }

    /// The 3-bit base offset (bits 49..52); rshmem always writes 0.
    pub const fn base_offset(self) -> u32 {
        ((self.0 >> 49) & 7) as u32
    }

    /// The swizzle mode.
    pub const fn swizzle(self) -> Swizzle {
        Swizzle::from_desc_code(self.0 >> 62)
    }

    /// The same descriptor with `bytes` (a multiple of 16) added to its start address: the
    /// next K-slice of a swizzled operand (+32 bytes per 16 elements of 16 bits).
    #[inline(always)]
    pub const fn advance(self, bytes: u32) -> Self {
        SmemDesc(self.0 + (bytes as u64 >> 4))
    }

    /// The shared address element (`row`, `k`) (16-bit elements, k < 16) is read from.
    pub const fn element_address(self, row: u32, k: u32) -> u32 {
        self.byte_address(row, 2 * k)
    }

    /// The shared address of byte `byte` (< 32) of K-major row `row`: element `(row, k)` of
    /// an operand of `e`-byte elements is at byte `e k` (8-bit elements: `k < 32`, one
    /// `wgmma` of K 32 reads the same 32 bytes of each row as one of K 16 of 16-bit ones).
    ///
    /// * [`Swizzle::None`]: `start + (row / 8) * sbo + (byte / 16) * lbo + (row % 8) * 16 +
    ///   byte % 16`;
    /// * swizzled with rows of W bytes: `swizzle(start + (row / 8) * sbo + (row % 8) * W +
    ///   byte)`.
    pub const fn byte_address(self, row: u32, byte: u32) -> u32 {
        let sw = self.swizzle();
        match sw {
            Swizzle::None => {
                self.start()
                    + (row / 8) * self.sbo()
                    + (byte / 16) * self.lbo()
                    + (row % 8) * 16
                    + byte % 16
            }
            _ => {
                sw.apply(self.start() + (row / 8) * self.sbo() + (row % 8) * sw.row_bytes() + byte)
            }
        }
    }
}

impl SmemDesc {
    /// The shared address element (`mn`, `k`) (16-bit elements, k < 16) of an MN-major
    /// operand is read from (the PTX ISA's canonical MN-major layouts):
    ///
    /// * [`Swizzle::None`]: `start + (mn / 8) * sbo + (k / 8) * lbo + (k % 8) * 16 + (mn % 8) * 2`
    ///   (core matrices of 8 K-rows x 16 bytes of MN);
    /// * swizzled with rows of W bytes (E = W / 2 elements of MN):
    ///   `swizzle(start + (mn / E) * lbo + (k / 8) * sbo + (k % 8) * W + (mn % E) * 2)` —
    ///   what a TMA box of E x rows (MN innermost) with that swizzle writes, boxes `lbo` apart,
    ///   with `sbo = 8 * W`.
    ///
    /// Advancing `start` by `16 * W` bytes selects the next 16 K-rows.
    pub const fn element_address_mn(self, mn: u32, k: u32) -> u32 {
        let sw = self.swizzle();
        match sw {
            Swizzle::None => {
                self.start()
                    + (mn / 8) * self.sbo()
                    + (k / 8) * self.lbo()
                    + (k % 8) * 16
                    + (mn % 8) * 2
            }
            _ => {
                let (w, e) = (sw.row_bytes(), sw.row_bytes() / 2);
                sw.apply(
                    self.start()
                        + (mn / e) * self.lbo()
                        + (k / 8) * self.sbo()
                        + (k % 8) * w
                        + (mn % e) * 2,
                )
            }
        }
    }
}

/// Element types a tensor map can hold (`CU_TENSOR_MAP_DATA_TYPE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum TmaType {
    /// `BFLOAT16`.
    Bf16 = 0,
    /// `FLOAT16`.
    F16 = 1,
    /// `FLOAT32`.
    F32 = 2,
    /// `UINT8`: 8-bit elements, the FP8 formats' (`crate::fp8`) as TMA moves them.
    U8 = 3,
}

impl TmaType {
    /// Bytes per element.
    pub const fn size(self) -> u32 {
        match self {
            TmaType::U8 => 1,
            TmaType::Bf16 | TmaType::F16 => 2,
            TmaType::F32 => 4,
        }
    }

    /// The type of code `c` (as [`TmaType`] `as u8`), if any.
    pub const fn from_code(c: u8) -> Option<TmaType> {
        match c {
            0 => Some(TmaType::Bf16),
            1 => Some(TmaType::F16),
            2 => Some(TmaType::F32),
            3 => Some(TmaType::U8),
            _ => None,
        }
    }
}

/// An encoded tensor map (`CUtensorMap`): 128 opaque bytes, 128-byte aligned as CUDA 13
/// declares it (TMA itself needs 64). On GPUs they are
/// what `cuTensorMapEncodeTiled` wrote; on the simulator, the same parameters in the
/// simulator's layout. Made by `rshmem::TensorMap` on the host; kernels only pass pointers
/// to it (in global memory) to the copies below.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(128))]
pub struct TensorMap {
    /// The encoded words.
    pub words: [u64; 16],
}

/// Which input type (the backends' switch).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Bf16,
    F16,
    E4m3,
    E5m2,
}

impl Kind {
    /// Bytes per element.
    pub const fn bytes(self) -> u32 {
        match self {
            Kind::Bf16 | Kind::F16 => 2,
            Kind::E4m3 | Kind::E5m2 => 1,
        }
    }

    /// K of one `wgmma`: 32 bytes of each row of A and B (16 or 32 elements).
    pub const fn k(self) -> u32 {
        32 / self.bytes()
    }
}

/// An A fragment in registers for `m64k16`: 4 x 32 bits per thread, two 16-bit elements each
/// (the lower-indexed K in the low half). Thread `t` of the warpgroup (warp `w = t / 32`, lane
/// `l = t % 32`) holds, in register `i`, the elements at row `16 w + l / 4 + 8 (i % 2)` and
/// K `2 (l % 4) + 8 (i / 2)` and `+1` (see [`WgmmaA::coords`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct WgmmaA(pub [u32; 4]);

impl WgmmaA {
    /// (row, k) of the element in half `half` (0 low, 1 high) of register `reg` of thread `t`
    /// (0..128) of the warpgroup.
    pub const fn coords(t: u32, reg: u32, half: u32) -> (u32, u32) {
        let (w, l) = (t / 32, t % 32);
        (
            16 * w + l / 4 + 8 * (reg % 2),
            2 * (l % 4) + 8 * (reg / 2) + half,
        )
    }
}

/// (row, col) in the 64 x N tile of register `i` of thread `t` (0..128) of the warpgroup:
/// row `16 w + l / 4 + 8 ((i / 2) % 2)`, col `8 (i / 4) + 2 (l % 4) + i % 2`.
pub const fn wgmma_acc_coords(t: u32, i: u32) -> (u32, u32) {
    let (w, l) = (t / 32, t % 32);
    (
        16 * w + l / 4 + 8 * ((i / 2) % 2),
        8 * (i / 4) + 2 * (l % 4) + i % 2,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swizzle_patterns_match_the_ptx_tables() {
        // 16-byte chunk c of row r lands in chunk c ^ (r % rows-per-pattern) (rows of the
        // span, 8-row repeat): the tables of the PTX ISA's "Shared Memory Layout" section.
        for (sw, span, mask) in [
            (Swizzle::B32, 32, 1),
            (Swizzle::B64, 64, 3),
            (Swizzle::B128, 128, 7),
        ] {
            for addr in (0..4096u32).step_by(2) {
                let (row128, chunk) = (addr / 128, (addr / 16) % 8);
                let want = (addr & !0x70) | ((chunk ^ ((row128 % 8) & mask)) << 4);
                assert_eq!(sw.apply(addr), want, "{sw:?} at {addr}");
                assert_eq!(sw.apply(sw.apply(addr)), addr, "{sw:?} is an involution");
                // Chunks never leave their span-sized row.
                assert_eq!(sw.apply(addr) / span, addr / span, "{sw:?} at {addr}");
            }
            assert_eq!(sw.alignment(), 8 * span);
        }
        assert_eq!(Swizzle::B128.apply(7 * 128), 7 * 128 + 7 * 16);
        assert_eq!(Swizzle::B64.apply(7 * 128 + 16), 7 * 128 + 32);
        assert_eq!(Swizzle::B32.apply(128), 128 + 16);
        assert_eq!(Swizzle::B32.apply(64), 64);
        assert!((0..4096).all(|a| Swizzle::None.apply(a) == a));
    }

    #[test]
    fn descriptor_fields_round_trip() {
        for sw in [Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128] {
            let d = SmemDesc::new(0x3_FFF0, 0x1230, 0x4560, sw);
            assert_eq!(
                (d.start(), d.lbo(), d.sbo(), d.swizzle(), d.base_offset()),
                (0x3_FFF0, 0x1230, 0x4560, sw, 0)
            );
            assert_eq!(
                SmemDesc::new(0x1000, 16, 1024, sw).advance(32).start(),
                0x1020
            );
        }
        // The layout codes of the PTX ISA: 1 = 128B, 2 = 64B, 3 = 32B, in bits 62..64.
        assert_eq!(SmemDesc::new(0, 0, 0, Swizzle::B128).0 >> 62, 1);
        assert_eq!(SmemDesc::new(0, 0, 0, Swizzle::B64).0 >> 62, 2);
        assert_eq!(SmemDesc::new(0, 0, 0, Swizzle::B32).0 >> 62, 3);
        assert_eq!(
            SmemDesc::new(1024, 16, 1024, Swizzle::B128).0,
            64 | 1 << 16 | 64 << 32 | 1 << 62
        );
    }

    #[test]
    fn element_addresses_follow_the_canonical_layouts() {
        // No swizzle: core matrices of 8 rows x 16 bytes, LBO along K, SBO along rows.
        let d = SmemDesc::new(2048, 1024, 128, Swizzle::None);
        assert_eq!(d.element_address(0, 0), 2048);
        assert_eq!(d.element_address(1, 0), 2048 + 16);
        assert_eq!(d.element_address(0, 7), 2048 + 14);
        assert_eq!(d.element_address(0, 8), 2048 + 1024);
        assert_eq!(d.element_address(9, 9), 2048 + 128 + 1024 + 16 + 2);
        // 8-bit elements: 16 of them per core-matrix row, the next 16 LBO on.
        assert_eq!(d.byte_address(1, 15), 2048 + 16 + 15);
        assert_eq!(d.byte_address(9, 17), 2048 + 128 + 1024 + 16 + 1);
        // 128-byte swizzle: rows of 128 bytes, swizzled by address; K-slices +32 bytes.
        let s = SmemDesc::new(1024, 16, 1024, Swizzle::B128);
        assert_eq!(s.element_address(0, 0), 1024);
        assert_eq!(s.element_address(1, 0), 1024 + 128 + 16);
        assert_eq!(s.element_address(3, 9), 1024 + 3 * 128 + ((1 ^ 3) << 4) + 2);
        assert_eq!(s.element_address(8, 0), 2048);
        assert_eq!(s.byte_address(3, 19), s.element_address(3, 9) + 1);
        assert_eq!(
            s.advance(32).element_address(2, 0),
            // chunk 2 of row 2 is chunk 2 ^ 2 = 0
            1024 + 2 * 128
        );
        // MN-major, 128-byte swizzle: K-rows of 64 N-elements, boxes of 64 N 8192 bytes
        // apart (LBO), 8-row groups 1024 apart (SBO).
        let t = SmemDesc::new(1024, 8192, 1024, Swizzle::B128);
        assert_eq!(t.element_address_mn(0, 0), 1024);
        assert_eq!(t.element_address_mn(1, 0), 1024 + 2);
        assert_eq!(t.element_address_mn(0, 1), 1024 + 128 + 16);
        assert_eq!(t.element_address_mn(64, 0), 1024 + 8192);
        assert_eq!(t.element_address_mn(0, 8), 2048);
        assert_eq!(
            t.element_address_mn(9, 3),
            1024 + 3 * 128 + (((9 * 2) / 16) ^ 3) * 16 + 2
        );
        // MN-major, no swizzle: core matrices of 8 K-rows x 16 bytes.
        let u = SmemDesc::new(0, 256, 128, Swizzle::None);
        assert_eq!(u.element_address_mn(3, 2), 2 * 16 + 3 * 2);
        assert_eq!(u.element_address_mn(8, 8), 128 + 256);
    }
}
