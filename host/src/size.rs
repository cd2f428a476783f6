//! The one syntax of byte sizes in the environment: NVSHMEM's, for `NVSHMEM_SYMMETRIC_SIZE`
//! and `NVSHMEM_MAX_MEMORY_PER_GPU` on GPUs and for `RSHMEM_SIM_HEAP` (or, unset,
//! `NVSHMEM_SYMMETRIC_SIZE`) on the simulator, so a value means the same on both backends.
//!
//! NVSHMEM documents it as "a non-negative integer or floating point value with an optional
//! character suffix": `k`/`K`, `m`/`M`, `g`/`G`, `t`/`T` multiply by 2^10, 2^20, 2^30, 2^40,
//! only one multiplier is recognised and anything after it is ignored (`20kk` is `20k`, so
//! `64MiB` and `64MB` are `64M`), and the product is rounded up to whole bytes (`3.1M` is
//! 3250586).
//!
//! ```ignore
//! assert_eq!(parse_size("1.5G"), Some(3 << 29));
//! assert_eq!(parse_size("lots"), None);
//! ```

/// Parses a size the way NVSHMEM does (`nvshmemi_atol_scaled`: `sscanf("%lf%c")`): a
/// non-negative decimal number, then optionally one of `kKmMgGtT` (anything after the
/// multiplier is ignored), rounded up to whole bytes. `None` where NVSHMEM would reject it
/// (including a trailing space); hexadecimal and `inf` forms, which `sscanf` would read, are
/// rejected too.
pub(crate) fn parse_size(text: &str) -> Option<usize> {
    let s = text.trim_start();
    let b = s.as_bytes();
    let digits_from = |mut i: usize| {
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    let mut end = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let int_end = digits_from(end);
    let mut digits = int_end - end;
    end = int_end;
    if b.get(end) == Some(&b'.') {
        let frac_end = digits_from(end + 1);
        digits += frac_end - (end + 1);
        end = frac_end;
    }
    if digits == 0 {
        return None;
    }
    if matches!(b.get(end), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(b.get(end + 1), Some(b'+' | b'-')));
        let exp_end = digits_from(end + 1 + sign);
        if exp_end > end + 1 + sign {
            end = exp_end;
        }
    }
    let value: f64 = s[..end].parse().ok()?;
    let shift = match b.get(end) {
        None => 0,
        Some(b'k' | b'K') => 10,
        Some(b'm' | b'M') => 20,
        Some(b'g' | b'G') => 30,
        Some(b't' | b'T') => 40,
        Some(_) => return None,
    };
    let bytes = (value * (1u64 << shift) as f64).ceil();
    // `usize::MAX as f64` rounds up to 2^64, itself out of range, hence `<`.
    (value >= 0.0 && bytes < usize::MAX as f64).then_some(bytes as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes_like_nvshmem() {
        let cases = [
            ("1024", Some(1024)),
            ("1G", Some(1 << 30)),
            ("512m", Some(512 << 20)),
            ("3.1M", Some(3_250_586)),
            (".5m", Some(1 << 19)),
            ("20kk", Some(20 << 10)),
            ("1e3", Some(1000)),
            ("2T", Some(2 << 40)),
            (" 4g", Some(4 << 30)),
            ("1024 ", None),
            ("", None),
            ("G", None),
            ("-1", None),
            ("1x", None),
            ("99999999999T", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_size(text), expected, "{text:?}");
        }
    }

    /// What the simulator's own parser took before this one served both backends: the same
    /// values where NVSHMEM reads them alike, refused where NVSHMEM refuses them.
    #[test]
    fn reads_the_simulators_former_forms_as_nvshmem_does() {
        let cases = [
            ("4096", Some(4096)),
            (" 64M ", Some(64 << 20)),
            ("2g", Some(2 << 30)),
            ("512KiB", Some(512 << 10)),
            ("1MB", Some(1 << 20)),
            ("1.5G", Some(3 << 29)),
            // `b` is not a multiplier, so NVSHMEM refuses it.
            ("12b", None),
            ("12ib", None),
            ("M", None),
            ("12x", None),
            ("99999999999999999999T", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_size(text), expected, "{text:?}");
        }
    }
}
