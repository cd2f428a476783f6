//! Warp-level tensor cores (sm_80 and later): `mma.sync` on typed fragments, `ldmatrix` /
//! `stmatrix`, and `cp.async`. See `docs/tensor-cores.md` for the fragment layouts and a GEMM.
//!
//! ```ignore
//! use rshmem_device::mma::*;
//! use rshmem_device::half::bf16;
//! // One warp: C (16×8) += A (16×16, row-major in shared) · B (16×8, K-major in shared).
//! let a = FragA::<M16N8K16, bf16>::ldmatrix(sa, 16);
//! let b = FragB::<M16N8K16, bf16>::ldmatrix_trans(sb, 8);
//! let c = mma_sync(&a, &b, &FragC::zero());
//! c.store(out, 8);
//! ```
//!
//! The operations: [`mma_sync`] for `m16n8k16` bf16/f16 and `m16n8k8` tf32 into f32;
//! [`ldmatrix`]/[`ldmatrix_trans`] of 1, 2 or 4 matrices (and fragment loaders
//! [`FragA::ldmatrix`], [`FragB::ldmatrix`], [`FragB::ldmatrix_trans`]); [`stmatrix`] /
//! [`stmatrix_trans`] (sm_90); [`cp_async_ca`] (4, 8, 16 bytes), [`cp_async_cg`],
//! [`cp_async_cg_zfill`], [`commit_group`], [`wait_group`], [`wait_all`].
//!
//! Fragments say in their types what they hold — `FragA<M16N8K16, bf16, Row>` is a lane's 4
//! registers (8 elements) of a 16×16 row-major A — and where each element sits
//! ([`FragA::coord`]): the PTX ISA's tables. Warp-collective operations are `unsafe`: all 32
//! lanes must execute them converged. On the simulator each is a meeting of the warp; it stops
//! the kernel, naming the operation, where it cannot run the operation as the GPU would (see
//! the simulator's `mma` module docs and `docs/tensor-cores.md`).

mod cp_async;
mod frag;
mod matrix;

pub use cp_async::{
    commit_group, cp_async_ca, cp_async_cg, cp_async_cg_zfill, wait_all, wait_group, CpSize,
    WaitCount,
};
pub use frag::{
    mma_sync, Col, FragA, FragB, FragC, Operand, Regs, Row, Shape, Tf32, M16N8K16, M16N8K8,
};
pub use matrix::{ldmatrix, ldmatrix_trans, stmatrix, stmatrix_trans, Matrices};
