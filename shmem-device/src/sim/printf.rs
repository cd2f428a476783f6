//! The simulator's `printf`: interprets C formats (`%d %i %u %x %X %o %c %f %e %g %p %%`, with
//! flags, width, precision and `l`/`ll`/`h`/`z` length modifiers) on the host.

use std::fmt::Write as _;
use std::string::String;
use std::string::ToString;
use std::{format, print};

use super::context::with;
use crate::contract::PrintfValue;

std::thread_local! {
    /// The last line this simulated thread printed: a trap right after it (`device_assert!`
    /// prints its condition, place and message, then traps) reports it as its reason.
    static LAST_LINE: core::cell::RefCell<String> = const { core::cell::RefCell::new(String::new()) };
}

/// The last line the current host thread printed with `printf!`, if any.
pub(crate) fn last_line() -> Option<String> {
    LAST_LINE.with(|l| Some(l.borrow().clone()).filter(|s| !s.is_empty()))
}

/// Formats and prints one `printf!` from the current simulated thread, prefixed `[PE k] `.
pub(crate) fn printf(format: &str, args: &[Option<PrintfValue>]) {
    let text = render(format, args);
    if let Some(line) = text.lines().rev().find(|l| !l.trim().is_empty()) {
        LAST_LINE.with(|l| *l.borrow_mut() = line.trim().to_string());
    }
    let pe = with("printf", |c| c.pe());
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let _ = write!(out, "[PE {pe}] {line}");
    }
    print!("{out}");
}

/// Renders `format` with `args` (missing arguments print as `(missing)`).
pub(crate) fn render(format: &str, args: &[Option<PrintfValue>]) -> String {
    let mut out = String::new();
    let mut args = args.iter().flatten();
    let mut chars = format.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch != '%' {
            out.push(ch);
            continue;
        }
        let mut spec = String::new();
        let conv = loop {
            match chars.next() {
                Some(c) if "-+ #0123456789.lhzjt".contains(c) => spec.push(c),
                Some(c) => break c,
                None => break '\0',
            }
        };
        if conv == '%' {
            out.push('%');
            continue;
        }
        let flags: String = spec.chars().take_while(|c| "-+ #0".contains(*c)).collect();
        let rest: String = spec
            .chars()
            .skip(flags.len())
            .filter(|c| !"lhzjt".contains(*c))
            .collect();
        let (width, precision): (usize, Option<usize>) = match rest.split_once('.') {
            Some((w, p)) => (w.parse().unwrap_or(0), Some(p.parse().unwrap_or(0))),
            None => (rest.parse().unwrap_or(0), None),
        };
        let Some(&value) = args.next() else {
            out.push_str("(missing)");
            continue;
        };
        let body = match (conv, value) {
            ('d' | 'i', PrintfValue::Int(v)) => v.to_string(),
            ('d' | 'i', PrintfValue::Uint(v)) => (v as i64).to_string(),
            ('u', PrintfValue::Int(v)) => (v as u64).to_string(),
            ('u', PrintfValue::Uint(v)) => v.to_string(),
            ('x', v) => format!("{:x}", as_u64(v)),
            ('X', v) => format!("{:X}", as_u64(v)),
            ('o', v) => format!("{:o}", as_u64(v)),
            ('p', v) => format!("{:#x}", as_u64(v)),
            ('c', v) => char::from_u32(as_u64(v) as u32).unwrap_or('?').to_string(),
            ('f' | 'F', PrintfValue::Float(f)) => format!("{:.*}", precision.unwrap_or(6), f),
            ('e' | 'E', PrintfValue::Float(f)) => format!("{:.*e}", precision.unwrap_or(6), f),
            ('g' | 'G', PrintfValue::Float(f)) => format!("{f}"),
            (c, v) => format!("%{spec}{c}?{v:?}"),
        };
        let pad = width.saturating_sub(body.chars().count());
        if flags.contains('-') {
            out.push_str(&body);
            out.extend(std::iter::repeat_n(' ', pad));
        } else {
            let fill = if flags.contains('0') { '0' } else { ' ' };
            out.extend(std::iter::repeat_n(fill, pad));
            out.push_str(&body);
        }
    }
    out
}

/// Renders `format` with arguments packed as `vprintf` reads them (each at its natural
/// alignment: 4 bytes for `int`-sized conversions, 8 for `l`/`ll`/`z`/`j`/`t`, doubles and
/// pointers), as `printf!` packs them on a GPU: how the host formats a device assertion's
/// message from its fault record.
pub fn render_packed(format: &str, packed: &[u8]) -> String {
    let mut values = std::vec::Vec::new();
    let mut at = 0usize;
    let mut chars = format.chars();
    while let Some(ch) = chars.next() {
        if ch != '%' {
            continue;
        }
        let mut long = false;
        let conv = loop {
            match chars.next() {
                Some(c @ ('l' | 'z' | 'j' | 't')) => {
                    let _ = c;
                    long = true
                }
                Some(c) if "-+ #0123456789.h".contains(c) => {}
                Some(c) => break c,
                None => break '\0',
            }
        };
        let (size, kind) = match conv {
            'd' | 'i' => (if long { 8 } else { 4 }, 'i'),
            'u' | 'x' | 'X' | 'o' | 'c' => (if long { 8 } else { 4 }, 'u'),
            'f' | 'F' | 'e' | 'E' | 'g' | 'G' | 'a' | 'A' => (8, 'f'),
            'p' | 's' => (8, 'u'),
            _ => continue,
        };
        let start = at.next_multiple_of(size);
        let Some(bytes) = packed.get(start..start + size) else {
            values.push(None);
            continue;
        };
        at = start + size;
        let mut raw = [0u8; 8];
        raw[..size].copy_from_slice(bytes);
        let bits = u64::from_le_bytes(raw);
        values.push(Some(match (kind, size) {
            ('i', 4) => PrintfValue::Int(bits as u32 as i32 as i64),
            ('i', _) => PrintfValue::Int(bits as i64),
            ('f', _) => PrintfValue::Float(f64::from_bits(bits)),
            _ => PrintfValue::Uint(bits),
        }));
    }
    render(format, &values)
}

fn as_u64(v: PrintfValue) -> u64 {
    match v {
        PrintfValue::Int(i) => i as u64,
        PrintfValue::Uint(u) => u,
        PrintfValue::Float(f) => f.to_bits(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PrintfValue::*;

    #[test]
    fn renders_arguments_packed_as_vprintf_reads_them() {
        let mut packed = std::vec::Vec::new();
        packed.extend_from_slice(&(-3i32).to_le_bytes());
        packed.extend_from_slice(&[0; 4]); // the i64 below is 8-aligned
        packed.extend_from_slice(&(1i64 << 40).to_le_bytes());
        packed.extend_from_slice(&2.5f64.to_le_bytes());
        packed.extend_from_slice(&7u32.to_le_bytes());
        assert_eq!(
            render_packed("a %d b %lld c %.1f d %u e %d", &packed),
            "a -3 b 1099511627776 c 2.5 d 7 e (missing)"
        );
    }

    #[test]
    fn renders_c_formats() {
        let args = [
            Some(Int(-42)),
            Some(Uint(255)),
            Some(Float(1.5)),
            Some(Uint(7)),
        ];
        assert_eq!(
            render("a=%d b=%x c=%.2f d=%5u%%\n", &args),
            "a=-42 b=ff c=1.50 d=    7%\n"
        );
        assert_eq!(
            render(
                "%lld|%-4d|%04d",
                &[Some(Int(1 << 40)), Some(Int(3)), Some(Int(9))]
            ),
            "1099511627776|3   |0009"
        );
        assert_eq!(render("%d %d", &[Some(Int(1))]), "1 (missing)");
    }
}
