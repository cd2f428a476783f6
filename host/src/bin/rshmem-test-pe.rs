//! TEST HELPER for `host/tests/launcher.rs`, not a user tool: a PE whose behaviour a test
//! scripts through the environment, so the launcher is tested with real processes.
//!
//! * `RSHMEM_TEST_PE<k>` (else `RSHMEM_TEST_PE`, else `hello`): what PE k does, as steps
//!   joined by `+`, run in order:
//!   `hello` (a line on stdout and one on stderr), `args`, `pid`, `publish` (the bytes of
//!   `RSHMEM_TEST_UID`, hex, or `ready`), `fetch` (and compare with `RSHMEM_TEST_UID`),
//!   `ignore-term`, `grandchild` (start a sleeping child of its own), `delay:<ms>`, `sleep`
//!   (forever), `panic`, `exit:<code>`, `abort`, `error:<text>` (report `text` as this PE's
//!   own error to the launcher, then exit 1).
//! * `RSHMEM_TEST_SELF_LAUNCH=N` in a plainly started process: be the launcher of N copies
//!   of this program (`launch_self`).
//! * `RSHMEM_TEST_GRANDCHILD=1`: sleep forever (what `grandchild` starts).

use rshmem_host::launch::{self, PeInfo, PeReport, Role};
use std::process::{self, Command};
use std::thread;
use std::time::Duration;

fn main() {
    if std::env::var_os("RSHMEM_TEST_GRANDCHILD").is_some() {
        sleep_forever();
    }
    match launch::role() {
        Ok(Role::Pe(info)) => run_script(&info),
        Ok(Role::Launcher) => {
            let npes = std::env::var("RSHMEM_TEST_SELF_LAUNCH")
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| fail(2, "started plainly without RSHMEM_TEST_SELF_LAUNCH=N"));
            if let Err(e) = launch::launch_self(npes) {
                fail(1, &format!("launcher: {e}"));
            }
        }
        Ok(Role::External(external)) => fail(2, &format!("started by {external}, not by rshmem")),
        Err(e) => fail(2, &e.to_string()),
    }
}

fn run_script(info: &PeInfo) {
    let pe = info.pe;
    let script = std::env::var(format!("RSHMEM_TEST_PE{pe}"))
        .or_else(|_| std::env::var("RSHMEM_TEST_PE"))
        .unwrap_or_else(|_| "hello".into());
    for step in script.split('+') {
        let (name, arg) = step.split_once(':').unwrap_or((step, ""));
        match name {
            "hello" => {
                println!(
                    "hello from PE {pe} of {} (local rank {})",
                    info.npes, info.local_rank
                );
                eprintln!("note from PE {pe}");
            }
            "args" => println!("args {:?}", std::env::args().skip(1).collect::<Vec<_>>()),
            "pid" => println!("pid {}", process::id()),
            "publish" => {
                let uid = expected_uid().unwrap_or_else(|| b"ready".to_vec());
                info.publish_uid(&uid)
                    .unwrap_or_else(|e| fail(1, &format!("error: {e}")));
            }
            "fetch" => {
                let uid = info
                    .fetch_uid()
                    .unwrap_or_else(|e| fail(1, &format!("error: {e}")));
                if expected_uid().is_some_and(|expected| expected != uid) {
                    fail(1, &format!("uid mismatch: got {}", hex(&uid)));
                }
                println!("uid ok {}", hex(&uid));
            }
            "ignore-term" => {
                // SAFETY: setting SIGTERM's disposition to SIG_IGN installs no handler code.
                unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
            }
            "grandchild" => {
                let exe = std::env::current_exe().expect("own executable");
                // Never waited for: it must outlive this PE, to show the launcher ends it.
                #[expect(clippy::zombie_processes)]
                let child = Command::new(exe)
                    .env("RSHMEM_TEST_GRANDCHILD", "1")
                    .spawn()
                    .unwrap_or_else(|e| fail(1, &format!("cannot start a grandchild: {e}")));
                println!("grandchild {}", child.id());
            }
            "delay" => thread::sleep(Duration::from_millis(arg.parse().unwrap_or(0))),
            "sleep" => sleep_forever(),
            "panic" => panic!("PE {pe} was told to panic"),
            "exit" => process::exit(arg.parse().unwrap_or(1)),
            "abort" => process::abort(),
            "error" => {
                info.report(&PeReport::Failed(arg.to_string()))
                    .unwrap_or_else(|e| fail(2, &format!("cannot report: {e}")));
                fail(1, &format!("error: {arg}"));
            }
            _ => fail(2, &format!("unknown step {step:?} in {script:?}")),
        }
    }
}

fn expected_uid() -> Option<Vec<u8>> {
    let text = std::env::var("RSHMEM_TEST_UID").ok()?;
    let bytes = (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
        })
        .collect::<Option<Vec<u8>>>();
    Some(bytes.unwrap_or_else(|| fail(2, "RSHMEM_TEST_UID is not hex")))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sleep_forever() -> ! {
    loop {
        thread::sleep(Duration::from_secs(3600));
    }
}

fn fail(code: i32, message: &str) -> ! {
    eprintln!("{message}");
    process::exit(code)
}
