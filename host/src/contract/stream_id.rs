//! [`StreamId`]: how the safe API names one of a PE's streams to its backend.

/// Which of a PE's streams: its own ([`StreamId::PE`]) or one made by `Shmem::new_stream`
/// (a backend's `create_stream`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct StreamId(pub(crate) u32);

impl StreamId {
    /// The PE's own stream, made with the PE and never destroyed before it.
    pub(crate) const PE: StreamId = StreamId(0);
}
