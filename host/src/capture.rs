//! The bookkeeping of a graph capture on one PE ([`CaptureBook`]), kept by `Shmem` while
//! `Stream::capture` runs: which streams record (the one the capture began on, and those that
//! forked from it with `Stream::wait_for`), whether each of them was joined back, what the
//! recorded work uses that the graph must keep (teams, values handed over with
//! `Stream::keep_with_graph`), and how many operations were recorded.
//!
//! It decides, for both backends alike, the two rules CUDA's stream capture imposes on
//! dependencies between streams:
//!
//! * a recording stream cannot wait for a stream that does not record: a graph's work cannot
//!   depend on work outside it ([`CaptureBook::check_wait`] refuses);
//! * every stream that forked from the capture must be joined back into the stream it began
//!   on before it ends ([`CaptureBook::unjoined`] names those that were not).
//!
//! Joins are tracked with a vector clock per stream: `knows[s][t]` is the last operation of
//! stream `t` that the next work queued on `s` waits for. A fork counts as an operation of the
//! forked stream, so a stream that forked and was never joined back is caught even if it
//! recorded nothing (CUDA refuses to end that capture too).
//!
//! ```ignore
//! let mut book = CaptureBook::new(main);
//! book.check_wait(side, main)?;
//! book.note_wait(side, main); // side forks: it records from now on
//! book.queued(side);          // a launch on side
//! assert_eq!(book.unjoined(), [side]);
//! book.note_wait(main, side); // joined back
//! assert!(book.unjoined().is_empty());
//! ```

use crate::contract::StreamId;
use rshmem_device::shmem::Team;
use std::any::Any;
use std::collections::BTreeMap;

/// A vector clock: for each recording stream, the last of its operations that is known to
/// come first.
type Clock = BTreeMap<StreamId, u64>;

/// One capture's bookkeeping; see the module docs.
pub(crate) struct CaptureBook {
    origin: StreamId,
    /// Per recording stream: how many operations it recorded (its fork counting as one).
    seq: BTreeMap<StreamId, u64>,
    /// Per recording stream: what its next work waits for.
    knows: BTreeMap<StreamId, Clock>,
    /// Operations recorded, on every recording stream.
    operations: usize,
    /// Split teams the recorded collectives use.
    teams: Vec<Team>,
    /// What the graph keeps alive for the recorded work (`Stream::keep_with_graph`).
    holds: Vec<Box<dyn Any + Send + Sync>>,
}

/// What a finished capture hands to its graph.
pub(crate) struct Recorded {
    /// Operations recorded.
    pub operations: usize,
    /// Split teams the recorded collectives use.
    pub teams: Vec<Team>,
    /// What the graph keeps alive.
    pub holds: Vec<Box<dyn Any + Send + Sync>>,
}

impl CaptureBook {
    /// A capture begun on `origin`.
    pub(crate) fn new(origin: StreamId) -> Self {
        Self {
            origin,
            seq: BTreeMap::from([(origin, 0)]),
            knows: BTreeMap::from([(origin, Clock::new())]),
            operations: 0,
            teams: Vec::new(),
            holds: Vec::new(),
        }
    }

    /// The stream the capture began on.
    pub(crate) fn origin(&self) -> StreamId {
        self.origin
    }

    /// Whether `stream` records.
    pub(crate) fn records(&self, stream: StreamId) -> bool {
        self.seq.contains_key(&stream)
    }

    /// Notes an operation queued on `stream` (nothing if it does not record).
    pub(crate) fn queued(&mut self, stream: StreamId) {
        if let Some(n) = self.seq.get_mut(&stream) {
            *n += 1;
            self.operations += 1;
            self.knows.entry(stream).or_default().insert(stream, *n);
        }
    }

    /// Notes that `team` is used by an operation recorded.
    pub(crate) fn uses_team(&mut self, team: Team) {
        if !self.teams.contains(&team) {
            self.teams.push(team);
        }
    }

    /// Keeps `value` until the graph is dropped.
    pub(crate) fn hold(&mut self, value: Box<dyn Any + Send + Sync>) {
        self.holds.push(value);
    }

    /// Whether `waiter` may wait for what `on` queued so far: not when `waiter` records and
    /// `on` does not (the message says why and what to do).
    pub(crate) fn check_wait(&self, waiter: StreamId, on: StreamId) -> Result<(), String> {
        if !self.records(waiter) || self.records(on) {
            return Ok(());
        }
        Err(format!(
            "stream {} records a graph and cannot wait for stream {}, which does not (it \
             neither began the capture nor forked from it): a graph's work cannot depend on \
             work outside it. Order the streams before the capture begins, or fork stream {} \
             from the capture first (make it wait for a recording stream)",
            waiter.0, on.0, on.0
        ))
    }

    /// Notes that `waiter` waits for what `on` queued so far (allowed by
    /// [`CaptureBook::check_wait`]): a fork when `on` records and `waiter` does not; a join
    /// when both record; nothing when `on` does not record.
    pub(crate) fn note_wait(&mut self, waiter: StreamId, on: StreamId) {
        let Some(on_knows) = self.knows.get(&on).cloned() else {
            return;
        };
        if !self.records(waiter) {
            // The fork: the waiter records from now on, the fork its first operation (not
            // work the graph runs).
            self.seq.insert(waiter, 1);
            self.knows.insert(waiter, Clock::from([(waiter, 1)]));
        }
        let knows = self.knows.entry(waiter).or_default();
        for (stream, n) in on_knows {
            let known = knows.entry(stream).or_insert(0);
            *known = (*known).max(n);
        }
    }

    /// The streams that forked from the capture and whose last operation the origin does not
    /// wait for: CUDA refuses to end such a capture.
    pub(crate) fn unjoined(&self) -> Vec<StreamId> {
        let origin_knows = &self.knows[&self.origin];
        self.seq
            .iter()
            .filter(|(s, n)| **s != self.origin && origin_knows.get(s).copied().unwrap_or(0) < **n)
            .map(|(s, _)| *s)
            .collect()
    }

    /// What the graph takes over.
    pub(crate) fn into_recorded(self) -> Recorded {
        Recorded {
            operations: self.operations,
            teams: self.teams,
            holds: self.holds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAIN: StreamId = StreamId(0);
    const SIDE: StreamId = StreamId(3);
    const THIRD: StreamId = StreamId(4);
    const OUTSIDE: StreamId = StreamId(7);

    /// A wait as `Stream::wait_for` makes it: checked, then noted.
    fn wait(book: &mut CaptureBook, waiter: StreamId, on: StreamId) -> Result<(), String> {
        book.check_wait(waiter, on)?;
        book.note_wait(waiter, on);
        Ok(())
    }

    #[test]
    fn a_fork_must_be_joined_back() {
        let mut book = CaptureBook::new(MAIN);
        book.queued(MAIN);
        wait(&mut book, SIDE, MAIN).unwrap();
        assert!(book.records(SIDE) && !book.records(OUTSIDE));
        // Forked and idle is unjoined too.
        assert_eq!(book.unjoined(), [SIDE]);
        wait(&mut book, MAIN, SIDE).unwrap();
        assert!(book.unjoined().is_empty());
        // Work after the join needs another join.
        book.queued(SIDE);
        assert_eq!(book.unjoined(), [SIDE]);
        wait(&mut book, MAIN, SIDE).unwrap();
        assert!(book.unjoined().is_empty());
        // The fork is not an operation of the graph.
        assert_eq!(book.into_recorded().operations, 2);
    }

    #[test]
    fn joins_are_transitive() {
        let mut book = CaptureBook::new(MAIN);
        wait(&mut book, SIDE, MAIN).unwrap();
        wait(&mut book, THIRD, SIDE).unwrap();
        book.queued(THIRD);
        book.queued(SIDE);
        // SIDE joins THIRD's work, MAIN joins SIDE: both are joined.
        wait(&mut book, SIDE, THIRD).unwrap();
        wait(&mut book, MAIN, SIDE).unwrap();
        assert!(book.unjoined().is_empty(), "{:?}", book.unjoined());
        // Joining SIDE before THIRD's last work leaves THIRD out.
        book.queued(THIRD);
        wait(&mut book, MAIN, SIDE).unwrap();
        assert_eq!(book.unjoined(), [THIRD]);
    }

    #[test]
    fn a_recording_stream_cannot_wait_for_outside_work() {
        let mut book = CaptureBook::new(MAIN);
        let err = wait(&mut book, MAIN, OUTSIDE).unwrap_err();
        assert!(
            err.contains("stream 0 records a graph and cannot wait for stream 7"),
            "{err}"
        );
        // Refused waits note nothing; outside streams may wait for each other.
        assert!(wait(&mut book, OUTSIDE, StreamId(8)).is_ok());
        assert!(!book.records(OUTSIDE));
        assert!(book.unjoined().is_empty());
    }

    #[test]
    fn teams_and_holds_go_to_the_graph() {
        let mut book = CaptureBook::new(MAIN);
        book.uses_team(Team::from_raw(5));
        book.uses_team(Team::from_raw(5));
        book.hold(Box::new(std::sync::Arc::new(1u8)));
        book.queued(OUTSIDE); // not recording: not counted
        let recorded = book.into_recorded();
        assert_eq!(recorded.teams, [Team::from_raw(5)]);
        assert_eq!((recorded.holds.len(), recorded.operations), (1, 0));
    }
}
