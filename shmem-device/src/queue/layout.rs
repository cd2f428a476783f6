//! Where a queue's state lives in its symmetric allocations, shared by the device code and the
//! host code that creates and inspects queues (so the two cannot disagree).
//!
//! A queue is two symmetric allocations, the same on every PE:
//!
//! * `words: [u64; SEQ + capacity]`: the tail (producers' ticket counter) at [`TAIL`], the head
//!   (consumers' ticket counter) at [`HEAD`], a label at [`LABEL`] (the queue's name for
//!   messages, NUL-terminated UTF-8), and one sequence number per slot from [`SEQ`]
//!   ([`free_for`] and [`holds`] say what they mean).
//! * `slots: [T; capacity]`: the elements.
//!
//! Tail and head sit 128 bytes apart so that producers' and consumers' atomics do not contend
//! for one cache line (128-byte L2 lines on NVIDIA GPUs).

/// Index of the tail counter: the next ticket a producer takes.
pub const TAIL: usize = 0;
/// Index of the head counter: the next ticket a consumer takes.
pub const HEAD: usize = 16;
/// Index of the label's first word.
pub const LABEL: usize = 32;
/// Bytes of label storage, including the terminating NUL.
pub const LABEL_BYTES: usize = 48;
/// Index of slot 0's sequence number.
pub const SEQ: usize = LABEL + LABEL_BYTES / 8 + 10;

/// The slot a ticket uses: `ticket mod capacity` (a mask when the capacity is a power of two).
#[inline(always)]
pub fn slot_of(ticket: u64, capacity: u64) -> u64 {
    if capacity.is_power_of_two() {
        ticket & (capacity - 1)
    } else {
        ticket % capacity
    }
}

/// The sequence number that means "free for ticket `t`'s producer": `2t`. (`2t + 1` means
/// "holds ticket `t`'s element". Doubling keeps the two states apart even for capacity 1,
/// where the next ticket's "free" would otherwise equal this one's "holds".)
#[inline(always)]
pub fn free_for(ticket: u64) -> u64 {
    ticket.wrapping_mul(2)
}

/// The sequence number that means "holds ticket `t`'s element": `2t + 1`.
#[inline(always)]
pub fn holds(ticket: u64) -> u64 {
    free_for(ticket) | 1
}

/// Tickets must stay below this (sequence numbers are twice the ticket).
pub const MAX_TICKET: u64 = 1 << 62;

/// The sequence number slot `slot` starts with when the first ticket is `first`: free for the
/// first ticket `>= first` that maps to this slot.
pub fn initial_seq(slot: u64, first: u64, capacity: u64) -> u64 {
    let into_round = (slot + capacity - slot_of(first, capacity)) % capacity;
    free_for(first + into_round)
}

/// Words needed for a queue of `capacity` slots, or `None` if that overflows.
pub fn words_len(capacity: usize) -> Option<usize> {
    SEQ.checked_add(capacity)
}

/// The initial content of `words` for a queue of `capacity` slots whose first ticket is
/// `first`, labelled `label` (cut at a character boundary to fit [`LABEL_BYTES`] - 1 bytes).
pub fn initial_words(capacity: u64, first: u64, label: &str) -> impl Iterator<Item = u64> + '_ {
    let mut text = [0u8; LABEL_BYTES];
    let mut end = label.len().min(LABEL_BYTES - 1);
    while !label.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].copy_from_slice(&label.as_bytes()[..end]);
    (0..SEQ as u64 + capacity).map(move |i| {
        let i = i as usize;
        match i {
            TAIL | HEAD => first,
            _ if (LABEL..LABEL + LABEL_BYTES / 8).contains(&i) => {
                let at = (i - LABEL) * 8;
                u64::from_le_bytes(text[at..at + 8].try_into().expect("8 bytes"))
            }
            _ if i >= SEQ => initial_seq((i - SEQ) as u64, first, capacity),
            _ => 0,
        }
    })
}

/// The label stored in `words` (what [`initial_words`] wrote), up to its NUL.
///
/// # Safety
///
/// `words` must point to a queue's words on this PE, readable for [`SEQ`] words.
pub unsafe fn label_bytes<'a>(words: *const u64) -> &'a [u8] {
    // SAFETY: the label lies inside the words (the caller's contract) and is written once, by
    // the host, before any kernel that uses the queue runs.
    let all = unsafe { core::slice::from_raw_parts(words.add(LABEL).cast::<u8>(), LABEL_BYTES) };
    let end = all.iter().position(|&b| b == 0).unwrap_or(LABEL_BYTES);
    &all[..end]
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    #[test]
    fn first_tickets_find_their_slots_free() {
        for capacity in [1u64, 2, 3, 7, 8, 100] {
            for first in [0u64, 5, (1 << 32) - 3, MAX_TICKET - 200] {
                let words: Vec<u64> = initial_words(capacity, first, "q").collect();
                assert_eq!((words[TAIL], words[HEAD]), (first, first));
                // Each of the first `capacity` tickets finds its slot's sequence equal to it.
                for t in first..first + capacity {
                    let s = slot_of(t, capacity) as usize;
                    assert_eq!(
                        words[SEQ + s],
                        free_for(t),
                        "capacity {capacity}, first {first}"
                    );
                }
            }
        }
    }

    #[test]
    fn labels_are_cut_at_a_character_boundary() {
        let long = "é".repeat(40); // 80 bytes of two-byte characters
        let words: Vec<u64> = initial_words(1, 0, &long).collect();
        // SAFETY: `words` holds a whole queue's words.
        let label = unsafe { label_bytes(words.as_ptr()) };
        assert_eq!(label.len(), 46);
        assert!(core::str::from_utf8(label).is_ok());
        let words: Vec<u64> = initial_words(1, 0, "jobs").collect();
        // SAFETY: as above.
        assert_eq!(unsafe { label_bytes(words.as_ptr()) }, b"jobs");
    }
}
