//! Where a role of a multi-stage pipeline is: [`PipelineState`].

/// A position in a ring of `STAGES` shared-memory stages: the stage, and the parity of the
/// round of it (the phase an mbarrier of the stage completes when the round is done). The
/// producer and the consumers each keep one and advance it once per k-step, across tiles,
/// so the pipeline never drains between tiles.
///
/// Kept as one count of k-steps (stage and phase are its low bits for a power-of-two
/// `STAGES`): a separate stage and phase flipped at the wrap put the phase in a vector
/// register of the sm90 k-loop, and the GEMM ran 1 % slower (H200, 2026-12-03). Any other
/// `STAGES` counts modulo `2 STAGES` (a wrap of `u32` would break the stage sequence).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipelineState<const STAGES: u32> {
    count: u32,
}

impl<const STAGES: u32> PipelineState<STAGES> {
    /// Stage 0 of round 0: where the consumers start (they wait for round 0 to fill).
    #[inline(always)]
    pub const fn consumer_start() -> Self {
        Self { count: 0 }
    }

    /// Stage 0 with the phase flipped: where the producer starts. It waits for the stage to
    /// be released in the round before, and a fresh mbarrier counts that round (parity 1) as
    /// complete, so the first round's waits pass at once (CUTLASS's producer start state).
    #[inline(always)]
    pub const fn producer_start() -> Self {
        Self { count: STAGES }
    }

    /// The stage.
    #[inline(always)]
    pub const fn stage(&self) -> u32 {
        self.count % STAGES
    }

    /// The parity to wait for on the stage's barrier.
    #[inline(always)]
    pub const fn phase(&self) -> u32 {
        (self.count / STAGES) & 1
    }

    /// The stage before this one in the ring (the consumers release it once this one's MMAs
    /// are issued).
    #[inline(always)]
    pub const fn previous_stage(&self) -> u32 {
        (self.count + STAGES - 1) % STAGES
    }

    /// The next stage, flipping the phase when the ring wraps.
    #[inline(always)]
    pub fn advance(&mut self) {
        // A constant condition (`const`): the power-of-two ring's code is the plain increment
        // (a run-time call of `is_power_of_two` left the sm90 k-loop one instruction longer).
        self.count = if const { STAGES.is_power_of_two() } {
            self.count.wrapping_add(1)
        } else if self.count + 1 == 2 * STAGES {
            0
        } else {
            self.count + 1
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The state after `i` steps is stage `i % STAGES` of round `i / STAGES`.
    fn walk<const S: u32>() {
        let (mut c, mut p) = (
            PipelineState::<S>::consumer_start(),
            PipelineState::<S>::producer_start(),
        );
        for i in 0..10 * S {
            assert_eq!(
                (c.stage(), c.phase()),
                (i % S, i / S % 2),
                "{S} stages, step {i}"
            );
            assert_eq!(
                (p.stage(), p.phase()),
                (i % S, (i / S + 1) % 2),
                "{S}, step {i}"
            );
            assert_eq!(c.previous_stage(), (i + S - 1) % S, "{S} stages, step {i}");
            c.advance();
            p.advance();
        }
    }

    #[test]
    fn advancing_walks_stages_and_rounds() {
        walk::<4>();
        walk::<7>();
        walk::<2>();
        walk::<3>();
    }
}
