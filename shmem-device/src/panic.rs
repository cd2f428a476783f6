//! The default `#[panic_handler]` for device builds: a panic (index out of bounds, an
//! `unwrap` on `None`, an arithmetic overflow in debug builds) traps the kernel, which the
//! host sees as a launch failure on synchronisation. Disable the `panic-handler` feature to
//! provide your own.

#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    // SAFETY: `trap` has no preconditions; it aborts the kernel.
    unsafe { core::arch::nvptx::trap() }
}
