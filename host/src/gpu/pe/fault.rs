//! A GPU PE's fault mailbox (`rshmem_device::fault`): the host-mapped record the first
//! faulting thread of the PE fills before it traps, its address and the checked waits' bound
//! written into every image the PE loads, and the record's facts in words for the PE's error.

use super::super::cuda::{Context, CudaError, CudaResult, HostMapped, Module, Stream};
use rshmem_device::fault::{
    FaultConfig, FaultKind, FaultRecord, COMPLETE, CONFIG_SYMBOL, EMPTY, LAYOUT,
};
use std::ffi::CString;
use std::sync::Arc;
use std::time::Duration;

use crate::launch::HANG_TIMEOUT_VAR;

/// The share of the hang timeout a checked device wait may last: less than all of it, so
/// that a stuck wait reports itself (naming the wait, block and thread) before the host's
/// watchdog ends the PE for making no progress (naming only what was pending).
/// Four fifths.
pub(crate) const DEVICE_SHARE: (u32, u32) = (4, 5);

/// The bound on a checked device wait: [`DEVICE_SHARE`] of the PE's hang timeout (the
/// `Job`'s setting, else `RSHMEM_HANG_TIMEOUT`, else its default: what the watchdog uses);
/// no timeout, no bound ([`Duration::ZERO`]).
pub(crate) fn wait_bound(hang_timeout: Option<Duration>) -> Duration {
    hang_timeout.map_or(Duration::ZERO, |t| t * DEVICE_SHARE.0 / DEVICE_SHARE.1)
}

/// One PE's record and the configuration every image it loads gets.
pub(crate) struct Mailbox {
    record: HostMapped<FaultRecord>,
    bound: Duration,
}

impl Mailbox {
    /// A fresh, empty record in `ctx`; checked waits bounded by [`wait_bound`] of the PE's
    /// `hang_timeout` (`None`: off).
    pub(crate) fn new(ctx: &Arc<Context>, hang_timeout: Option<Duration>) -> CudaResult<Mailbox> {
        Ok(Mailbox {
            record: HostMapped::new(ctx, FaultRecord::EMPTY)?,
            bound: wait_bound(hang_timeout),
        })
    }

    /// Points `module`'s `rshmem_fault_config` at the record. An image without the global
    /// (built before the mailbox existed) is left as it is: its faults say "kernel trapped".
    /// The copy goes on a stream of its own, so that it waits for no running kernel (one
    /// may be waiting for another PE that is loading this image too).
    pub(crate) fn install(&self, module: &Module) -> Result<(), String> {
        let symbol = CString::new(CONFIG_SYMBOL).expect("no NUL in the symbol");
        let cuda = |e: CudaError| format!("{} failed: {}", e.call, e.message());
        let Some((at, size)) = module.global(&symbol).map_err(cuda)? else {
            return Ok(());
        };
        let config = FaultConfig {
            record: self.record.device_ptr(),
            // 0: no bound (the device's reading too).
            wait_bound_ns: u64::try_from(self.bound.as_nanos()).unwrap_or(u64::MAX),
            layout: LAYOUT,
            claimed: 0,
        };
        let bytes = config_bytes(&config);
        if size != bytes.len() {
            return Err(format!(
                "its `{CONFIG_SYMBOL}` has {size} bytes where this rshmem expects {}: the image \
                 was built by another version of rshmem-device; rebuild it",
                bytes.len()
            ));
        }
        let stream = Stream::new(module.context()).map_err(cuda)?;
        // SAFETY: `at` is the module's global of exactly `bytes.len()` bytes; `bytes` lives
        // until the stream is synchronised below.
        unsafe { stream.copy_to_device(at, &bytes) }.map_err(cuda)?;
        stream.synchronize().map_err(cuda)
    }

    /// What the faulting thread left, in words (`block (..), thread (..)` and the reason), or
    /// `None` where no thread recorded a fault.
    pub(crate) fn describe(&self, trapped: &str) -> Option<String> {
        describe(&self.record.read(), trapped)
    }
}

/// `config`'s bytes as the device lays it out (`repr(C)`: two u64, two u32, no padding).
fn config_bytes(config: &FaultConfig) -> [u8; 24] {
    let mut out = [0u8; 24];
    out[..8].copy_from_slice(&config.record.to_le_bytes());
    out[8..16].copy_from_slice(&config.wait_bound_ns.to_le_bytes());
    out[16..20].copy_from_slice(&config.layout.to_le_bytes());
    out[20..].copy_from_slice(&config.claimed.to_le_bytes());
    out
}

/// Bytes `len` of `field`, as text.
fn text(field: &[u8], len: u32) -> String {
    let n = (len as usize).min(field.len());
    String::from_utf8_lossy(&field[..n]).into_owned()
}

/// The record's facts: `block (x, y, z), thread (x, y, z): kernel trapped (<trapped>): <why>`,
/// worded as the simulator words the same failures. `None` for an empty record.
pub(crate) fn describe(r: &FaultRecord, trapped: &str) -> Option<String> {
    if r.state == EMPTY {
        return None;
    }
    let [bx, by, bz] = r.block;
    let [tx, ty, tz] = r.thread;
    let place = format!("block ({bx}, {by}, {bz}), thread ({tx}, {ty}, {tz})");
    if r.state != COMPLETE {
        return Some(format!(
            "{place}: kernel trapped ({trapped}); that thread had begun to record why when the \
             kernel ended"
        ));
    }
    let call = text(&r.call, r.call_len);
    let why = match FaultKind::from_raw(r.kind) {
        Some(FaultKind::Assert) => {
            let format = text(&r.text, r.text_len);
            let args = &r.args[..(r.args_len as usize).min(r.args.len())];
            rshmem_device::sim::render_packed(&format, args)
        }
        Some(FaultKind::Wait) => format!(
            "{call}: still waiting after {:.1} s: nobody satisfied the condition (a missing put \
             or signal, or a deadlock); the bound, {} s, is {}% of the hang timeout \
             ({HANG_TIMEOUT_VAR} or Job::hang_timeout)",
            r.value as f64 / 1e9,
            Duration::from_nanos(r.extra).as_secs_f64(),
            100 * DEVICE_SHARE.0 / DEVICE_SHARE.1
        ),
        Some(FaultKind::BadPe) => {
            let n = r.extra;
            format!(
                "{call}: PE {} is out of range: the job has {n} PE(s), numbered 0..{n}",
                r.value as i64
            )
        }
        Some(FaultKind::BadAddress) => format!(
            "{call}: address {:#x} ({} byte(s)) is not on the symmetric heap; pass a pointer \
             into a SymBuffer",
            r.value, r.extra
        ),
        Some(FaultKind::Panic) => {
            format!("panicked at {}:{}", text(&r.text, r.text_len), r.line)
        }
        None => format!("an unknown fault (kind {})", r.kind),
    };
    Some(format!("{place}: kernel trapped ({trapped}): {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rshmem_device::fault::{CALL_BYTES, TEXT_BYTES};

    fn record(kind: FaultKind) -> FaultRecord {
        FaultRecord {
            state: COMPLETE,
            kind: kind as u32,
            pe: 1,
            block: [2, 0, 0],
            thread: [5, 0, 0],
            ..FaultRecord::EMPTY
        }
    }

    fn with_call(mut r: FaultRecord, call: &str) -> FaultRecord {
        r.call[..call.len()].copy_from_slice(call.as_bytes());
        r.call_len = call.len() as u32;
        r
    }

    #[test]
    fn records_read_as_the_simulator_words_them() {
        let trapped = "CUDA_ERROR_ILLEGAL_INSTRUCTION";
        assert_eq!(describe(&FaultRecord::EMPTY, trapped), None);

        let mut r = record(FaultKind::Assert);
        let format = "assertion failed: x < 0 at k.rs:7: PE %d gives up";
        r.text[..format.len()].copy_from_slice(format.as_bytes());
        r.text_len = format.len() as u32;
        r.args[..4].copy_from_slice(&3i32.to_le_bytes());
        r.args_len = 4;
        assert_eq!(
            describe(&r, trapped).unwrap(),
            "block (2, 0, 0), thread (5, 0, 0): kernel trapped (CUDA_ERROR_ILLEGAL_INSTRUCTION): \
             assertion failed: x < 0 at k.rs:7: PE 3 gives up"
        );

        let mut r = with_call(record(FaultKind::BadPe), "shmem::p");
        (r.value, r.extra) = (-1i64 as u64, 2);
        let msg = describe(&r, trapped).unwrap();
        assert!(
            msg.ends_with("shmem::p: PE -1 is out of range: the job has 2 PE(s), numbered 0..2"),
            "{msg}"
        );

        let mut r = with_call(record(FaultKind::Wait), "shmem::wait_until");
        (r.value, r.extra) = (3_200_000_000, 3_000_000_000);
        let msg = describe(&r, trapped).unwrap();
        assert!(
            msg.contains("shmem::wait_until: still waiting after 3.2 s")
                && msg.contains("the bound, 3 s, is 80% of the hang timeout (RSHMEM_HANG_TIMEOUT"),
            "{msg}"
        );

        let mut r = with_call(record(FaultKind::BadAddress), "shmem::getmem");
        (r.value, r.extra) = (0x1000, 8);
        let msg = describe(&r, trapped).unwrap();
        assert!(
            msg.contains("shmem::getmem: address 0x1000 (8 byte(s)) is not on the symmetric heap"),
            "{msg}"
        );

        let mut r = record(FaultKind::Panic);
        r.state = rshmem_device::fault::CLAIMED;
        let msg = describe(&r, trapped).unwrap();
        assert!(msg.contains("had begun to record"), "{msg}");
        assert_eq!((CALL_BYTES, TEXT_BYTES), (64, 384));
    }

    #[test]
    fn the_bound_is_most_of_the_hang_timeout() {
        let secs = Duration::from_secs;
        assert_eq!(
            wait_bound(Some(crate::launch::DEFAULT_HANG_TIMEOUT)),
            secs(240)
        );
        assert_eq!(wait_bound(Some(Duration::from_millis(2500))), secs(2));
        assert_eq!(wait_bound(None), Duration::ZERO);
    }

    #[test]
    fn the_config_is_laid_out_as_the_device_reads_it() {
        assert_eq!(std::mem::size_of::<FaultConfig>(), 24);
        let bytes = config_bytes(&FaultConfig {
            record: 0x0102,
            wait_bound_ns: 7,
            layout: LAYOUT,
            claimed: 0,
        });
        assert_eq!(&bytes[..2], &[2, 1]);
        assert_eq!(bytes[8], 7);
        assert_eq!(bytes[16], LAYOUT as u8);
    }
}
