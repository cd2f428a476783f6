//! The default `#[panic_handler]` for device builds: a panic (index out of bounds, an
//! `unwrap` on `None`, an arithmetic overflow in debug builds) leaves its place in the PE's
//! fault record and traps the kernel, which the host sees as a launch failure on
//! synchronisation, naming the place. Disable the `panic-handler` feature to provide your own.

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    match info.location() {
        Some(at) => crate::backend::panicked(at.file(), at.line()),
        None => crate::backend::trap(),
    }
}
