//! Every kernel image as its build script made it — the examples' (`testing/examples-image/build.rs`), the
//! test fixtures' (`testing/api-tests/build.rs`) and the heavy ones (`testing/device-tests/build.rs`): PTX for each of its architectures
//! (the perftest's: sm_90 alone) with an `.entry` per kernel, nothing unresolved but what the
//! driver provides, unaligned block barriers, NVSHMEM's state and version linked in, cubins
//! from ptxas for every architecture. And `rshmem` itself, what applications depend on,
//! builds no kernel image at all (so no test fixture reaches an application).

use rshmem::KernelImage;

/// An image, the architectures it is built for, and kernels it must hold.
struct Expected {
    image: &'static KernelImage,
    sms: &'static [u32],
    kernels: &'static [&'static str],
}

fn images() -> [Expected; 5] {
    [
        Expected {
            image: &rshmem_examples_image::IMAGE,
            sms: &[80, 90],
            kernels: &[
                "hello_fill",
                "hello_read",
                "ring",
                "put_bw",
                "queue_pipeline",
            ],
        },
        Expected {
            image: &rshmem_api_tests::IMAGE,
            sms: &[80, 90],
            kernels: &[
                "checked_div",
                "view_out_of_bounds",
                "slow_fill",
                "queue_stress_u32",
                "queue_try_roundtrip",
            ],
        },
        Expected {
            image: &rshmem_device_tests::conformance::IMAGE,
            sms: &[80, 90],
            kernels: &["p_g_ring", "put_get", "add", "collective", "team_world"],
        },
        Expected {
            image: &rshmem_device_tests::teams::IMAGE,
            sms: &[80, 90],
            kernels: &["team_info", "team_alltoall", "team_reduce"],
        },
        Expected {
            image: &rshmem_device_tests::perftest::IMAGE,
            sms: &[90],
            kernels: &[
                "get_bw_rotating",
                "g_lat",
                "pingpong",
                "fcollect_lat",
                "reduce_lat",
            ],
        },
    ]
}

#[test]
fn every_kernel_has_an_entry_for_every_arch() {
    for Expected {
        image,
        sms,
        kernels,
    } in images()
    {
        let name = image.name;
        let mut built: Vec<u32> = image.targets.iter().map(|t| t.sm).collect();
        built.sort();
        assert_eq!(built, sms, "{name}");
        for expected in kernels {
            assert!(
                image.kernels.contains(expected),
                "{name}: {expected} missing from {:?}",
                image.kernels
            );
        }
        for t in image.targets {
            assert!(t.ptx.contains(&format!(".target sm_{}", t.sm)), "{name}");
            let mut entries: Vec<&str> = t
                .ptx
                .lines()
                .filter_map(|l| l.strip_prefix(".visible .entry "))
                .map(|l| l.trim_end_matches('('))
                .collect();
            entries.sort();
            let mut kernels = image.kernels.to_vec();
            kernels.sort();
            assert_eq!(entries, kernels, "{name}, sm_{}", t.sm);
        }
    }
}

#[test]
fn only_driver_functions_stay_external() {
    for Expected { image, .. } in images() {
        for t in image.targets {
            for line in t.ptx.lines().filter(|l| l.starts_with(".extern")) {
                // `.extern .shared` is the dynamic shared memory array (sized at launch), not
                // a function.
                assert!(
                    line.contains("vprintf")
                        || line.contains("__assertfail")
                        || line.starts_with(".extern .shared"),
                    "{}, sm_{}: unexpected external: {line}",
                    image.name,
                    t.sm
                );
            }
        }
    }
}

/// Block barriers are the non-aligned `barrier.sync`: LLVM may duplicate a barrier into the
/// arms of a branch, which an aligned `bar.sync` does not survive (see the builder's
/// `unaligned_cta_barriers`).
#[test]
fn block_barriers_are_unaligned() {
    for Expected { image, .. } in images() {
        for t in image.targets {
            let aligned = t
                .ptx
                .lines()
                .filter(|l| {
                    let l = l.trim_start();
                    let instr = if l.starts_with('@') {
                        l.split_once(' ').map_or(l, |x| x.1)
                    } else {
                        l
                    };
                    instr.starts_with("bar.sync") || instr.starts_with("barrier.sync.aligned")
                })
                .count();
            assert_eq!(
                aligned, 0,
                "{}, sm_{}: aligned block barriers left",
                image.name, t.sm
            );
            assert!(
                t.ptx.contains("barrier.sync"),
                "{}, sm_{}",
                image.name,
                t.sm
            );
        }
    }
}

/// The queue benchmark's kernels copy no element a byte at a time: LLVM's NVPTX backend
/// lowers an aggregate copy of more than 128 bytes to a loop of one-byte loads and stores
/// (`static-memcpy-expansion` in the PTX), which is what held 1 KiB elements to a fixed
/// ~0.5 ms per warp batch on H200s (docs/queue.md). The queue moves elements in words; this
/// keeps a by-value copy from creeping back into its hot paths.
#[test]
fn queue_bench_kernels_have_no_byte_copy_loops() {
    for t in rshmem_examples_image::IMAGE.targets {
        let mut kernel = None;
        let mut checked = 0;
        for line in t.ptx.lines() {
            if let Some(rest) = line.strip_prefix(".visible .entry ") {
                kernel = Some(rest.trim_end_matches('(').to_string());
                checked += rest.starts_with("queue_bench_") as usize;
            }
            if let Some(k) = kernel.as_deref().filter(|k| k.starts_with("queue_bench_")) {
                assert!(
                    !line.contains("static-memcpy-expansion"),
                    "sm_{}: {k} copies an aggregate a byte at a time: {line}",
                    t.sm
                );
            }
        }
        assert_eq!(
            checked, 12,
            "sm_{}: queue_bench_{{push,pop,put}}_e{{8,64,1024,14336}}",
            t.sm
        );
    }
}

#[test]
fn nvshmem_state_and_version_are_linked_in() {
    for Expected { image, .. } in images() {
        assert_eq!(image.nvshmem_version, Some((3, 4, 5)), "{}", image.name);
        for t in image.targets {
            assert!(
                t.ptx.contains("nvshmemi_device_state_d"),
                "{}, sm_{}",
                image.name,
                t.sm
            );
        }
    }
}

#[test]
fn ptxas_accepted_every_arch() {
    for Expected { image, .. } in images() {
        for t in image.targets {
            let cubin = t.cubin.unwrap_or_else(|| {
                panic!("{}: no cubin for sm_{}: was ptxas found?", image.name, t.sm)
            });
            assert!(
                cubin.starts_with(b"\x7fELF"),
                "{}, sm_{}: not an ELF cubin",
                image.name,
                t.sm
            );
        }
    }
}

#[test]
fn images_are_apart() {
    // Each image holds its own crate's kernels only: a kernel in two images would be built
    // (and paid for in ptxas) twice.
    let all = images();
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            let shared: Vec<_> = a
                .image
                .kernels
                .iter()
                .filter(|k| b.image.kernels.contains(k))
                .collect();
            assert!(
                shared.is_empty(),
                "{} and {} both hold {shared:?}",
                a.image.name,
                b.image.name
            );
        }
    }
}

/// The test fixtures are in their own image, not the examples' (which `rshmem`'s examples
/// build): the examples pay for no fixture either.
#[test]
fn fixtures_stay_out_of_the_examples_image() {
    let examples = rshmem_examples_image::IMAGE.kernels;
    for fixture in rshmem_api_tests::IMAGE.kernels {
        assert!(
            !examples.contains(fixture),
            "test fixture {fixture} is in the examples' image {examples:?}"
        );
    }
}

/// `cargo build --release` of `rshmem` runs no kernel build: neither `rshmem` nor anything it
/// depends on (normal and build dependencies, not dev-dependencies) depends on
/// `rshmem-builder`, so it makes no PTX, let alone PTX with a test fixture. (The README test
/// of `rshmem`, `tests/readme.rs`, also looks for PTX in a real application's build.)
#[test]
fn the_product_crate_builds_no_kernel_image() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .current_dir(root)
        .args(["tree", "--offline", "-p", "rshmem", "-e", "normal,build"])
        .args(["--prefix", "none", "--format", "{p}"])
        .output()
        .expect("cargo tree runs");
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let packages: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        packages.contains(&"rshmem-host") && packages.contains(&"rshmem-device"),
        "not rshmem's dependency tree:\n{tree}"
    );
    for builds_kernels in [
        "rshmem-builder",
        "rshmem-examples-image",
        "rshmem-api-tests",
        "rshmem-device-tests",
        "rshmem-example-kernels",
        "rshmem-test-kernels",
    ] {
        assert!(
            !packages.contains(&builds_kernels),
            "rshmem depends on {builds_kernels}, so every application would build kernels \
             it never launches:\n{tree}"
        );
    }
    let manifest = std::fs::read_to_string(format!("{root}/Cargo.toml")).unwrap();
    assert!(
        !std::path::Path::new(&format!("{root}/build.rs")).exists()
            && !manifest.contains("build = "),
        "rshmem has a build script again: kernels it builds reach every application"
    );
}
