//! `#[kernel]` on the host target (the simulator's expansion): every signature the macro
//! rejects is a case in `ui/fail/` with the error it must print (`.stderr`, compared
//! exactly), and the forms it accepts are cases in `ui/pass/`, which also run: they launch
//! their kernel through `Kernel::run_sim` and check what it wrote.
//!
//! After an intended change of a message, regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p rshmem-device --test kernel_macro` and review the diff.

#[test]
fn kernel_macro() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
