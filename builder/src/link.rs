//! The device link step (the recipe in `docs/toolchain.md`): every crate's bitcode →
//! `llvm-link`, then only what is needed of NVSHMEM's device bitcode → internalize everything
//! but the kernels and NVSHMEM's state symbols → O3 → `llc` to PTX → `ptxas` to cubin where
//! available.

use crate::arch::Arch;
use crate::error::{io, Error, Result};
use crate::toolchain::Toolchain;
use std::path::{Path, PathBuf};
use std::process::Command;

/// NVSHMEM globals that `nvshmemx_cumodule_init` looks up in the module: they must stay
/// visible.
const NVSHMEM_STATE: &[&str] = &[
    "nvshmemi_device_state_d",
    "nvshmemi_device_lib_version_d",
    "nvshmemi_ibgda_device_state_d",
    // rshmem-device's fault mailbox configuration, which the host writes at module load.
    "rshmem_fault_config",
];

/// Functions the driver or ptxas resolve, which may stay external in the PTX.
const DRIVER_PROVIDED: &[&str] = &["vprintf", "__assertfail", "malloc", "free"];

/// Runs a tool, turning failure into [`Error::Tool`] with its stderr.
pub(crate) fn run(cmd: &mut Command) -> Result<std::process::Output> {
    let name = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd.output().map_err(|e| Error::Tool {
        tool: name.clone(),
        message: e.to_string(),
    })?;
    if !out.status.success() {
        return Err(Error::Tool {
            tool: format!(
                "{name} {}",
                cmd.get_args()
                    .map(|a| a.to_string_lossy())
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out)
}

/// Extracts the bitcode members of an rlib (every member but `lib.rmeta`) into `into`.
pub(crate) fn extract_rlib(tc: &Toolchain, rlib: &Path, into: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(into).map_err(io(format!("creating {}", into.display())))?;
    run(Command::new(tc.llvm("llvm-ar"))
        .arg("x")
        .arg(rlib)
        .current_dir(into))?;
    let mut members: Vec<PathBuf> = std::fs::read_dir(into)
        .map_err(io(format!("listing {}", into.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .collect();
    members.sort();
    Ok(members)
}

/// A kernel's `#[kernel(launch_bounds(max_threads, min_blocks))]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LaunchBounds {
    pub kernel: String,
    pub max_threads: u32,
    /// 0: not stated.
    pub min_blocks: u32,
}

/// What the kernel crate's own bitcode declares: its entry points, their launch bounds and
/// their parameter lists.
#[derive(Debug, Default)]
pub(crate) struct Entries {
    pub kernels: Vec<String>,
    pub bounds: Vec<LaunchBounds>,
    /// `(kernel, "x: *mut f32, n: u32")`, sorted by kernel.
    pub signatures: Vec<(String, String)>,
}

/// The `ptx_kernel` functions defined in the given bitcode files, and the launch bounds
/// `#[kernel]` recorded for them.
pub(crate) fn kernels_in(tc: &Toolchain, objects: &[PathBuf]) -> Result<Entries> {
    let mut entries = Entries::default();
    for obj in objects {
        let out = run(Command::new(tc.llvm("llvm-dis")).arg(obj).args(["-o", "-"]))?;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            entries.kernels.extend(kernel_name_in_define(line));
            entries.bounds.extend(launch_bounds_in_global(line));
            entries
                .signatures
                .extend(marker_text(line, SIGNATURE_MARKER));
        }
    }
    entries.signatures.sort();
    entries.signatures.dedup();
    entries.kernels.sort();
    entries.kernels.dedup();
    entries.bounds.sort_by(|a, b| a.kernel.cmp(&b.kernel));
    entries.bounds.dedup();
    Ok(entries)
}

/// The prefix of the marker `#[kernel(launch_bounds(..))]` emits (rshmem-macros).
const BOUNDS_MARKER: &str = "@__rshmem_launch_bounds_";

/// The prefix of the marker every `#[kernel]` emits: its parameter list as text.
const SIGNATURE_MARKER: &str = "@__rshmem_signature_";

/// `@<marker>NAME = ... constant [N x i8] c"TEXT", align 1` → `(NAME, TEXT)`. The markers'
/// texts are printable ASCII without quotes or backslashes, which LLVM writes unescaped.
fn marker_text(line: &str, marker: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix(marker)?;
    let (kernel, tail) = rest.split_once(" = ")?;
    let text = tail.split_once("c\"")?.1.split_once('"')?.0;
    Some((kernel.to_string(), text.to_string()))
}

/// `@__rshmem_launch_bounds_NAME = ... constant [5 x i8] c"384 1", align 1` → bounds of NAME.
fn launch_bounds_in_global(line: &str) -> Option<LaunchBounds> {
    let (kernel, text) = marker_text(line, BOUNDS_MARKER)?;
    let mut nums = text.split(' ').map(str::parse::<u32>);
    let (max_threads, min_blocks) = (nums.next()?.ok()?, nums.next()?.ok()?);
    Some(LaunchBounds {
        kernel,
        max_threads,
        min_blocks,
    })
}

/// Writes each bounded kernel's `.maxntid` (and `.minnctapersm`) between its `.entry`
/// parameter list and its body, as nvcc does for `__launch_bounds__`: the register budget
/// ptxas allocates by, and what lets it honour `setmaxnreg`.
pub(crate) fn with_launch_bounds(ptx: &str, bounds: &[LaunchBounds]) -> String {
    if bounds.is_empty() {
        return ptx.to_string();
    }
    let mut out = String::with_capacity(ptx.len() + 64 * bounds.len());
    let mut pending: Option<&LaunchBounds> = None;
    for line in ptx.split_inclusive('\n') {
        let body = line.trim();
        if let Some(name) = body
            .split_once(".entry ")
            .map(|(_, n)| n.split(['(', ' ']).next().unwrap_or(""))
        {
            pending = bounds.iter().find(|b| b.kernel == name);
        }
        if body == "{" {
            if let Some(b) = pending.take() {
                out.push_str(&format!(".maxntid {}, 1, 1\n", b.max_threads));
                if b.min_blocks > 0 {
                    out.push_str(&format!(".minnctapersm {}\n", b.min_blocks));
                }
            }
        }
        out.push_str(line);
    }
    out
}

/// `define ptx_kernel void @name(...)` → `name`.
fn kernel_name_in_define(line: &str) -> Option<String> {
    let rest = line.strip_prefix("define ")?;
    let (head, tail) = rest.split_once('@')?;
    if !head.split_whitespace().any(|w| w == "ptx_kernel") {
        return None;
    }
    let name = match tail.strip_prefix('"') {
        Some(quoted) => quoted.split_once('"')?.0,
        None => tail.split_once('(')?.0,
    };
    Some(name.to_string())
}

/// Undefined function symbols of a bitcode module.
pub(crate) fn undefined(tc: &Toolchain, module: &Path) -> Result<Vec<String>> {
    let out = run(Command::new(tc.llvm("llvm-nm"))
        .arg("--undefined-only")
        .arg(module))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last().map(str::to_owned))
        .filter(|s| !s.starts_with("llvm."))
        .collect())
}

/// What the link step produces for one architecture.
#[derive(Debug)]
pub(crate) struct Linked {
    pub ptx: PathBuf,
    pub nvshmem_version: Option<(u32, u32, u32)>,
}

/// What one link step takes.
pub(crate) struct LinkInputs<'a> {
    /// Scratch folder.
    pub work: &'a Path,
    /// Every crate's bitcode.
    pub objects: &'a [PathBuf],
    /// The kernels, kept visible.
    pub kernels: &'a [String],
    /// Their launch bounds, written into the PTX.
    pub bounds: &'a [LaunchBounds],
    /// NVSHMEM's device bitcode, if the kernels call NVSHMEM.
    pub nvshmem: Option<&'a Path>,
    /// Target architecture.
    pub arch: Arch,
    /// Device debug info (O1 instead of O3).
    pub debug: bool,
    /// Where the PTX goes.
    pub ptx_out: &'a Path,
}

/// Links crate bitcode (and NVSHMEM if given) into PTX.
pub(crate) fn link(tc: &Toolchain, inputs: &LinkInputs<'_>) -> Result<Linked> {
    let LinkInputs {
        work,
        objects,
        kernels,
        bounds,
        nvshmem,
        arch,
        debug,
        ptx_out,
    } = *inputs;
    let all = work.join("crates.bc");
    // No --only-needed here: with it, symbols referenced by later files (core's panic
    // machinery) were dropped because of link order.
    run(Command::new(tc.llvm("llvm-link"))
        .args(objects)
        .arg("-o")
        .arg(&all))?;
    let linked = match nvshmem {
        Some(bc) => {
            let out = work.join("with-nvshmem.bc");
            // NVSHMEM's bitcode predates LLVM's `p6` address-space entry in the nvptx data
            // layout; the layouts agree on everything both use, so the warning is noise.
            run(Command::new(tc.llvm("llvm-link"))
                .arg(&all)
                .arg("--only-needed")
                .arg(bc)
                .arg("--suppress-warnings")
                .arg("-o")
                .arg(&out))?;
            out
        }
        None => all,
    };
    let keep: Vec<&str> = kernels
        .iter()
        .map(String::as_str)
        .chain(NVSHMEM_STATE.iter().copied())
        .collect();
    let optimized = work.join("optimized.bc");
    let level = if debug { "O1" } else { "O3" };
    run(Command::new(tc.llvm("opt"))
        .arg(format!("--internalize-public-api-list={}", keep.join(",")))
        .arg(format!("-passes=internalize,default<{level}>"))
        .arg(&linked)
        .arg("-o")
        .arg(&optimized))?;
    let unresolved: Vec<String> = undefined(tc, &optimized)?
        .into_iter()
        .filter(|s| !DRIVER_PROVIDED.contains(&s.as_str()))
        .collect();
    if !unresolved.is_empty() {
        return Err(Error::Unresolved {
            krate: work.display().to_string(),
            symbols: unresolved.join(", "),
        });
    }
    // NVSHMEM uses `.mmio` loads, which need PTX ISA 8.2 or later; 8.6 is what CUDA 12.6+
    // drivers accept and what ptxas 13 defaults to for sm_90.
    run(Command::new(tc.llvm("llc"))
        .arg(format!("-mcpu={arch}"))
        .arg("-mattr=+ptx86")
        .arg(&optimized)
        .arg("-o")
        .arg(ptx_out))?;
    let ptx =
        std::fs::read_to_string(ptx_out).map_err(io(format!("reading {}", ptx_out.display())))?;
    let ptx = with_launch_bounds(&unaligned_cta_barriers(&ptx), bounds);
    std::fs::write(ptx_out, &ptx).map_err(io(format!("writing {}", ptx_out.display())))?;
    Ok(Linked {
        ptx: ptx_out.to_path_buf(),
        nvshmem_version: nvshmem_version_in_ptx(&ptx),
    })
}

/// Turns every `bar.sync` (which PTX defines as `barrier.sync.aligned`) into `barrier.sync`.
///
/// An aligned barrier requires every thread of a warp to execute the *same* barrier
/// instruction. Rust's optimiser does not keep that (rustc marks no Rust function
/// `convergent`): branch threading duplicated the barrier of `if len > 0 { iput } quiet(); sync_threads(); if len
/// > 0 { iget }` into both arms, so lanes of one warp waited at two different `bar.sync`s —
/// a hang on an H200 (the conformance test `iput_iget`, `team_world_barriers`, and the
/// queue's block-scoped batches; cuda-gdb showed the lanes split between two barrier PCs).
/// The non-aligned form (sm_70+) counts arrivals per barrier, whichever instruction each
/// thread executes, so it is correct wherever the aligned one was, for ours and NVSHMEM's
/// block-scoped barriers alike. `bar.warp.sync` is already non-aligned on sm_70+.
pub(crate) fn unaligned_cta_barriers(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len() + 1024);
    for line in ptx.split_inclusive('\n') {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        // An optional guard predicate (`@%p1 bar.sync 0;`), then the instruction.
        let (guard, instr) = match body.split_once(' ') {
            Some((g, rest)) if g.starts_with('@') => (&body[..g.len() + 1], rest.trim_start()),
            _ => ("", body),
        };
        match instr.strip_prefix("bar.sync") {
            Some(rest) if rest.starts_with([' ', '\t']) => {
                out.push_str(indent);
                out.push_str(guard);
                out.push_str("barrier.sync");
                out.push_str(rest);
            }
            _ => out.push_str(line),
        }
    }
    out
}

/// Reads `nvshmemi_device_lib_version_d = {major, 0, 0, 0, minor, 0, 0, 0, patch, ...}` (three
/// little-endian `int`s) from the PTX: the version `nvshmemx_cumodule_init` checks.
pub(crate) fn nvshmem_version_in_ptx(ptx: &str) -> Option<(u32, u32, u32)> {
    let line = ptx
        .lines()
        .find(|l| l.contains("nvshmemi_device_lib_version_d") && l.contains('='))?;
    let bytes: Vec<u32> = line
        .split_once('{')?
        .1
        .split_once('}')?
        .0
        .split(',')
        .map(|b| b.trim().parse().ok())
        .collect::<Option<_>>()?;
    if bytes.len() < 9 {
        return None;
    }
    let mut b = [0u32; 12];
    b.iter_mut().zip(&bytes).for_each(|(d, s)| *d = *s);
    let word = |i: usize| b[i * 4] | b[i * 4 + 1] << 8 | b[i * 4 + 2] << 16 | b[i * 4 + 3] << 24;
    Some((word(0), word(1), word(2)))
}

/// Assembles PTX into a cubin with ptxas; fails with ptxas's own message.
pub(crate) fn ptxas(ptxas: &Path, ptx: &Path, arch: Arch, cubin: &Path) -> Result<()> {
    let out = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg(ptx)
        .arg("-o")
        .arg(cubin)
        .output()
        .map_err(io(format!("running {}", ptxas.display())))?;
    if !out.status.success() {
        return Err(Error::Ptxas {
            ptxas: ptxas.to_path_buf(),
            ptx: ptx.to_path_buf(),
            arch: arch.name(),
            message: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
            .trim()
            .to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_bounds_reach_their_entries_only() {
        let ir =
            "@__rshmem_launch_bounds_gemm = unnamed_addr constant [5 x i8] c\"384 1\", align 1";
        let b = launch_bounds_in_global(ir).unwrap();
        assert_eq!(
            (b.kernel.as_str(), b.max_threads, b.min_blocks),
            ("gemm", 384, 1)
        );
        assert!(launch_bounds_in_global("@other = constant [5 x i8] c\"384 1\"").is_none());
        let sig = "@__rshmem_signature_scale = local_unnamed_addr constant [25 x i8] \
                   c\"x: *mut f32, n: u32, k: f32\", align 1";
        assert_eq!(
            marker_text(sig, SIGNATURE_MARKER),
            Some(("scale".into(), "x: *mut f32, n: u32, k: f32".into()))
        );
        let ptx = ".visible .entry gemm(\n\t.param .u64 gemm_param_0\n)\n{\n\tret;\n}\n\
                   .visible .entry other(\n)\n{\n\tret;\n}\n";
        let out = with_launch_bounds(ptx, &[b]);
        assert_eq!(
            out,
            ".visible .entry gemm(\n\t.param .u64 gemm_param_0\n)\n.maxntid 384, 1, 1\n\
             .minnctapersm 1\n{\n\tret;\n}\n.visible .entry other(\n)\n{\n\tret;\n}\n"
        );
    }

    #[test]
    fn cta_barriers_become_unaligned() {
        let ptx = "\tbar.sync \t0;\n\t@%p3 bar.sync 1, %r2;\n\tbar.warp.sync \t-1;\n\
                   // bar.sync in a comment\n\tbarrier.sync 0;\n";
        assert_eq!(
            unaligned_cta_barriers(ptx),
            "\tbarrier.sync \t0;\n\t@%p3 barrier.sync 1, %r2;\n\tbar.warp.sync \t-1;\n\
             // bar.sync in a comment\n\tbarrier.sync 0;\n"
        );
    }

    #[test]
    fn finds_kernel_defines() {
        assert_eq!(
            kernel_name_in_define("define ptx_kernel void @ring(ptr noundef %0) unnamed_addr #1 {"),
            Some("ring".into())
        );
        assert_eq!(
            kernel_name_in_define("define dso_local ptx_kernel void @\"we ird\"() {"),
            Some("we ird".into())
        );
        assert_eq!(kernel_name_in_define("define void @helper(i32 %0) {"), None);
        assert_eq!(kernel_name_in_define("declare ptx_kernel void @x()"), None);
    }

    #[test]
    fn reads_the_nvshmem_version() {
        let ptx = ".visible .const .align 4 .b8 nvshmemi_device_lib_version_d[12] = {3, 0, 0, 0, 4, 0, 0, 0, 5};";
        assert_eq!(nvshmem_version_in_ptx(ptx), Some((3, 4, 5)));
        let ptx = "nvshmemi_device_lib_version_d[12] = {3, 0, 0, 0, 12, 0, 0, 0, 1, 1, 0, 0};";
        assert_eq!(nvshmem_version_in_ptx(ptx), Some((3, 12, 257)));
        assert_eq!(nvshmem_version_in_ptx(".visible .entry ring("), None);
    }
}
