//! What a host-side collective is made of, as the backends run it: its element type
//! ([`ElemKind`], from the [`CollElem`] a caller passes) and the collective ([`CollOp`]).

use bytemuck::Pod;
use rshmem_device::shmem::ReduceOp;

/// The element type of a host-side collective (NVSHMEM's `TYPENAME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ElemKind {
    /// `i32` (`int32`).
    I32,
    /// `u32` (`uint32`).
    U32,
    /// `i64` (`int64`).
    I64,
    /// `u64` (`uint64`).
    U64,
    /// `f32` (`float`).
    F32,
    /// `f64` (`double`).
    F64,
}

mod sealed {
    pub trait Sealed {}
}

/// Element types of host-side collectives: 32- and 64-bit integers and floats.
pub trait CollElem: Pod + sealed::Sealed {
    /// Which one it is.
    const KIND: ElemKind;
}

/// Declares the element types: `ElemKind::nvshmem_name` and the `CollElem` impls.
macro_rules! coll_elems {
    ($($t:ty => $kind:ident, $name:literal;)*) => {
        impl ElemKind {
            /// NVSHMEM's `TYPENAME`, as in `nvshmemx_int32_fcollect_on_stream`.
            pub fn nvshmem_name(self) -> &'static str {
                match self {
                    $(ElemKind::$kind => $name,)*
                }
            }

            /// Whether reductions with `op` exist for this type (not the bitwise ones of
            /// floats).
            pub fn supports(self, op: ReduceOp) -> bool {
                let bitwise = matches!(op, ReduceOp::And | ReduceOp::Or | ReduceOp::Xor);
                !(bitwise && matches!(self, ElemKind::F32 | ElemKind::F64))
            }
        }
        $(
            impl sealed::Sealed for $t {}
            impl CollElem for $t {
                const KIND: ElemKind = ElemKind::$kind;
            }
        )*
    };
}

coll_elems! {
    i32 => I32, "int32";
    u32 => U32, "uint32";
    i64 => I64, "int64";
    u64 => U64, "uint64";
    f32 => F32, "float";
    f64 => F64, "double";
}

/// A collective as the backends run it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CollOp {
    /// From team PE `root` to every member.
    Broadcast { root: usize },
    /// Every member's block to every member, in team order.
    Fcollect,
    /// Block `j` of member `i` to block `i` of member `j`.
    Alltoall,
    /// Element-wise over the members, to every member.
    Reduce(ReduceOp),
    /// As `Reduce`; member `i` keeps block `i`.
    ReduceScatter(ReduceOp),
}

impl CollOp {
    /// The `Shmem` method, for messages.
    pub(crate) fn call(self) -> &'static str {
        match self {
            CollOp::Broadcast { .. } => "broadcast_on_stream",
            CollOp::Fcollect => "fcollect_on_stream",
            CollOp::Alltoall => "alltoall_on_stream",
            CollOp::Reduce(_) => "reduce_on_stream",
            CollOp::ReduceScatter(_) => "reducescatter_on_stream",
        }
    }
}
