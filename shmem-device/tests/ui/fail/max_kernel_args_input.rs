const N: usize = rshmem_macros::max_kernel_args!(13);

fn main() {
    let _ = N;
}
