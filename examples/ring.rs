//! Each PE puts its id into its right neighbour's symmetric `dst` from inside a kernel, the
//! kernel ends with a device-side barrier, and every PE checks it holds its left neighbour's
//! id.
//!
//! ```text
//! cargo run --release --example ring
//! RSHMEM_BACKEND=sim RSHMEM_NPES=3 cargo run --release --example ring
//! ```

use anyhow::{ensure, Result};
use rshmem::{LaunchConfig, Shmem};
use rshmem_examples_image::{ring, IMAGE};

fn main() -> Result<()> {
    rshmem::run(|shmem: &Shmem| -> Result<()> {
        let (me, n) = (shmem.my_pe(), shmem.n_pes());
        let module = shmem.load(&IMAGE)?;
        let mut dst = shmem.alloc_from(&[-1i32])?;
        shmem.barrier_all()?;
        // SAFETY: `ring` writes element 0 of `dst` (on the right neighbour); every PE
        // launches the (collective) kernel.
        unsafe { module.launch::<ring::ring>(LaunchConfig::new(1, 1).cooperative(), (&mut dst,))? };
        let got = dst.to_vec()?[0];
        let left = (me + n - 1) % n;
        println!("PE {me}: received {got} from PE {left}");
        ensure!(got == left as i32, "PE {me} holds {got}, expected {left}");
        shmem.barrier_all()?;
        Ok(())
    })?;
    Ok(())
}
