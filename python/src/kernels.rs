//! Your own Rust kernels from Python: an image loaded from the JSON manifest rshmem-builder
//! writes beside it (`rshmem-image-<crate>.json`: names, parameter lists, PTX and cubin
//! files), loaded on a PE, and kernels launched by name with tensors and scalars checked
//! against the kernel's parameter list at call time (name, count, types).
//!
//! The parameter list is the `#[kernel]`'s as written (`"x: *mut f32, n: u32"`): a pointer to
//! a primitive element type takes a tensor of that dtype (its data address), a primitive
//! takes a Python number in its range; other types (views, user structs) cannot be passed
//! from Python, and a launch of such a kernel is refused naming the parameter.
//!
//! On the simulator a kernel runs as host code: from the image's simulator library where the
//! manifest names one (`Builder::sim_library`: the kernel crate built for the host, loaded
//! here), else compiled into this extension (the examples' kernels, feature
//! `example-kernels`); others are refused with the reason. GPUs need no host code.

use crate::args::TensorArg;
use crate::dtype::DType;
use crate::error::{arg, OrRaise, RshmemError};
use crate::ops::on_stream;
use crate::pe::PeCore;
use crate::Pe;
use pyo3::prelude::*;
use rshmem_host::{
    Backend, KernelImage, LaunchConfig, Module, RawKernelArgs, SimEntry, SimLibrary, TargetImage,
};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The manifest format this reader takes (rshmem-builder's `image.rs`).
const FORMAT: &str = "rshmem-image/1";

#[derive(serde::Deserialize)]
struct Manifest {
    format: String,
    name: String,
    nvshmem_version: Option<(u32, u32, u32)>,
    kernels: Vec<String>,
    #[serde(default)]
    signatures: std::collections::BTreeMap<String, String>,
    targets: Vec<ManifestTarget>,
    /// The simulator library (`Builder::sim_library`), relative to the manifest.
    #[serde(default)]
    sim_library: Option<String>,
}

#[derive(serde::Deserialize)]
struct ManifestTarget {
    sm: u32,
    ptx: String,
    cubin: Option<String>,
}

/// Keeps `value` for the rest of the process: a loaded image's text, which modules and
/// graphs may use until the process ends (load an image once).
fn forever<T: ?Sized>(value: Box<T>) -> &'static T {
    Box::leak(value)
}

/// Reads the image of the manifest at `path` (its files' relative paths are relative to it),
/// and the path of its simulator library where it names one.
fn read_image(path: &str) -> PyResult<(KernelImage, Option<PathBuf>)> {
    let dir = std::path::Path::new(path)
        .parent()
        .unwrap_or(std::path::Path::new("."));
    let file = |name: &str| dir.join(name);
    let text = std::fs::read_to_string(path)
        .map_err(|e| arg(format!("rshmem.load_kernels: reading {path}: {e}")))?;
    let m: Manifest = serde_json::from_str(&text).map_err(|e| {
        arg(format!(
            "rshmem.load_kernels: {path} is not an image manifest of rshmem-builder ({e})"
        ))
    })?;
    if m.format != FORMAT {
        return Err(arg(format!(
            "rshmem.load_kernels: {path} has format {:?}; this rshmem reads {FORMAT:?}: rebuild \
             the kernels with this checkout's rshmem-builder",
            m.format
        )));
    }
    let mut targets = Vec::new();
    for t in &m.targets {
        let ptx = std::fs::read_to_string(file(&t.ptx)).map_err(|e| {
            arg(format!(
                "rshmem.load_kernels: reading {}: {e}",
                file(&t.ptx).display()
            ))
        })?;
        let cubin = match &t.cubin {
            Some(c) => Some(forever(
                std::fs::read(file(c))
                    .map_err(|e| {
                        arg(format!(
                            "rshmem.load_kernels: reading {}: {e}",
                            file(c).display()
                        ))
                    })?
                    .into_boxed_slice(),
            )),
            None => None,
        };
        targets.push(TargetImage {
            sm: t.sm,
            ptx: forever(ptx.into_boxed_str()),
            cubin,
        });
    }
    let leak = |s: String| forever(s.into_boxed_str());
    let kernels: Vec<&'static str> = m.kernels.into_iter().map(leak).collect();
    let signatures: Vec<(&'static str, &'static str)> = m
        .signatures
        .into_iter()
        .map(|(k, s)| (leak(k), leak(s)))
        .collect();
    let sim_library = m.sim_library.as_deref().map(file);
    let image = KernelImage {
        name: leak(m.name),
        nvshmem_version: m.nvshmem_version,
        kernels: forever(kernels.into_boxed_slice()),
        signatures: forever(signatures.into_boxed_slice()),
        targets: forever(targets.into_boxed_slice()),
    };
    Ok((image, sim_library))
}

/// One kernel parameter as Python sees it.
#[derive(Clone, Debug, PartialEq)]
enum Param {
    /// A pointer to elements of this type (`mutable`: `*mut`).
    Ptr { elem: Scalar, mutable: bool },
    /// A value of this type.
    Value(Scalar),
    /// A type Python cannot make (its text).
    Other(String),
}

/// A primitive type: its element type and, for values, how a Python number converts.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scalar {
    Int { bits: u32, signed: bool },
    Float { bits: u32 },
    Bool,
    Half(DType),
}

/// The primitive named `name` (the last segment of a path: `rshmem_device::bf16` is bf16).
fn scalar(name: &str) -> Option<Scalar> {
    let last = name.rsplit("::").next().unwrap_or(name);
    Some(match last {
        "i8" => Scalar::Int {
            bits: 8,
            signed: true,
        },
        "i16" => Scalar::Int {
            bits: 16,
            signed: true,
        },
        "i32" => Scalar::Int {
            bits: 32,
            signed: true,
        },
        "i64" | "isize" => Scalar::Int {
            bits: 64,
            signed: true,
        },
        "u8" => Scalar::Int {
            bits: 8,
            signed: false,
        },
        "u16" => Scalar::Int {
            bits: 16,
            signed: false,
        },
        "u32" => Scalar::Int {
            bits: 32,
            signed: false,
        },
        "u64" | "usize" => Scalar::Int {
            bits: 64,
            signed: false,
        },
        "f32" => Scalar::Float { bits: 32 },
        "f64" => Scalar::Float { bits: 64 },
        "bool" => Scalar::Bool,
        "bf16" => Scalar::Half(DType::Bf16),
        "f16" => Scalar::Half(DType::F16),
        _ => return None,
    })
}

impl Scalar {
    /// The tensor element type a pointer to it takes.
    fn dtype(self) -> DType {
        match self {
            Scalar::Int {
                bits: 8,
                signed: true,
            } => DType::I8,
            Scalar::Int {
                bits: 16,
                signed: true,
            } => DType::I16,
            Scalar::Int {
                bits: 32,
                signed: true,
            } => DType::I32,
            Scalar::Int { signed: true, .. } => DType::I64,
            Scalar::Int { bits: 8, .. } => DType::U8,
            Scalar::Int { bits: 16, .. } => DType::U16,
            Scalar::Int { bits: 32, .. } => DType::U32,
            Scalar::Int { .. } => DType::U64,
            Scalar::Float { bits: 32 } => DType::F32,
            Scalar::Float { .. } => DType::F64,
            Scalar::Bool => DType::Bool,
            Scalar::Half(d) => d,
        }
    }
}

/// `"x: *mut f32, n: u32"` → `[("x", Ptr f32 mut), ("n", u32)]`.
fn parse_signature(text: &str) -> Vec<(String, Param)> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    split_top_level(text)
        .into_iter()
        .map(|p| {
            let (name, ty) = p.split_once(':').unwrap_or(("?", p));
            let ty = ty.trim();
            let param = if let Some(rest) = ty.strip_prefix("*mut ") {
                scalar(rest).map_or(Param::Other(ty.into()), |elem| Param::Ptr {
                    elem,
                    mutable: true,
                })
            } else if let Some(rest) = ty.strip_prefix("*const ") {
                scalar(rest).map_or(Param::Other(ty.into()), |elem| Param::Ptr {
                    elem,
                    mutable: false,
                })
            } else {
                scalar(ty).map_or(Param::Other(ty.into()), Param::Value)
            };
            (name.trim().to_string(), param)
        })
        .collect()
}

/// Splits at commas outside `<>`, `()` and `[]`.
fn split_top_level(text: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0, Vec::new());
    for (i, c) in text.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(text[start..].trim());
    out
}

/// The kernels compiled into this extension, for the simulator: `(name, parameter list, host
/// code)`.
fn sim_kernels() -> Vec<(&'static str, &'static str, SimEntry)> {
    #[allow(unused_mut)]
    let mut table: Vec<(&'static str, &'static str, SimEntry)> = Vec::new();
    #[cfg(feature = "example-kernels")]
    {
        use rshmem_device::Kernel;
        use rshmem_examples_image::{bandwidth, gelu, hello, launch, ring};
        macro_rules! entries {
            ($($k:ty),*) => {$(
                table.push((<$k>::NAME, <$k>::SIGNATURE, SimEntry::of::<$k>()));
            )*};
        }
        entries!(
            hello::hello_fill,
            hello::hello_read,
            ring::ring,
            bandwidth::put_bw,
            gelu::gelu_bf16,
            launch::bump
        );
    }
    table
}

/// An image loaded on a PE.
#[pyclass(module = "rshmem._native", frozen)]
pub struct Kernels {
    core: Arc<PeCore>,
    module: Mutex<Option<Module<'static>>>,
    image: KernelImage,
    /// On the simulator, each kernel's host code from the image's simulator library.
    loaded: Vec<(&'static str, SimEntry)>,
    sim_library: Option<PathBuf>,
}

impl Drop for Kernels {
    fn drop(&mut self) {
        self.core.end_object(&mut self.module);
    }
}

/// Loads the image of the manifest at `path` on `pe`.
#[pyfunction]
fn load_kernels(py: Python<'_>, pe: &Pe, path: &str) -> PyResult<Kernels> {
    let (image, sim_library) = read_image(path)?;
    let core = pe.core.clone();
    let sim_library = sim_library.filter(|_| core.backend == Backend::Sim);
    let (module, loaded) = py.detach(|| {
        core.with_live(|live| {
            let loaded = match &sim_library {
                Some(lib) => sim_entries(&image, lib)?,
                None => Vec::new(),
            };
            let module = live.shmem().load(&image).or_raise()?;
            // SAFETY: the module borrows the `Shmem`; `Kernels` drops it under the PE's state,
            // before the `Shmem`.
            let module = unsafe { std::mem::transmute::<Module<'_>, Module<'static>>(module) };
            Ok((module, loaded))
        })
    })?;
    core.retain();
    Ok(Kernels {
        core,
        module: Mutex::new(Some(module)),
        image,
        loaded,
        sim_library,
    })
}

/// Every kernel's host code from the simulator library at `path`, each checked against the
/// image's parameter list.
fn sim_entries(image: &KernelImage, path: &Path) -> PyResult<Vec<(&'static str, SimEntry)>> {
    let lib = SimLibrary::open(path).or_raise()?;
    image
        .kernels
        .iter()
        .map(|&k| Ok((k, lib.kernel(k, image.signature(k)).or_raise()?)))
        .collect()
}

/// A launch argument from Python: a tensor or a number.
#[derive(FromPyObject)]
enum PyArg {
    Tensor(TensorArg),
    Bool(bool),
    Int(i128),
    Float(f64),
}

/// Packs `value` for a parameter of type `s` (named `name`), checked against its range.
fn push_value(
    args: &mut RawKernelArgs,
    name: &str,
    s: Scalar,
    value: &PyArg,
) -> Result<(), String> {
    let pushed = match (s, value) {
        (Scalar::Bool, PyArg::Bool(b)) => args.push(*b),
        (Scalar::Int { bits, signed }, PyArg::Int(v)) => {
            let (lo, hi) = if signed {
                (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
            } else {
                (0, (1i128 << bits) - 1)
            };
            if *v < lo || *v > hi {
                return Err(format!(
                    "`{name}` = {v} is outside the range of its type ({lo}..={hi})"
                ));
            }
            match (bits, signed) {
                (8, true) => args.push(*v as i8),
                (16, true) => args.push(*v as i16),
                (32, true) => args.push(*v as i32),
                (_, true) => args.push(*v as i64),
                (8, false) => args.push(*v as u8),
                (16, false) => args.push(*v as u16),
                (32, false) => args.push(*v as u32),
                (_, false) => args.push(*v as u64),
            }
        }
        (Scalar::Float { bits: 32 }, PyArg::Float(v)) => args.push(*v as f32),
        (Scalar::Float { bits: 32 }, PyArg::Int(v)) => args.push(*v as f32),
        (Scalar::Float { .. }, PyArg::Float(v)) => args.push(*v),
        (Scalar::Float { .. }, PyArg::Int(v)) => args.push(*v as f64),
        (Scalar::Half(DType::Bf16), PyArg::Float(v)) => {
            args.push(rshmem_device::bf16::from_f64(*v))
        }
        (Scalar::Half(_), PyArg::Float(v)) => args.push(rshmem_device::f16::from_f64(*v)),
        (s, PyArg::Tensor(t)) => {
            return Err(format!(
                "`{name}` is a {s:?} value, but a tensor ({}) was passed",
                t.2
            ))
        }
        (s, _) => {
            return Err(format!(
                "`{name}` takes a {s:?}: pass a Python number of that kind"
            ))
        }
    };
    pushed.map_err(|e| e.to_string())
}

#[pymethods]
impl Kernels {
    /// The image's crate name.
    #[getter]
    fn name(&self) -> &'static str {
        self.image.name
    }

    /// The simulator library the kernels run from on the simulator (`None` on GPUs, or
    /// where the manifest names none).
    #[getter]
    fn sim_library(&self) -> Option<String> {
        self.sim_library.as_ref().map(|p| p.display().to_string())
    }

    /// `{kernel: parameter list}`.
    fn signatures(&self) -> Vec<(&'static str, &'static str)> {
        self.image
            .kernels
            .iter()
            .map(|k| (*k, self.image.signature(k).unwrap_or("")))
            .collect()
    }

    /// Launches kernel `name` with `args` (tensors and numbers, checked against its
    /// parameter list) on `stream`.
    #[pyo3(signature = (name, grid, block, args, shared_mem=0, cooperative=false, stream=None))]
    #[allow(clippy::too_many_arguments)]
    fn launch(
        &self,
        py: Python<'_>,
        name: &str,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        args: Vec<PyArg>,
        shared_mem: u32,
        cooperative: bool,
        stream: Option<u64>,
    ) -> PyResult<()> {
        let call = format!("launch of `{name}` (image {})", self.image.name);
        if !self.image.kernels.contains(&name) {
            return Err(arg(format!(
                "{call}: no such kernel; the image has {}",
                self.image.kernels.join(", ")
            )));
        }
        let Some(signature) = self.image.signature(name) else {
            return Err(arg(format!(
                "{call}: the image records no parameter list for it (built before rshmem-builder \
                 recorded them): rebuild the kernels"
            )));
        };
        let params = parse_signature(signature);
        if params.len() != args.len() {
            return Err(arg(format!(
                "{call}: {} argument(s) given, the kernel takes {} ({signature})",
                args.len(),
                params.len()
            )));
        }
        let mut raw = RawKernelArgs::new();
        for ((pname, param), value) in params.iter().zip(&args) {
            let bad = |why: String| {
                arg(format!(
                    "{call}: {why} (the kernel is `{name}({signature})`)"
                ))
            };
            match param {
                Param::Other(ty) => {
                    return Err(bad(format!(
                        "parameter `{pname}: {ty}` cannot be passed from Python: only pointers to \
                         and values of primitive types (ints, floats, bool, bf16, f16) can"
                    )))
                }
                Param::Ptr { elem, mutable: _ } => {
                    let PyArg::Tensor(t) = value else {
                        return Err(bad(format!("`{pname}` is a pointer: pass a tensor")));
                    };
                    let dtype = DType::parse(&t.2)?;
                    if dtype != elem.dtype() {
                        return Err(bad(format!(
                            "`{pname}` points to {}, but the tensor passed is {}",
                            elem.dtype().name(),
                            dtype.name()
                        )));
                    }
                    raw.push(t.0 as *mut u8).or_raise()?;
                }
                Param::Value(s) => push_value(&mut raw, pname, *s, value).map_err(bad)?,
            }
        }
        let library = self
            .loaded
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, e)| *e);
        let linked = sim_kernels()
            .into_iter()
            .find(|(k, _, _)| *k == name)
            .map(|(_, sig, entry)| (sig, entry))
            .filter(|_| library.is_none());
        if let Some((sig, _)) = linked {
            if sig != signature {
                return Err(RshmemError::new_err(format!(
                    "{call}: the image says `{name}({signature})`, but the host code compiled into \
                     this extension is `{name}({sig})`: the image and this build come from \
                     different sources; rebuild both"
                )));
            }
        }
        let config = LaunchConfig {
            grid,
            block,
            shared_mem_bytes: shared_mem,
            cooperative,
        };
        let pe = Pe {
            core: self.core.clone(),
        };
        on_stream(py, &pe, stream, |_, s| {
            let module = self.module.lock().unwrap_or_else(|p| p.into_inner());
            let module = module.as_ref().expect("a loaded module");
            let sim = library.or(linked.map(|(_, e)| e));
            // SAFETY: the arguments were checked against the kernel's parameter list (count,
            // pointer element types, value ranges), as was the host code's; what the pointers
            // address is the caller's contract, as for every launch (docs/python.md).
            unsafe { module.launch_raw_on(s, name, config, &raw, sim) }.or_raise()
        })
    }
}

/// The manifest of the examples' image (for tests), where this extension was built with it.
#[pyfunction]
fn example_manifest() -> Option<&'static str> {
    #[cfg(feature = "example-kernels")]
    return Some(rshmem_examples_image::MANIFEST);
    #[cfg(not(feature = "example-kernels"))]
    None
}

/// The manifest of the stand-in user image (`testing/kernels/user`, for tests): kernels this
/// extension is not compiled with, with a simulator library.
#[pyfunction]
fn user_manifest() -> Option<&'static str> {
    #[cfg(feature = "example-kernels")]
    return Some(rshmem_examples_image::USER_MANIFEST);
    #[cfg(not(feature = "example-kernels"))]
    None
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Kernels>()?;
    m.add_function(wrap_pyfunction!(load_kernels, m)?)?;
    m.add_function(wrap_pyfunction!(example_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(user_manifest, m)?)
}
