//! `cuTensorMapEncodeTiled`: the GPU backend's `PeBackend::encode_tensor_map` (the driver is
//! loaded by the GPU backend).

use super::cuda::CudaError;
use crate::contract::{Checked, Result, TiledSpec};
use cudarc::driver::result::DriverError;
use cudarc::driver::sys;
use rshmem_device::hopper::{Swizzle, TensorMap, TmaType};

/// Encodes `spec` (checked as `c`): interleave none, L2 promotion 128 B, out-of-bounds
/// elements zero, element strides 1.
pub(crate) fn encode_tiled(spec: &TiledSpec<'_>, c: &Checked) -> Result<TensorMap> {
    use sys::CUtensorMapDataType_enum as T;
    use sys::CUtensorMapSwizzle_enum as S;
    let ty = match spec.ty {
        TmaType::Bf16 => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        TmaType::F16 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        TmaType::F32 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        TmaType::U8 => T::CU_TENSOR_MAP_DATA_TYPE_UINT8,
    };
    let swizzle = match spec.swizzle {
        Swizzle::None => S::CU_TENSOR_MAP_SWIZZLE_NONE,
        Swizzle::B32 => S::CU_TENSOR_MAP_SWIZZLE_32B,
        Swizzle::B64 => S::CU_TENSOR_MAP_SWIZZLE_64B,
        Swizzle::B128 => S::CU_TENSOR_MAP_SWIZZLE_128B,
    };
    let element_strides = [1u32; 3];
    let mut map = sys::CUtensorMap { opaque: [0; 16] };
    // SAFETY: every array holds `rank` (or `rank - 1` strides) valid entries; `map` is a
    // CUtensorMap the driver writes; the global address is only recorded, not accessed.
    let status = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            ty,
            c.rank,
            spec.global as *mut core::ffi::c_void,
            c.dims.as_ptr(),
            c.strides.as_ptr(),
            c.box_dims.as_ptr(),
            element_strides.as_ptr(),
            sys::CUtensorMapInterleave_enum::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            sys::CUtensorMapL2promotion_enum::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            sys::CUtensorMapFloatOOBfill_enum::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    if status != sys::CUresult::CUDA_SUCCESS {
        return Err(CudaError {
            call: "cuTensorMapEncodeTiled",
            error: DriverError(status),
        }
        .into());
    }
    Ok(TensorMap { words: map.opaque })
}
