//! bf16/f16/tf32 conversions, 16-bit values as kernel arguments, and RMA of bf16/f16.

use rshmem_device::half::{self, bf16, f16, Half};
use rshmem_device::prelude::*;

/// For each `i < n` (grid-stride): narrows `x[i]` to bf16, f16 and tf32 (`to_bf16[i]`,
/// `to_f16[i]`, `to_tf32[i]`), and widens the 16-bit pattern `h[i]` as bf16 and as f16 (`bits`
/// of the f32 results in `from_bf16[i]`, `from_f16[i]`).
///
/// # Safety
///
/// Every pointer is valid for `n` elements.
#[kernel]
pub unsafe fn convert(
    n: u32,
    x: *const f32,
    to_bf16: *mut u16,
    to_f16: *mut u16,
    to_tf32: *mut u32,
    h: *const u16,
    from_bf16: *mut u32,
    from_f16: *mut u32,
) {
    let mut i = thread::index_1d();
    while i < n {
        let k = i as usize;
        let v = *x.add(k);
        *to_bf16.add(k) = bf16::from_f32_rn(v).to_bits();
        *to_f16.add(k) = f16::from_f32_rn(v).to_bits();
        *to_tf32.add(k) = half::to_tf32(v);
        let bits = *h.add(k);
        *from_bf16.add(k) = half::from_bf16(bf16::from_bits(bits)).to_bits();
        *from_f16.add(k) = half::from_f16(f16::from_bits(bits)).to_bits();
        i += thread::grid_size_1d();
    }
}

/// `out[i] = bf16(x · i)` and `out16[i] = f16(y · i)` for `i < n`: bf16 and f16 as by-value
/// kernel arguments.
///
/// # Safety
///
/// `out` and `out16` are valid for `n` elements.
#[kernel]
pub unsafe fn scale_half(out: *mut bf16, x: bf16, out16: *mut f16, y: f16, n: u32) {
    let i = thread::index_1d();
    if i < n {
        *out.add(i as usize) = bf16::from_f32_rn(x.to_f32_exact() * i as f32);
        *out16.add(i as usize) = f16::from_f32_rn(y.to_f32_exact() * i as f32);
    }
}

/// RMA of 16-bit floats around the ring of PEs, thread `t < n`: `p`s `src[t]` into `dst[t]` on
/// the right neighbour, `g`s the right neighbour's `src[t]` into `got[t]`; thread 0 `put`s all
/// of `src16` into `dst16` on the right neighbour. Then `barrier_all` (block scope).
///
/// # Safety
///
/// Every PE launches one block of at least `n` threads, cooperatively; the buffers are
/// symmetric with `n` elements.
#[kernel]
pub unsafe fn rma_half(
    dst: *mut bf16,
    src: *const bf16,
    got: *mut bf16,
    dst16: *mut f16,
    src16: *const f16,
    n: u32,
) {
    let t = thread::thread_idx_x();
    let right = (shmem::my_pe() + 1) % shmem::n_pes();
    if t < n {
        let k = t as usize;
        shmem::p(dst.add(k), *src.add(k), right);
        *got.add(k) = shmem::g(src.add(k), right);
    }
    if t == 0 {
        shmem::put::<Thread, f16>(dst16, src16, n as usize, right);
    }
    shmem::quiet();
    shmem::barrier_all::<Block>();
}
