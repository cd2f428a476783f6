//! `mma.sync` on typed fragments: where each lane's elements sit, and D = A·B + C.

use rshmem_device::half::{bf16, f16};
use rshmem_device::mma::{mma_sync, FragA, FragB, FragC, Operand, Shape, Tf32, M16N8K16, M16N8K8};
use rshmem_device::prelude::*;

use super::{BF16, F16, TF32};

/// One warp: every lane writes `lane * 256 + i` at the (row, column) of element `i` of its A, B
/// and C fragments of type `ty` (`a`: M×K row-major, `b`: K×N row-major, `c`: M×N row-major).
///
/// # Safety
///
/// One warp; `a`, `b`, `c` hold the shape's matrices (16×16, 16×8, 16×8 for bf16/f16;
/// 16×8, 8×8, 16×8 for tf32).
#[kernel]
pub unsafe fn frag_layout(ty: u32, a: *mut u32, b: *mut u32, c: *mut u32) {
    match ty {
        BF16 => layout::<M16N8K16, bf16>(a, b, c),
        F16 => layout::<M16N8K16, f16>(a, b, c),
        _ => layout::<M16N8K8, Tf32>(a, b, c),
    }
}

unsafe fn layout<S: Shape, E: Operand<S>>(a: *mut u32, b: *mut u32, c: *mut u32) {
    let lane = warp::lane_id() as usize;
    let code = |i: usize| (lane * 256 + i) as u32;
    for i in 0..FragA::<S, E>::ELEMS {
        let (r, k) = FragA::<S, E>::coord(lane, i);
        *a.add(r * S::K + k) = code(i);
    }
    for i in 0..FragB::<S, E>::ELEMS {
        let (k, n) = FragB::<S, E>::coord(lane, i);
        *b.add(k * S::N + n) = code(i);
    }
    for i in 0..FragC::<S>::ELEMS {
        let (r, n) = FragC::<S>::coord(lane, i);
        *c.add(r * S::N + n) = code(i);
    }
}

/// One warp, one `mma.sync` of type `ty`: `d = a·b + c` with `a` M×K row-major and `b` K×N
/// row-major, both in the element type's bits (u16 for bf16/f16, f32 already rounded to tf32
/// for tf32), `c` and `d` M×N row-major f32. Fragments are loaded and stored element by element
/// at their coordinates, so a layout that differs from the hardware's gives wrong sums.
///
/// # Safety
///
/// One warp; the matrices are valid for the shape of `ty`.
#[kernel]
pub unsafe fn mma_one(ty: u32, a: *const u8, b: *const u8, c: *const f32, d: *mut f32) {
    match ty {
        BF16 => mma::<M16N8K16, bf16>(a.cast(), b.cast(), c, d),
        F16 => mma::<M16N8K16, f16>(a.cast(), b.cast(), c, d),
        TF32 => mma::<M16N8K8, Tf32>(a.cast(), b.cast(), c, d),
        _ => thread::trap(),
    }
}

unsafe fn mma<S: Shape, E: Operand<S>>(
    a: *const E::Value,
    b: *const E::Value,
    c: *const f32,
    d: *mut f32,
) {
    let fa = FragA::<S, E>::load(a, S::K, 1);
    let fb = FragB::<S, E>::load(b, S::N, 1);
    let fc = FragC::<S>::load(c, S::N);
    mma_sync(&fa, &fb, &fc).store(d, S::N);
}
