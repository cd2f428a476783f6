//! Mixture-of-experts dispatch and combine (expert parallelism): every token goes to the PEs
//! that hold its top-k experts and lands there grouped by expert, ready for a grouped GEMM;
//! the experts' output rows go back and are summed per token with the router's weights.
//!
//! ```no_run
//! use rshmem_device::bf16;
//! use rshmem_host::Team;
//! use rshmem_ops::{MoeConfig, MoePayload, Ops};
//!
//! rshmem_host::run(|shmem| -> rshmem_host::Result<()> {
//!     let ops = Ops::new(shmem)?;
//!     let stream = shmem.stream();
//!     let n = shmem.n_pes() as u32;
//!     let payload = MoePayload::Bf16; // or Fp8E4m3: Ops::moe_dispatch_fp8, bytes and scales
//!     let cfg = MoeConfig { experts: 8 * n, top_k: 2, hidden: 1024, max_tokens: 512, align: 64, payload };
//!     let mut bufs = ops.moe_buffers(Team::WORLD, cfg)?; // collective: symmetric buffers
//!     let tokens = 300;
//!     let x = shmem.alloc_from(&vec![bf16::ONE; tokens * 1024])?;
//!     let topk = shmem.alloc_from(&vec![0i32; tokens * 2])?; // the router's experts per token (-1: none)
//!     let weights = shmem.alloc_from(&vec![0.5f32; tokens * 2])?;
//!     let layout = ops.moe_dispatch(&stream, &mut bufs, &x, &topk, &weights, tokens as u32)?;
//!     // Rows layout.expert_offsets[j] .. + layout.expert_rows[j] of bufs.recv_x() are local
//!     // expert j's tokens (bufs.recv_src(): whose; bufs.recv_weights(): their weights).
//!     let expert_out = shmem.alloc_zeroed::<bf16>(bufs.capacity() * 1024)?; // your experts' output, row for row
//!     let mut out = shmem.alloc_zeroed::<bf16>(tokens * 1024)?;
//!     ops.moe_combine(&stream, &mut bufs, &layout, &expert_out, &mut out)?;
//!     Ok(())
//! })
//! .unwrap();
//! ```
//!
//! **Experts and ranks.** [`MoeConfig::experts`] are numbered across the team: rank `d` holds
//! experts `d × L .. (d + 1) × L`, `L = experts / size` its *local* experts `0 .. L`.
//!
//! **Dispatch** ([`Ops::moe_dispatch`]; [`Ops::moe_dispatch_fp8`] for FP8 e4m3 rows, bytes
//! with one f32 scale per 128 elements, [`MoePayload`]): `x` holds this PE's `tokens` rows of `hidden` bf16,
//! `topk` their `top_k` experts (i32; `-1` for none) and `weights` the router's weights (f32).
//! A token crosses to a rank once, however many of its experts are there. On every rank the
//! received rows are grouped by local expert in [`MoeBuffers::recv_x`]: expert `j`'s rows
//! start at [`MoeLayout::expert_offsets`]`[j]`, there are [`MoeLayout::expert_rows`]`[j]` of
//! them, then zero rows up to the next multiple of [`MoeConfig::align`]; within an expert,
//! rows come in (source rank, source token) order, so a routing gives the same layout every
//! run. [`MoeBuffers::recv_src`] says each row's source rank and token, and
//! [`MoeBuffers::recv_weights`] its weight. The call waits for its layout (a host
//! synchronisation: this is the *normal* mode, for prefill and training batches), so it
//! cannot be recorded into a graph.
//!
//! **Combine** ([`Ops::moe_combine`]): `expert_out` holds the experts' output for the rows of
//! the latest dispatch, row for row as `recv_x`; each token's output is `Σ weight ×
//! expert_out[row]` over its entries, summed in f32 (per rank in entry order, then over ranks
//! in rank order) and rounded once to bf16: the same bits every run, whatever the grid.
//!
//! **Rules.** Every member makes the same calls in the same order on buffers from one
//! [`Ops::moe_buffers`] (collective); each dispatch is followed by its combine before the
//! next dispatch; token counts may differ per PE. Arguments are checked before anything is
//! queued; a `topk` entry outside `-1 .. experts` is found on the device, skipped, and
//! reported by the dispatch's error once the call has finished on every rank.
//!
//! **Peers** are reached through their mappings (NVLink, one GPU) or, where a rank has none
//! (several nodes), by NVSHMEM puts with signals, per rank.
//!
//! **The fused layer** ([`Ops::moe_layer`], [`Ops::moe_layer_buffers`],
//! [`Ops::moe_layer_weights`]): dispatch → gate/up grouped GEMM with SwiGLU in its epilogue →
//! down grouped GEMM → combine, in one call of kernels only (a graph records it). The rows land
//! in the low-latency layout's fixed rows per expert, packed by source rank (each rank's counts
//! are exchanged first); the gate/up GEMM waits per tile for the ranks whose rows it reads; the
//! down GEMM's epilogue stores each row on its source. W₁ holds the gate's and up's rows
//! interleaved by pairs ([`interleave_gate_up`]). `docs/moe.md` has the design;
//! `rshmem_moe::layer` the ordering argument.
//!
//! **Memory.** [`Ops::moe_buffers`] allocates, per PE, the staging rows for every rank's
//! `max_tokens` tokens (`size × max_tokens × hidden` bf16, twice in f32 for the combine's
//! partials), the expert-grouped rows ([`MoeBuffers::capacity`]: `size × max_tokens ×
//! min(top_k, L) + L × (align − 1)` rows) and small bookkeeping: see
//! [`MoeBuffers::bytes`].
//!
//! [`Ops::moe_dispatch`]: crate::Ops::moe_dispatch
//! [`Ops::moe_dispatch_fp8`]: crate::Ops::moe_dispatch_fp8
//! [`Ops::moe_combine`]: crate::Ops::moe_combine
//! [`Ops::moe_buffers`]: crate::Ops::moe_buffers
//! [`Ops::moe_layer`]: crate::Ops::moe_layer
//! [`Ops::moe_layer_buffers`]: crate::Ops::moe_layer_buffers
//! [`Ops::moe_layer_weights`]: crate::Ops::moe_layer_weights

mod buffers;
mod calls;
mod layer;
mod low_latency;

pub use buffers::{MoeBuffers, MoeConfig, MoeLayout, MoePayload};
pub use layer::{interleave_gate_up, MoeLayerBuffers, MoeLayerConfig, MoeLayerWeights};
pub use low_latency::MoeLlBuffers;

/// The sm_80 and sm_90 image of the `moe` family of `kernels/ops`.
pub static IMAGE: rshmem_host::KernelImage = rshmem_host::include_kernels!("rshmem-ops-moe");

/// The sm_90a image of the `moe90` family: the fused layer's two grouped GEMMs.
pub static IMAGE90: rshmem_host::KernelImage = rshmem_host::include_kernels!("rshmem-ops-moe90");
