//! Where a role of a multi-stage pipeline is: [`PipelineState`].

/// A position in a ring of `STAGES` shared-memory stages: the stage, and the parity of the
/// round of it (the phase an mbarrier of the stage completes when the round is done). The
/// producer and the consumers each keep one and advance it once per k-step, across tiles,
/// so the pipeline never drains between tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipelineState<const STAGES: u32> {
    stage: u32,
    phase: u32,
}

impl<const STAGES: u32> PipelineState<STAGES> {
    /// Stage 0 of round 0: where the consumers start (they wait for round 0 to fill).
    #[inline(always)]
    pub const fn consumer_start() -> Self {
        Self { stage: 0, phase: 0 }
    }

    /// Stage 0 with the phase flipped: where the producer starts. It waits for the stage to
    /// be released in the round before, and a fresh mbarrier counts that round (parity 1) as
    /// complete, so the first round's waits pass at once (CUTLASS's producer start state).
    #[inline(always)]
    pub const fn producer_start() -> Self {
        Self { stage: 0, phase: 1 }
    }

    /// The stage.
    #[inline(always)]
    pub const fn stage(&self) -> u32 {
        self.stage
    }

    /// The parity to wait for on the stage's barrier.
    #[inline(always)]
    pub const fn phase(&self) -> u32 {
        self.phase
    }

    /// The stage before this one in the ring (the consumers release it once this one's MMAs
    /// are issued).
    #[inline(always)]
    pub const fn previous_stage(&self) -> u32 {
        if self.stage == 0 {
            STAGES - 1
        } else {
            self.stage - 1
        }
    }

    /// The next stage, flipping the phase when the ring wraps.
    #[inline(always)]
    pub fn advance(&mut self) {
        self.stage += 1;
        if self.stage == STAGES {
            self.stage = 0;
            self.phase ^= 1;
        }
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
