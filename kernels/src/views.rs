//! Kernels written with typed views (`SymSlice`) instead of raw pointers.

use rshmem_device::prelude::*;

/// Thread `i` copies local `data[i]` into the right neighbour's `out[i]` and counts itself in
/// the neighbour's `hits[0]`; block 0 also puts `data[..block]` into the neighbour's `copy`
/// with one block-scoped put. The host meets the other PEs after the kernel (a device-side
/// `barrier_all` here would be called by every block: one caller per PE is the rule, and the
/// simulator reports the second).
///
/// # Safety
///
/// Every PE launches it; the views are symmetric, `out` at least as long as `data` and
/// `copy` as long as a block (or `data`, if shorter); `hits` has an element.
#[kernel]
pub unsafe fn view_exchange(
    data: SymSlice<u32>,
    out: SymSlice<u32>,
    copy: SymSlice<u32>,
    hits: SymSlice<u64>,
) {
    let right = (shmem::my_pe() + 1) % shmem::n_pes();
    let i = thread::index_1d() as usize;
    if i < data.len() {
        out.put_one(right, i, data.read(i));
        hits.atomic(right, 0).fetch_add(1);
    }
    if thread::block_idx_x() == 0 {
        let n = (thread::block_dim_x() as usize).min(data.len());
        let local = core::slice::from_raw_parts(data.as_ptr(), n);
        copy.put::<Block>(right, 0, local);
    }
}

/// Reads `data[index]`: an index past the end panics (traps on GPUs).
///
/// # Safety
///
/// `data` is a live symmetric view (an `index` past its end is the point: it panics).
#[kernel]
pub unsafe fn view_out_of_bounds(data: SymSlice<u32>, index: u32) {
    if thread::index_1d() == 0 {
        data.write(index as usize, 1);
    }
}
