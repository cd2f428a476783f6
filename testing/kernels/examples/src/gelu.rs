//! GELU in place on bf16, for the tensor-parallel MLP example (`examples/tp_mlp.rs`): the
//! tanh form `gelu(x) = x / 2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))`, evaluated in f32
//! and rounded to bf16 (nearest even).
//!
//! The function is `rshmem_gemm::act::gelu` (within `1e-6 · (1 + |x|)` of the exact tanh
//! form), the one GEMM epilogues apply.

use rshmem_device::prelude::*;
use rshmem_gemm::act::gelu;

/// `x[i] = bf16(gelu(x[i]))` for `i < n`; any 1-D launch (a grid-stride loop).
///
/// # Safety
///
/// `x` is valid for reads and writes of `n` bf16 that nothing else accesses meanwhile.
#[kernel]
pub unsafe fn gelu_bf16(x: *mut bf16, n: u64) {
    let step = u64::from(thread::block_dim_x()) * u64::from(thread::grid_dim_x());
    let mut i = u64::from(thread::index_1d());
    while i < n {
        // SAFETY: `i < n` (the contract).
        unsafe {
            let p = x.add(i as usize);
            p.write(bf16::from_f32_rn(gelu(p.read().to_f32_exact())));
        }
        i += step;
    }
}
