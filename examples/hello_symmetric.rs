//! The seed's first program: every PE fills its copy of a symmetric buffer with
//! `my_pe * 1000 + i`, meets the others in a barrier, then reads its right neighbour's
//! `sym_buf[0]` with a remote get and checks it.
//!
//! ```text
//! cargo run --release --example hello_symmetric                      # GPUs if present, else the simulator
//! RSHMEM_BACKEND=sim RSHMEM_NPES=4 cargo run --release --example hello_symmetric
//! ```

use anyhow::{ensure, Result};
use rshmem::{LaunchConfig, Shmem};
use rshmem_examples_image::{hello, IMAGE};

const N: usize = 1024;

fn main() -> Result<()> {
    rshmem::run(|shmem: &Shmem| -> Result<()> {
        let (me, n) = (shmem.my_pe(), shmem.n_pes());
        println!("PE {me} of {n} on the {:?} backend", shmem.backend());
        let module = shmem.load(&IMAGE)?;

        // Symmetric: the same 1024 ints exist on every PE.
        let mut sym_buf = shmem.alloc_zeroed::<i32>(N)?;
        let mut got = shmem.alloc_zeroed::<i32>(1)?;

        // SAFETY: `hello_fill` writes its first N elements, all of `sym_buf`'s.
        unsafe {
            module.launch::<hello::hello_fill>(
                LaunchConfig::for_num_elems(N as u32, 256),
                (&mut sym_buf, N as u32),
            )?
        };
        // Without this barrier a PE could read its neighbour's buffer before it is filled.
        shmem.barrier_all()?;

        let from = (me + 1) % n;
        // SAFETY: `hello_read` reads element 0 of `sym_buf` on PE `from` and writes one
        // element of `got`.
        unsafe {
            module.launch::<hello::hello_read>(
                LaunchConfig::new(1, 1),
                (&sym_buf, 0, from as i32, &mut got),
            )?
        };
        let value = got.to_vec()?[0];
        println!("PE {me}: read {value} from PE {from} (its sym_buf[0])");
        ensure!(
            value == from as i32 * 1000,
            "PE {me} read {value} from PE {from}, expected {}",
            from * 1000
        );

        let mine = sym_buf.to_vec()?;
        let expected: Vec<i32> = (0..N as i32).map(|i| me as i32 * 1000 + i).collect();
        ensure!(
            mine == expected,
            "PE {me}: its own buffer is not my_pe * 1000 + i"
        );
        shmem.barrier_all()?;
        Ok(())
    })?;
    Ok(())
}
