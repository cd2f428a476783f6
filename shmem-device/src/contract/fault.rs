//! The fault mailbox, as both sides lay it out: a [`FaultRecord`] in host-mapped memory that
//! the first faulting GPU thread of a PE fills before it traps, and the per-image
//! [`FaultConfig`] global (`rshmem_fault_config`) through which the host tells each loaded
//! image where that record is and how long a checked wait may last.
//!
//! A trap carries no text: without the mailbox the host learns only that the kernel trapped.
//! With it, the job's error says what the simulator says: the failing block and thread, and
//! the assertion's text or the checked call that failed.

/// The symbol of the [`FaultConfig`] global in every image built with this crate.
pub const CONFIG_SYMBOL: &str = "rshmem_fault_config";

/// [`FaultConfig::layout`] of this crate's layout; the host refuses any other (an image built
/// by another `rshmem-device`).
pub const LAYOUT: u32 = 1;

/// [`FaultRecord::state`]: nobody has faulted.
pub const EMPTY: u32 = 0;
/// [`FaultRecord::state`]: a thread claimed the record and is filling it.
pub const CLAIMED: u32 = 1;
/// [`FaultRecord::state`]: the record is complete.
pub const COMPLETE: u32 = 2;

/// Bytes of [`FaultRecord::call`].
pub const CALL_BYTES: usize = 64;
/// Bytes of [`FaultRecord::text`].
pub const TEXT_BYTES: usize = 384;
/// Bytes of [`FaultRecord::args`] (a `printf!` argument buffer).
pub const ARGS_BYTES: usize = 128;

/// What went wrong, in [`FaultRecord::kind`].
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// `device_assert!` failed: `text` is its format (condition, place, message), `args` its
    /// packed arguments.
    Assert = 1,
    /// A checked wait passed its bound: `call` names the wait, `value` the nanoseconds waited,
    /// `extra` the bound.
    Wait = 2,
    /// A checked SHMEM call got a PE number outside `0..n_pes()`: `value` the PE, `extra` the
    /// PE count.
    BadPe = 3,
    /// A checked SHMEM call got an address outside the symmetric heap: `value` the address,
    /// `extra` the byte count.
    BadAddress = 4,
    /// A Rust panic (index out of bounds, `unwrap` on `None`, overflow): `text` the file,
    /// `line` the line.
    Panic = 5,
}

impl FaultKind {
    /// The kind stored as `raw`.
    pub fn from_raw(raw: u32) -> Option<FaultKind> {
        Some(match raw {
            1 => FaultKind::Assert,
            2 => FaultKind::Wait,
            3 => FaultKind::BadPe,
            4 => FaultKind::BadAddress,
            5 => FaultKind::Panic,
            _ => return None,
        })
    }
}

/// One PE's fault record. Host-mapped (pinned, device-visible) memory; written once, by the
/// thread that claimed it (through [`FaultConfig::claimed`] of its image), which sets `state`
/// to [`CLAIMED`] first and [`COMPLETE`] last, with system-scope fences between.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct FaultRecord {
    /// [`EMPTY`], [`CLAIMED`] or [`COMPLETE`].
    pub state: u32,
    /// A [`FaultKind`].
    pub kind: u32,
    /// Unused, -1: the host knows its PE, and asking NVSHMEM on the device would link
    /// NVSHMEM into images that do not use it.
    pub pe: i32,
    /// The source line (assertions and panics).
    pub line: u32,
    /// The block index.
    pub block: [u32; 3],
    /// The thread index in its block.
    pub thread: [u32; 3],
    /// The kind's value (see [`FaultKind`]).
    pub value: u64,
    /// The kind's second value (see [`FaultKind`]).
    pub extra: u64,
    /// Bytes used of `text`.
    pub text_len: u32,
    /// Bytes used of `args`.
    pub args_len: u32,
    /// The failing call (`shmem::p`, `shmem::wait_until`, ...), `call_len` bytes.
    pub call: [u8; CALL_BYTES],
    /// The assertion's format, or the panic's file (truncated).
    pub text: [u8; TEXT_BYTES],
    /// The assertion's packed `printf` arguments.
    pub args: [u8; ARGS_BYTES],
    /// Bytes used of `call`.
    pub call_len: u32,
    /// Padding to a multiple of 8.
    pub _pad: u32,
}

impl FaultRecord {
    /// An empty record.
    pub const EMPTY: FaultRecord = FaultRecord {
        state: EMPTY,
        kind: 0,
        pe: -1,
        line: 0,
        block: [0; 3],
        thread: [0; 3],
        value: 0,
        extra: 0,
        text_len: 0,
        args_len: 0,
        call: [0; CALL_BYTES],
        text: [0; TEXT_BYTES],
        args: [0; ARGS_BYTES],
        call_len: 0,
        _pad: 0,
    };
}

/// The per-image global `rshmem_fault_config`, written by the host when it loads the image.
/// All zero (as built) means: no mailbox, no bound.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultConfig {
    /// Device address of the PE's [`FaultRecord`]; 0 for none.
    pub record: u64,
    /// How long a checked wait may last, in nanoseconds; 0 for no bound.
    pub wait_bound_ns: u64,
    /// [`LAYOUT`] once the host wrote it.
    pub layout: u32,
    /// 0 until a thread of this image claims the PE's record (a CAS here, in device memory:
    /// a CAS on the host-mapped record would need PCIe atomics, which not every system has).
    pub claimed: u32,
}

impl FaultConfig {
    /// No mailbox, no bound: an image as built.
    pub const NONE: FaultConfig = FaultConfig {
        record: 0,
        wait_bound_ns: 0,
        layout: 0,
        claimed: 0,
    };
}
