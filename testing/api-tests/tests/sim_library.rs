//! Kernels a program was not compiled with, launched from their image with arguments made at
//! run time (`Module::launch_raw_on`, what the Python bindings do): on GPUs from the PTX, on
//! the simulator from the image's simulator library (`SimLibrary`, built by
//! `Builder::sim_library`), whose copy of `rshmem-device` shares the simulator's state with
//! this program's. `testing/kernels/user` is no dependency of this test.

#[macro_use]
#[path = "../../../tests/common/mod.rs"]
mod common;

use common::Outcome;
use rshmem::{Backend, LaunchConfig, Module, RawKernelArgs, Shmem, SimEntry, SimLibrary};
use rshmem_examples_image::{USER_IMAGE, USER_MANIFEST, USER_SIM_LIBRARY};

per_backend! {
    axpy_reads_thread_coordinates => [1];
    shift_puts_to_the_next_pe_and_meets_in_a_barrier => [2, 3];
    block_sum_uses_shared_memory_and_block_barriers => [1];
    a_panic_in_the_library_fails_the_launch_naming_it => [2];
}

/// The kernel's host code: from the library on the simulator (checked against the image's
/// parameter list), none on GPUs.
fn entry(shmem: &Shmem, name: &str) -> rshmem::Result<Option<SimEntry>> {
    if shmem.backend() != Backend::Sim {
        return Ok(None);
    }
    let lib = SimLibrary::open(USER_SIM_LIBRARY)?;
    lib.kernel(name, USER_IMAGE.signature(name)).map(Some)
}

/// Launches `name` of the user image on the PE's stream.
fn launch(
    shmem: &Shmem,
    module: &Module<'_>,
    name: &str,
    config: LaunchConfig,
    args: &RawKernelArgs,
) -> rshmem::Result<()> {
    let sim = entry(shmem, name)?;
    // SAFETY: each caller passes the kernel's parameters in order, of their types, over
    // buffers that outlive the launch (each synchronises before freeing them).
    unsafe { module.launch_raw_on(&shmem.stream(), name, config, args, sim) }
}

fn axpy_reads_thread_coordinates(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&USER_IMAGE)?;
    let n = 1000u32;
    let seed = common::agreed_seed(shmem)?;
    let x: Vec<f32> = common::random_u32(n as usize, seed)
        .iter()
        .map(|v| (v % 1000) as f32)
        .collect();
    let y0: Vec<f32> = common::random_u32(n as usize, seed ^ 7)
        .iter()
        .map(|v| (v % 1000) as f32)
        .collect();
    let xs = shmem.alloc_from(&x)?;
    let mut ys = shmem.alloc_from(&y0)?;
    let mut args = RawKernelArgs::new();
    args.push(xs.as_ptr())?;
    args.push(ys.as_mut_ptr())?;
    args.push(n)?;
    args.push(3.0f32)?;
    launch(
        shmem,
        &module,
        "axpy",
        LaunchConfig::for_num_elems(n, 128),
        &args,
    )?;
    shmem.synchronize()?;
    let want: Vec<f32> = x.iter().zip(&y0).map(|(x, y)| 3.0 * x + y).collect();
    assert_eq!(ys.to_vec()?, want);
    Ok(())
}

fn shift_puts_to_the_next_pe_and_meets_in_a_barrier(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&USER_IMAGE)?;
    let (me, npes) = (shmem.my_pe() as i64, shmem.n_pes() as i64);
    let n = 37u32;
    let x: Vec<i64> = (0..n as i64).map(|i| me * 1000 + i).collect();
    let xs = shmem.alloc_from(&x)?;
    let mut ys = shmem.alloc_from(&vec![-1i64; n as usize])?;
    let mut args = RawKernelArgs::new();
    args.push(xs.as_ptr())?;
    args.push(ys.as_mut_ptr())?;
    args.push(n)?;
    shmem.barrier_all()?;
    launch(
        shmem,
        &module,
        "shift",
        LaunchConfig::new(1, 32).cooperative(),
        &args,
    )?;
    shmem.synchronize()?;
    let prev = (me + npes - 1) % npes;
    let want: Vec<i64> = (0..n as i64).map(|i| prev * 1000 + i).collect();
    assert_eq!(ys.to_vec()?, want, "PE {me}");
    shmem.barrier_all()?;
    Ok(())
}

fn block_sum_uses_shared_memory_and_block_barriers(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&USER_IMAGE)?;
    let threads = 96u32;
    let x: Vec<i32> = common::random_u32(threads as usize, common::agreed_seed(shmem)?)
        .iter()
        .map(|v| (v % 2001) as i32 - 1000)
        .collect();
    let xs = shmem.alloc_from(&x)?;
    let mut out = shmem.alloc_from(&[i32::MIN])?;
    let mut args = RawKernelArgs::new();
    args.push(xs.as_ptr())?;
    args.push(out.as_mut_ptr())?;
    let config = LaunchConfig::new(1, threads).shared_mem(4 * threads);
    launch(shmem, &module, "block_sum", config, &args)?;
    shmem.synchronize()?;
    assert_eq!(out.to_vec()?, [x.iter().sum::<i32>()]);
    Ok(())
}

fn a_panic_in_the_library_fails_the_launch_naming_it(shmem: &Shmem) -> Outcome {
    let module = shmem.load(&USER_IMAGE)?;
    let mut args = RawKernelArgs::new();
    args.push(shmem.my_pe() as i32)?;
    shmem.barrier_all()?;
    let launched = launch(shmem, &module, "fail_on", LaunchConfig::new(2, 32), &args);
    let msg = launched
        .and_then(|()| shmem.synchronize())
        .expect_err("the kernel panics")
        .to_string();
    let me = shmem.my_pe();
    assert!(
        msg.contains("fail_on") && msg.contains(&format!("PE {me}")),
        "{msg}"
    );
    if shmem.backend() == Backend::Sim {
        // The panic's own text came back through the library's report.
        let want = format!("panicked: fail_on: PE {me} fails on purpose");
        assert!(
            msg.contains(&want) && msg.contains("block (0, 0, 0), thread (0, 0, 0)"),
            "{msg}"
        );
    }
    Ok(())
}

/// The library's refusals, before any launch: a kernel it lacks, a signature the image does
/// not match, a file that is no library.
#[test]
fn the_library_refuses_what_does_not_match() {
    let lib = SimLibrary::open(USER_SIM_LIBRARY).unwrap();
    assert!(lib.kernel("axpy", USER_IMAGE.signature("axpy")).is_ok());
    let err = lib.kernel("nope", None).unwrap_err().to_string();
    assert!(err.contains("no kernel `nope`"), "{err}");
    let err = lib
        .kernel("axpy", Some("x: *const f64, y: *mut f64, n: u32, a: f64"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("axpy(x: *const f32") && err.contains("rebuild"),
        "{err}"
    );
    let err = SimLibrary::open(USER_MANIFEST).unwrap_err().to_string();
    assert!(err.contains("cannot load the simulator library"), "{err}");
}

/// A library whose copy of `rshmem-device` is not this program's (another source or rustc:
/// here the same file with one character of its fingerprint changed) is refused before any
/// of it runs, naming both fingerprints.
#[test]
fn a_library_of_another_build_is_refused() {
    let mut bytes = std::fs::read(USER_SIM_LIBRARY).unwrap();
    let abi = rshmem::device::sim::SIM_ABI.as_bytes();
    let at = bytes
        .windows(abi.len())
        .position(|w| w == abi)
        .expect("the library holds its fingerprint");
    // "rshmem-device <version> source <hash>, rustc ...": change the hash's last digit.
    let digit = at + abi.iter().position(|&b| b == b',').unwrap() - 1;
    bytes[digit] = if bytes[digit] == b'0' { b'1' } else { b'0' };
    let dir = std::env::temp_dir().join(format!("rshmem-sim-library-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("libother.sim.so");
    std::fs::write(&copy, &bytes).unwrap();
    let lib = SimLibrary::open(&copy).unwrap();
    let err = lib.kernel("axpy", None).unwrap_err().to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        err.contains("built from another rshmem-device or rustc")
            && err.contains(rshmem::device::sim::SIM_ABI),
        "{err}"
    );
}
