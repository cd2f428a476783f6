//! Element types as the Python layer names them (`"bf16"`, `"f32"`, ...), and the typed
//! dispatch of an op over them: one macro per family of types an op takes, so each op is
//! written once, generically.

use crate::error::arg;
use pyo3::PyResult;

/// An element type of a symmetric tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    Bf16,
    F16,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    Bool,
    /// FP8 e4m3 (`torch.float8_e4m3fn`; raw bytes in numpy).
    Fp8E4m3,
    /// FP8 e5m2 (`torch.float8_e5m2`; raw bytes in numpy).
    Fp8E5m2,
}

/// Every type with its name, in one table.
const NAMES: &[(DType, &str)] = &[
    (DType::Bf16, "bf16"),
    (DType::F16, "f16"),
    (DType::F32, "f32"),
    (DType::F64, "f64"),
    (DType::I8, "i8"),
    (DType::I16, "i16"),
    (DType::I32, "i32"),
    (DType::I64, "i64"),
    (DType::U8, "u8"),
    (DType::U16, "u16"),
    (DType::U32, "u32"),
    (DType::U64, "u64"),
    (DType::Bool, "bool"),
    (DType::Fp8E4m3, "fp8_e4m3"),
    (DType::Fp8E5m2, "fp8_e5m2"),
];

impl DType {
    /// The type named `name`, or an argument error listing the names.
    pub fn parse(name: &str) -> PyResult<DType> {
        NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|&(t, _)| t)
            .ok_or_else(|| {
                let all: Vec<&str> = NAMES.iter().map(|(_, n)| *n).collect();
                arg(format!(
                    "unknown element type {name:?}: rshmem's are {}",
                    all.join(", ")
                ))
            })
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(t, _)| *t == self)
            .map(|(_, n)| *n)
            .expect("every type is in NAMES")
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::I8 | DType::U8 | DType::Bool | DType::Fp8E4m3 | DType::Fp8E5m2 => 1,
            DType::Bf16 | DType::F16 | DType::I16 | DType::U16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
    }
}

/// Runs `$body` with `$t` the Rust type of `$dtype` among the reduction types of rshmem's
/// collectives (bf16, f16, f32, i32, i64); an argument error naming `$call` otherwise.
macro_rules! with_reducible {
    ($call:expr, $dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::Bf16 => {
                type $t = rshmem_device::bf16;
                $body
            }
            $crate::dtype::DType::F16 => {
                type $t = rshmem_device::f16;
                $body
            }
            $crate::dtype::DType::F32 => {
                type $t = f32;
                $body
            }
            $crate::dtype::DType::I32 => {
                type $t = i32;
                $body
            }
            $crate::dtype::DType::I64 => {
                type $t = i64;
                $body
            }
            other => Err($crate::error::arg(format!(
                "{}: tensors of {} cannot be reduced: rshmem's reductions take bf16, f16, f32, \
                 i32 or i64",
                $call,
                other.name()
            ))),
        }
    };
}

/// Runs `$body` with `$t` the GEMM input type of `$dtype` (bf16, f16).
macro_rules! with_gemm_in {
    ($call:expr, $dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::Bf16 => {
                type $t = rshmem_device::bf16;
                $body
            }
            $crate::dtype::DType::F16 => {
                type $t = rshmem_device::f16;
                $body
            }
            other => Err($crate::error::arg(format!(
                "{}: A and B of {} : rshmem's GEMM takes bf16 or f16 inputs",
                $call,
                other.name()
            ))),
        }
    };
}

/// Runs `$body` with `$in` the GEMM input type of `$a` (bf16, f16) and `$out` the output
/// type of `$c` (f32, or `$in` itself); an argument error naming `$call` otherwise.
macro_rules! with_gemm_types {
    ($call:expr, $a:expr, $c:expr, $in:ident, $out:ident => $body:expr) => {
        $crate::dtype::with_gemm_in!($call, $a, $in => match $c {
            $crate::dtype::DType::F32 => {
                type $out = f32;
                $body
            }
            c if c == $a => {
                type $out = $in;
                $body
            }
            c => Err($crate::error::arg(format!(
                "{}: `out` is {}: a GEMM of {} writes f32 or {}",
                $call,
                c.name(),
                $a.name(),
                $a.name()
            ))),
        })
    };
}

/// Runs `$body` with `$in` the FP8 type of `$a` (e4m3, e5m2) and `$out` the output type of
/// `$c` (f32, bf16); an argument error naming `$call` otherwise.
macro_rules! with_fp8_types {
    ($call:expr, $a:expr, $c:expr, $in:ident, $out:ident => $body:expr) => {{
        macro_rules! out {
            () => {
                match $c {
                    $crate::dtype::DType::F32 => {
                        type $out = f32;
                        $body
                    }
                    $crate::dtype::DType::Bf16 => {
                        type $out = rshmem_device::bf16;
                        $body
                    }
                    c => Err($crate::error::arg(format!(
                        "{}: `out` is {}: an FP8 GEMM writes f32 or bf16",
                        $call,
                        c.name()
                    ))),
                }
            };
        }
        match $a {
            $crate::dtype::DType::Fp8E4m3 => {
                type $in = rshmem_device::E4m3;
                out!()
            }
            $crate::dtype::DType::Fp8E5m2 => {
                type $in = rshmem_device::E5m2;
                out!()
            }
            other => Err($crate::error::arg(format!(
                "{}: A and B of {}: an FP8 GEMM takes fp8_e4m3 or fp8_e5m2 inputs",
                $call,
                other.name()
            ))),
        }
    }};
}

/// Runs `$body` with `$t` an unsigned type of `$dtype`'s size: for ops that move elements
/// as bytes (the all-gathers), whatever they mean.
macro_rules! with_bits {
    ($dtype:expr, $t:ident => $body:expr) => {
        match $dtype.size() {
            1 => {
                type $t = u8;
                $body
            }
            2 => {
                type $t = u16;
                $body
            }
            4 => {
                type $t = u32;
                $body
            }
            _ => {
                type $t = u64;
                $body
            }
        }
    };
}

pub(crate) use {with_bits, with_fp8_types, with_gemm_in, with_gemm_types, with_reducible};
