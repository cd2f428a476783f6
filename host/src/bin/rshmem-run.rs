//! `rshmem-run -n N program args...`: starts N PEs of a program. To be implemented.
fn main() {
    eprintln!("rshmem-run: not implemented yet");
    std::process::exit(2);
}
