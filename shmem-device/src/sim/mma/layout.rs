//! The fragment layouts of the PTX ISA ("Matrix Fragments for mma.m16n8k16 with floating point
//! type", "... mma.m16n8k8 ... .tf32"), transcribed as the ISA states them, with
//! `groupID = lane >> 2` and `threadID_in_group = lane % 4`. Each function maps (lane, element
//! index within the lane's fragment) to (row, column) of the matrix.
//!
//! The public `mma::frag` computes the same maps its own way; a test checks they agree.

/// A of m16n8k16 (16-bit types, 16×16, row): elements a0..a7, two per register.
pub(crate) fn a_m16n8k16(lane: usize, i: usize) -> (usize, usize) {
    let (group, tig) = (lane >> 2, lane % 4);
    let row = if i < 2 || (4..6).contains(&i) {
        group
    } else {
        group + 8
    };
    let col = if i < 4 {
        tig * 2 + (i & 1)
    } else {
        tig * 2 + (i & 1) + 8
    };
    (row, col)
}

/// B of m16n8k16 (16×8, col): elements b0..b3, two per register.
pub(crate) fn b_m16n8k16(lane: usize, i: usize) -> (usize, usize) {
    let (group, tig) = (lane >> 2, lane % 4);
    let row = if i < 2 {
        tig * 2 + (i & 1)
    } else {
        tig * 2 + (i & 1) + 8
    };
    (row, group)
}

/// C and D of m16n8k16 and m16n8k8 (16×8, f32): elements c0..c3, one per register.
pub(crate) fn c_m16n8(lane: usize, i: usize) -> (usize, usize) {
    let (group, tig) = (lane >> 2, lane % 4);
    let row = if i < 2 { group } else { group + 8 };
    (row, tig * 2 + (i & 1))
}

/// A of m16n8k8 tf32 (16×8, row): a0..a3, one per register.
pub(crate) fn a_m16n8k8_tf32(lane: usize, i: usize) -> (usize, usize) {
    let (group, tig) = (lane >> 2, lane % 4);
    let row = if i == 0 || i == 2 { group } else { group + 8 };
    let col = if i < 2 { tig } else { tig + 4 };
    (row, col)
}

/// B of m16n8k8 tf32 (8×8, col): b0, b1, one per register.
pub(crate) fn b_m16n8k8_tf32(lane: usize, i: usize) -> (usize, usize) {
    let (group, tig) = (lane >> 2, lane % 4);
    (if i == 0 { tig } else { tig + 4 }, group)
}
