//! One architecture's code: the nested build (step 1), then either the stored PTX and cubin
//! of an earlier build with the same inputs (`reuse`), or a fresh link (steps 2–5, `link`)
//! whose ptxas (step 6) runs on a thread of its own while the next architecture builds.

use crate::arch::Arch;
use crate::error::{io, Error, Result};
use crate::nested::{self, Nested};
use crate::plan::Plan;
use crate::toolchain::Toolchain;
use crate::{fetch, link, locate, reuse, TargetOutput};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::JoinHandle;

/// What building one architecture gave.
pub(crate) struct ArchCode {
    /// Its PTX and cubin (the cubin complete once `assembling` is done).
    pub target: TargetOutput,
    /// The kernel entry points.
    pub kernels: Vec<String>,
    /// Their parameter lists, `(kernel, text)`.
    pub signatures: Vec<(String, String)>,
    /// NVSHMEM's version in the PTX, if linked in.
    pub nvshmem_version: Option<(u32, u32, u32)>,
    /// ptxas of a fresh link, still running.
    pub assembling: Option<JoinHandle<Result<()>>>,
    /// What to keep for reuse once ptxas is done (fresh links whose inputs could be stamped).
    pub keep: Option<(reuse::Store, reuse::Record)>,
}

/// Builds `plan`'s kernel crate for `arch`.
pub(crate) fn build(
    plan: &Plan,
    tc: &Toolchain,
    ptxas: Option<&Path>,
    arch: Arch,
) -> Result<ArchCode> {
    let nested_dir = plan.nested_dir(arch);
    let nested = nested::build(tc, plan, &nested_dir, arch)?;
    nested::watch(&nested);
    let name = &plan.name;
    let ptx = plan.out_dir.join(format!("{name}.{arch}.ptx"));
    let cubin = ptxas.map(|_| plan.out_dir.join(format!("{name}.{arch}.cubin")));
    let store = reuse::Store::new(nested_dir.join("images"));
    let inputs = reuse::Inputs::new(&nested.rlibs, arch.sm(), plan.debug, ptxas);
    let nvshmem_now = || locate::nvshmem().ok().map(|n| n.bitcode);
    if let Some(record) = inputs
        .as_ref()
        .and_then(|i| store.fetch(name, i, nvshmem_now, &ptx, cubin.as_deref()))
    {
        return reused(arch, record, ptx, cubin);
    }

    let work = plan.out_dir.join(format!("{name}.{arch}.link"));
    let fresh = link_fresh(tc, &nested, &work, arch, plan.debug, &ptx)?;
    let assembling = match (ptxas, &cubin) {
        (Some(ptxas), Some(cubin)) => {
            let (ptxas, ptx, target) = (ptxas.to_path_buf(), fresh.ptx.clone(), cubin.clone());
            Some(std::thread::spawn(move || {
                link::ptxas(&ptxas, &ptx, arch, &target)
            }))
        }
        _ => None,
    };
    let _ = std::fs::remove_dir_all(&work);
    let keep = inputs.map(|inputs| {
        let record = reuse::Record {
            inputs,
            nvshmem: fresh.nvshmem.as_deref().and_then(reuse::FileStamp::of),
            kernels: fresh.kernels.clone(),
            signatures: fresh.signatures.clone(),
        };
        (store, record)
    });
    Ok(ArchCode {
        target: TargetOutput { arch, ptx, cubin },
        kernels: fresh.kernels,
        signatures: fresh.signatures,
        nvshmem_version: fresh.nvshmem_version,
        assembling,
        keep,
    })
}

/// An architecture whose stored code `fetch` copied into `ptx` and `cubin`.
fn reused(
    arch: Arch,
    record: reuse::Record,
    ptx: PathBuf,
    cubin: Option<PathBuf>,
) -> Result<ArchCode> {
    if let Some(bc) = &record.nvshmem {
        println!("cargo:rerun-if-changed={}", bc.path.display());
    }
    let text = std::fs::read_to_string(&ptx).map_err(io(format!("reading {}", ptx.display())))?;
    Ok(ArchCode {
        target: TargetOutput { arch, ptx, cubin },
        kernels: record.kernels,
        signatures: record.signatures,
        nvshmem_version: link::nvshmem_version_in_ptx(&text),
        assembling: None,
        keep: None,
    })
}

/// A fresh link's results.
struct Fresh {
    ptx: PathBuf,
    kernels: Vec<String>,
    signatures: Vec<(String, String)>,
    nvshmem: Option<PathBuf>,
    nvshmem_version: Option<(u32, u32, u32)>,
}

/// Steps 2–5 in `work`: the crate's kernels, the link of every rlib's bitcode (with NVSHMEM's
/// where the kernels call it), optimisation and `llc`, into `ptx`.
fn link_fresh(
    tc: &Toolchain,
    nested: &Nested,
    work: &Path,
    arch: Arch,
    debug: bool,
    ptx: &Path,
) -> Result<Fresh> {
    let _ = std::fs::remove_dir_all(work);
    let mut objects = Vec::new();
    let mut own = Vec::new();
    for (i, rlib) in nested.rlibs.iter().enumerate() {
        let members = link::extract_rlib(tc, rlib, &work.join(format!("rlib{i}")))?;
        if *rlib == nested.own_rlib {
            own = members.clone();
        }
        objects.extend(members);
    }
    let link::Entries {
        kernels,
        bounds,
        signatures,
    } = link::kernels_in(tc, &own)?;
    let nvshmem = nvshmem_for(tc, &objects, work)?;
    let linked = link::link(
        tc,
        &link::LinkInputs {
            work,
            objects: &objects,
            kernels: &kernels,
            bounds: &bounds,
            nvshmem: nvshmem.as_deref(),
            arch,
            debug,
            ptx_out: ptx,
        },
    )?;
    Ok(Fresh {
        ptx: linked.ptx,
        kernels,
        signatures,
        nvshmem,
        nvshmem_version: linked.nvshmem_version,
    })
}

/// NVSHMEM's device bitcode if the linked crates call any `nvshmem*` function (a crate that
/// calls none never looks for NVSHMEM); an error naming the calls and where it looked if it
/// is needed and not found.
fn nvshmem_for(tc: &Toolchain, objects: &[PathBuf], work: &Path) -> Result<Option<PathBuf>> {
    let crates_bc = work.join("crates-probe.bc");
    link::run(
        Command::new(tc.llvm("llvm-link"))
            .args(objects)
            .arg("-o")
            .arg(&crates_bc),
    )?;
    let wants_nvshmem: Vec<String> = link::undefined(tc, &crates_bc)?
        .into_iter()
        .filter(|s| s.starts_with("nvshmem"))
        .collect();
    if wants_nvshmem.is_empty() {
        return Ok(None);
    }
    let found = locate::nvshmem().map_err(|(searched, fetch_error)| Error::NvshmemNotFound {
        symbols: wants_nvshmem
            .iter()
            .take(4)
            .cloned()
            .collect::<Vec<_>>()
            .join(", "),
        searched,
        version: fetch::NVSHMEM.version.into(),
        fetch_error,
    })?;
    println!("cargo:rerun-if-changed={}", found.bitcode.display());
    Ok(Some(found.bitcode))
}
