//! The shipped kernels as built by `build.rs`: PTX for sm_90 and sm_80 with an `.entry` per
//! kernel, nothing unresolved but what the driver provides, cubins from ptxas for both.

use rshmem::kernels::IMAGE;

#[test]
fn every_kernel_has_an_entry_for_every_arch() {
    let mut sms: Vec<u32> = IMAGE.targets.iter().map(|t| t.sm).collect();
    sms.sort();
    assert_eq!(sms, [80, 90]);
    for expected in ["hello_fill", "hello_read", "ring", "put_bw"] {
        assert!(
            IMAGE.kernels.contains(&expected),
            "{expected} missing from {:?}",
            IMAGE.kernels
        );
    }
    for t in IMAGE.targets {
        assert!(t.ptx.contains(&format!(".target sm_{}", t.sm)));
        let entries: Vec<&str> = t
            .ptx
            .lines()
            .filter_map(|l| l.strip_prefix(".visible .entry "))
            .map(|l| l.trim_end_matches('('))
            .collect();
        let mut entries = entries;
        entries.sort();
        let mut kernels = IMAGE.kernels.to_vec();
        kernels.sort();
        assert_eq!(entries, kernels, "sm_{}", t.sm);
    }
}

#[test]
fn only_driver_functions_stay_external() {
    for t in IMAGE.targets {
        for line in t.ptx.lines().filter(|l| l.starts_with(".extern")) {
            // `.extern .shared` is the dynamic shared memory array (sized at launch), not a
            // function.
            assert!(
                line.contains("vprintf")
                    || line.contains("__assertfail")
                    || line.starts_with(".extern .shared"),
                "sm_{}: unexpected external: {line}",
                t.sm
            );
        }
    }
}

/// Block barriers are the non-aligned `barrier.sync`: LLVM may duplicate a barrier into the
/// arms of a branch, which an aligned `bar.sync` does not survive (see the builder's
/// `unaligned_cta_barriers`).
#[test]
fn block_barriers_are_unaligned() {
    for t in IMAGE.targets {
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
        assert_eq!(aligned, 0, "sm_{}: aligned block barriers left", t.sm);
        assert!(t.ptx.contains("barrier.sync"), "sm_{}", t.sm);
    }
}

#[test]
fn nvshmem_state_and_version_are_linked_in() {
    assert_eq!(IMAGE.nvshmem_version, Some((3, 4, 5)));
    for t in IMAGE.targets {
        assert!(t.ptx.contains("nvshmemi_device_state_d"), "sm_{}", t.sm);
    }
}

#[test]
fn ptxas_accepted_every_arch() {
    for t in IMAGE.targets {
        let cubin = t
            .cubin
            .unwrap_or_else(|| panic!("no cubin for sm_{}: was ptxas found?", t.sm));
        assert!(
            cubin.starts_with(b"\x7fELF"),
            "sm_{}: not an ELF cubin",
            t.sm
        );
    }
}
