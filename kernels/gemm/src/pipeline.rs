//! Where a role of a multi-stage pipeline is: [`PipelineState`].

/// A position in a ring of `STAGES` shared-memory stages: the stage, and the parity of the
/// round of it (the phase an mbarrier of the stage completes when the round is done). The
/// producer and the consumers each keep one and advance it once per k-step, across tiles,
/// so the pipeline never drains between tiles.
///
/// Kept as one count of k-steps (stage and phase are its low bits for a power-of-two
/// `STAGES`): a separate stage and phase flipped at the wrap put the phase in a vector
/// register of the sm90 k-loop, and the GEMM ran 1 % slower (H200, 2026-12-03).
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
        self.count = self.count.wrapping_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The state after `i` steps is stage `i % STAGES` of round `i / STAGES`.
    #[test]
    fn advancing_walks_stages_and_rounds() {
        let (mut c, mut p) = (
            PipelineState::<4>::consumer_start(),
            PipelineState::<4>::producer_start(),
        );
        for i in 0..40u32 {
            assert_eq!((c.stage(), c.phase()), (i % 4, i / 4 % 2), "step {i}");
            assert_eq!((p.stage(), p.phase()), (i % 4, (i / 4 + 1) % 2), "step {i}");
            assert_eq!(c.previous_stage(), (i + 3) % 4, "step {i}");
            c.advance();
            p.advance();
        }
    }
}
