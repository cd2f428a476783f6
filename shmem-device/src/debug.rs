//! Formatted output from kernels through CUDA's `vprintf` (C `printf` formats), and
//! assertions that trap.
//!
//! ```ignore
//! rshmem_device::printf!("PE %d block %u: sum = %lld\n", shmem::my_pe(), thread::block_idx_x(), sum);
//! ```
//!
//! Arguments are packed as `vprintf` expects (each at its natural alignment, `f32` promoted to
//! `f64` as C varargs do). The format is not checked against the arguments: `%d` with an `i64`
//! prints garbage, as in CUDA C++. On the simulator the same formats are interpreted on the
//! host and printed with a `[PE k]` prefix, as the launcher prefixes GPU output.

/// A value `printf!` can pass.
pub trait PrintfArg: Copy {
    /// Its bytes and alignment in the argument buffer.
    #[doc(hidden)]
    fn pack(self) -> (u64, usize);
    /// Its value for the simulator's formatter.
    #[doc(hidden)]
    fn value(self) -> PrintfValue;
}

use crate::backend;
#[doc(hidden)]
pub use crate::contract::PrintfValue;

macro_rules! printf_args {
    ($($t:ty => $size:expr, |$v:ident| $bits:expr, $val:expr;)*) => {$(
        impl PrintfArg for $t {
            #[inline(always)]
            fn pack(self) -> (u64, usize) { let $v = self; ($bits, $size) }
            #[inline(always)]
            fn value(self) -> PrintfValue { let $v = self; $val }
        }
    )*};
}

printf_args! {
    i32 => 4, |v| v as u32 as u64, PrintfValue::Int(v as i64);
    u32 => 4, |v| v as u64, PrintfValue::Uint(v as u64);
    i64 => 8, |v| v as u64, PrintfValue::Int(v);
    u64 => 8, |v| v, PrintfValue::Uint(v);
    usize => 8, |v| v as u64, PrintfValue::Uint(v as u64);
    isize => 8, |v| v as u64, PrintfValue::Int(v as i64);
    f32 => 8, |v| (v as f64).to_bits(), PrintfValue::Float(v as f64);
    f64 => 8, |v| v.to_bits(), PrintfValue::Float(v);
    bool => 4, |v| v as u64, PrintfValue::Int(v as i64);
}

impl<T> PrintfArg for *const T {
    fn pack(self) -> (u64, usize) {
        (self as u64, 8)
    }
    fn value(self) -> PrintfValue {
        PrintfValue::Uint(self as u64)
    }
}

impl<T> PrintfArg for *mut T {
    fn pack(self) -> (u64, usize) {
        (self as u64, 8)
    }
    fn value(self) -> PrintfValue {
        PrintfValue::Uint(self as u64)
    }
}

/// The argument buffer of one `printf!`: at most 16 arguments of 8 bytes.
#[doc(hidden)]
#[repr(C, align(8))]
pub struct ArgBuffer {
    bytes: [u8; 128],
    len: usize,
    /// What the simulator formats from (nothing on a GPU, where `vprintf` reads `bytes`).
    values: backend::PrintfValues,
}

impl Default for ArgBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl ArgBuffer {
    /// An empty buffer.
    #[inline(always)]
    pub const fn new() -> Self {
        Self {
            bytes: [0; 128],
            len: 0,
            values: backend::PrintfValues::new(),
        }
    }

    /// Appends one argument at its natural alignment. Arguments past 16 are dropped.
    #[inline(always)]
    pub fn push<T: PrintfArg>(&mut self, arg: T) {
        let (bits, size) = arg.pack();
        let at = self.len.next_multiple_of(size);
        if at + size > self.bytes.len() {
            return;
        }
        self.bytes[at..at + size].copy_from_slice(&bits.to_le_bytes()[..size]);
        self.len = at + size;
        self.values.push(arg.value());
    }

    /// Prints `format` (NUL-terminated) with the arguments.
    #[inline(always)]
    pub fn print(&self, format: &'static str) {
        backend::printf(format, &self.bytes, &self.values)
    }

    /// Ends the kernel for a failed assertion whose format (condition, place, message) is
    /// `text`: on a GPU, `text` and the packed arguments go to the PE's fault record, which
    /// the host formats into the job's error; on the simulator the printed line is the reason.
    #[inline(always)]
    pub fn fail(&self, text: &'static str) -> ! {
        backend::assert_failed(text, &self.bytes[..self.len])
    }
}

/// `printf!("format", args...)`: C-format output from a kernel. See the module docs.
#[macro_export]
macro_rules! printf {
    // The format as `concat!` parts, for macros that build it (`device_assert!`).
    (@parts ($($part:tt)*) $(, $arg:expr)* $(,)?) => {{
        let mut __args = $crate::debug::ArgBuffer::new();
        $( __args.push($arg); )*
        __args.print(concat!($($part)*, "\0"));
    }};
    ($fmt:literal $(, $arg:expr)* $(,)?) => {
        $crate::printf!(@parts ($fmt) $(, $arg)*)
    };
}

/// `device_assert!(cond)` / `device_assert!(cond, "format", args...)`: if `cond` is false,
/// prints the condition, file and line (and the message), then traps the kernel. The same
/// text, formatted, is the reason in the job's error (on a GPU through the PE's fault record).
#[macro_export]
macro_rules! device_assert {
    (@text $cond:expr, ($($part:tt)*) $(, $arg:expr)*) => {
        if !$cond {
            let mut __args = $crate::debug::ArgBuffer::new();
            $( __args.push($arg); )*
            __args.print(concat!($($part)*, "\n\0"));
            __args.fail(concat!($($part)*));
        }
    };
    ($cond:expr $(,)?) => {
        $crate::device_assert!(@text $cond, ("assertion failed: ", stringify!($cond), " at ", file!(), ":", line!()))
    };
    ($cond:expr, $fmt:literal $(, $arg:expr)* $(,)?) => {
        $crate::device_assert!(@text $cond, ("assertion failed: ", stringify!($cond), " at ", file!(), ":", line!(), ": ", $fmt) $(, $arg)*)
    };
}
