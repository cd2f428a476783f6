//! The ops' images, one per family of `kernels/ops`: each holds exactly its own family's
//! kernels (the builder's feature sets keep the families apart), and every kernel the host
//! picks through a family's table is in that family's image. No GPU needed: this reads the
//! images' kernel lists, recorded by the builder from the PTX it linked.

use rshmem_device::{bf16, f16, E4m3, E5m2, Kernel};
use rshmem_gemm::sm90::Tile128;
use rshmem_ops::{coll, fused, gemm};
use rshmem_ops_kernels::coll::{Op, ReduceKernels, Rounds};
use rshmem_ops_kernels::gemm80::Gemm80;
use rshmem_ops_kernels::gemm90::{Fp8Gemm90, Fp8SplitK90, Gemm90, SplitK90, SplitReduce};
use rshmem_ops_kernels::tp80::{self, Tp80};
use rshmem_ops_kernels::tp90::Tp90;
use rshmem_ops_kernels::{Layout, Visit};
use std::collections::BTreeSet;

/// The name of the kernel a table picks.
struct Name;

impl<A> Visit<A> for Name {
    type Output = &'static str;
    fn visit<K: Kernel<Args = A>>(self) -> &'static str {
        K::NAME
    }
}

fn name<K: Kernel>() -> &'static str {
    K::NAME
}

fn set(names: impl IntoIterator<Item = &'static str>) -> BTreeSet<&'static str> {
    names.into_iter().collect()
}

/// The plain and grouped kernels of (In, Out): sm90's (128 x 256 tiles, then 128 x 128),
/// then sm80's.
fn gemm_names<
    In,
    Out: Gemm90<In, false>
        + Gemm90<In, true>
        + Gemm90<In, false, Tile128<In>>
        + Gemm90<In, true, Tile128<In>>
        + Gemm80<In, false>
        + Gemm80<In, true>,
>() -> [Vec<&'static str>; 2] {
    [
        vec![
            name::<<Out as Gemm90<In, false>>::Kernel>(),
            name::<<Out as Gemm90<In, true>>::Kernel>(),
            name::<<Out as Gemm90<In, false>>::Grouped>(),
            name::<<Out as Gemm90<In, true>>::Grouped>(),
            name::<<Out as Gemm90<In, false, Tile128<In>>>::Kernel>(),
            name::<<Out as Gemm90<In, true, Tile128<In>>>::Kernel>(),
            name::<<Out as Gemm90<In, false, Tile128<In>>>::Grouped>(),
            name::<<Out as Gemm90<In, true, Tile128<In>>>::Grouped>(),
        ],
        vec![
            name::<<Out as Gemm80<In, false>>::Kernel>(),
            name::<<Out as Gemm80<In, true>>::Kernel>(),
            name::<<Out as Gemm80<In, false>>::Grouped>(),
            name::<<Out as Gemm80<In, true>>::Grouped>(),
        ],
    ]
}

/// The FP8 kernels of (In, Out): per tensor, block-scaled, grouped block-scaled.
fn fp8_names<In, Out: Fp8Gemm90<In>>() -> [&'static str; 4] {
    [
        name::<<Out as Fp8Gemm90<In>>::Tensor>(),
        name::<<Out as Fp8Gemm90<In>>::Block>(),
        name::<<Out as Fp8Gemm90<In>>::GroupedBlock>(),
        name::<<Out as Fp8Gemm90<In>>::GroupedTensor>(),
    ]
}

fn reduce_names<T: ReduceKernels>() -> Vec<&'static str> {
    let ops = [Op::Sum, Op::Max, Op::Min];
    let mut names = Vec::new();
    for rounds in [Rounds::Push, Rounds::TwoShot] {
        names.extend(ops.map(|op| T::reduce(rounds, op, Name)));
    }
    names.extend(ops.iter().filter_map(|&op| T::lamport(op, Name)));
    names
}

#[test]
fn gemm_images_hold_exactly_their_tables_kernels() {
    let pairs = [
        gemm_names::<bf16, bf16>(),
        gemm_names::<bf16, f32>(),
        gemm_names::<f16, f16>(),
        gemm_names::<f16, f32>(),
    ];
    let mut sm90 = set(pairs.iter().flat_map(|p| p[0].clone()));
    let sm80 = set(pairs.iter().flat_map(|p| p[1].clone()));
    // Split-K: the parts per input and layout, the reduction per output.
    sm90.extend([
        name::<<bf16 as SplitK90<false>>::Kernel>(),
        name::<<bf16 as SplitK90<true>>::Kernel>(),
        name::<<f16 as SplitK90<false>>::Kernel>(),
        name::<<f16 as SplitK90<true>>::Kernel>(),
        name::<<f32 as SplitReduce>::Kernel>(),
        name::<<bf16 as SplitReduce>::Kernel>(),
        name::<<f16 as SplitReduce>::Kernel>(),
    ]);
    // FP8 (sm90 only): e4m3 and e5m2 into bf16 and f32.
    sm90.extend(fp8_names::<E4m3, bf16>());
    sm90.extend(fp8_names::<E4m3, f32>());
    sm90.extend(fp8_names::<E5m2, bf16>());
    sm90.extend(fp8_names::<E5m2, f32>());
    // FP8 split-K: the parts per input format and scaling (the reductions are shared).
    sm90.extend([
        name::<<E4m3 as Fp8SplitK90>::Tensor>(),
        name::<<E4m3 as Fp8SplitK90>::Block>(),
        name::<<E5m2 as Fp8SplitK90>::Tensor>(),
        name::<<E5m2 as Fp8SplitK90>::Block>(),
    ]);
    assert_eq!((sm90.len(), sm80.len()), (59, 16), "{sm90:?} {sm80:?}");
    assert_eq!(set(gemm::IMAGE90.kernels.iter().copied()), sm90);
    assert_eq!(set(gemm::IMAGE80.kernels.iter().copied()), sm80);
}

#[test]
fn fused_images_hold_exactly_their_tables_kernels() {
    let tp90 = set([
        name::<<Layout<false> as Tp90>::AllGather>(),
        name::<<Layout<true> as Tp90>::AllGather>(),
        name::<<Layout<false> as Tp90>::ReduceScatter>(),
        name::<<Layout<true> as Tp90>::ReduceScatter>(),
    ]);
    let tp80 = set([
        name::<<Layout<false> as Tp80>::AllGather>(),
        name::<<Layout<true> as Tp80>::AllGather>(),
        name::<<Layout<false> as Tp80>::ReduceScatter>(),
        name::<<Layout<true> as Tp80>::ReduceScatter>(),
        name::<tp80::tp_barrier>(),
        name::<tp80::rs_fixup>(),
        name::<tp80::rs_wait>(),
        name::<tp80::ag_wait>(),
    ]);
    assert_eq!(tp90.len(), 4);
    assert_eq!(tp80.len(), 8);
    assert_eq!(set(fused::IMAGE90.kernels.iter().copied()), tp90);
    assert_eq!(set(fused::IMAGE80.kernels.iter().copied()), tp80);
}

#[test]
fn coll_image_holds_exactly_its_tables_kernels() {
    use rshmem_ops_kernels::coll::{coll_all_gather, coll_probe, NormKernel};
    let mut all = Vec::new();
    all.extend(reduce_names::<bf16>());
    all.extend(reduce_names::<f16>());
    all.extend(reduce_names::<f32>());
    all.extend(reduce_names::<i32>());
    all.extend(reduce_names::<i64>());
    all.extend([
        name::<<bf16 as NormKernel>::Kernel>(),
        name::<<f16 as NormKernel>::Kernel>(),
        name::<<f32 as NormKernel>::Kernel>(),
        name::<coll_all_gather>(),
        name::<coll_probe>(),
    ]);
    // 5 types x 2 round kinds x 3 ops, floats' flag-in-data kernels, RMSNorm, gather, probe.
    assert_eq!(all.len(), 30 + 9 + 3 + 2);
    let all = set(all);
    assert_eq!(all.len(), 44, "a table names one kernel twice");
    assert_eq!(set(coll::IMAGE.kernels.iter().copied()), all);
}

#[test]
fn moe_image_holds_exactly_its_kernels() {
    use rshmem_ops_kernels::moe::*;
    let all = set([
        name::<moe_barrier>(),
        name::<moe_route_count>(),
        name::<moe_route>(),
        name::<moe_send>(),
        name::<moe_signal>(),
        name::<moe_layout>(),
        name::<moe_scatter>(),
        name::<moe_combine_send>(),
        name::<moe_combine_reduce>(),
        name::<moe_ll_begin>(),
        name::<moe_ll_route_count>(),
        name::<moe_ll_route>(),
        name::<moe_ll_send>(),
        name::<moe_ll_signal_counts>(),
        name::<moe_ll_recv>(),
        name::<moe_ll_combine_send>(),
        name::<moe_ll_signal_combine>(),
        name::<moe_ll_combine_reduce>(),
        name::<moe_layer_prepare>(),
        name::<moe_layer_send>(),
        name::<moe_layer_push>(),
    ]);
    assert_eq!(all.len(), 21);
    assert_eq!(set(rshmem_ops::moe::IMAGE.kernels.iter().copied()), all);
}

#[test]
fn moe90_image_holds_exactly_the_fused_layers_gemms() {
    use rshmem_ops_kernels::moe90::{moe_down90, GateUp90, Waits};
    let all = set([
        name::<<Waits<true> as GateUp90<true>>::Kernel>(),
        name::<<Waits<false> as GateUp90<false>>::Kernel>(),
        name::<moe_down90>(),
    ]);
    assert_eq!(all.len(), 3, "a table names one kernel twice");
    assert_eq!(set(rshmem_ops::moe::IMAGE90.kernels.iter().copied()), all);
}
