//! Every example runs on the CPU simulator and prints what it should. `cargo test` builds the
//! examples next to this test binary (`target/<profile>/examples/`).

use std::path::PathBuf;
use std::process::Command;

fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let path = profile_dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} not built: run through `cargo test`",
        path.display()
    );
    path
}

fn run_sim(name: &str, npes: usize, args: &[&str]) -> String {
    let out = Command::new(example(name))
        .args(args)
        .env("RSHMEM_BACKEND", "sim")
        .env("RSHMEM_NPES", npes.to_string())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{name} on {npes} PEs failed:\n{text}");
    text
}

#[test]
fn hello_symmetric_reads_the_neighbours_value() {
    let out = run_sim("hello_symmetric", 2, &[]);
    assert!(out.contains("PE 0: read 1000 from PE 1"), "{out}");
    assert!(out.contains("PE 1: read 0 from PE 0"), "{out}");
    let out = run_sim("hello_symmetric", 4, &[]);
    assert!(out.contains("PE 3: read 0 from PE 0"), "{out}");
    assert!(out.contains("PE 2: read 3000 from PE 3"), "{out}");
}

#[test]
fn ring_passes_ids_to_the_right() {
    let out = run_sim("ring", 3, &[]);
    for (pe, left) in [(0, 2), (1, 0), (2, 1)] {
        assert!(
            out.contains(&format!("PE {pe}: received {left} from PE {left}")),
            "{out}"
        );
    }
}

#[test]
fn put_bandwidth_checks_its_data() {
    let out = run_sim(
        "put_bandwidth",
        2,
        &["--ctas", "2", "--threads", "32", "--sizes", "1000,4099"],
    );
    assert!(
        out.contains("BW,2,1000,") && out.contains("BW,2,4099,"),
        "{out}"
    );
    assert!(out.contains("data was checked"), "{out}");
}

#[test]
fn put_bandwidth_rejects_bad_arguments() {
    let out = Command::new(example("put_bandwidth"))
        .args(["--frobnicate"])
        .env("RSHMEM_BACKEND", "sim")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown argument \"--frobnicate\""));
}
