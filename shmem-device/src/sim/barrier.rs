//! Barriers among the threads of a block or a warp, and what a group's collective call
//! records (the calling thread's side, which reports failures, is `ThreadCtx::sync` and
//! `ThreadCtx::collective` in `context`).
//!
//! A GPU barrier waits for every thread of the group; a thread that leaves the kernel while
//! the others wait would hang them (or, on some GPUs, silently count as arrived). Here each
//! barrier also counts the members that have left, so a barrier that can no longer complete
//! is reported as a divergent barrier instead of hanging.

use core::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::format;
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::contract::Dim3;

/// How a wait ended without the barrier completing.
pub(crate) enum WaitError {
    /// The launch failed elsewhere.
    Aborted,
    /// Every member either waits or has left, and at least one has left.
    Divergent {
        /// How many members left the kernel.
        exited: u32,
        /// The member (rank in the group) that left first.
        first: u32,
    },
}

/// A reusable barrier for `size` members.
pub(crate) struct GroupBarrier {
    size: u32,
    state: Mutex<State>,
    cv: Condvar,
}

struct State {
    generation: u64,
    arrived: u32,
    exited: u32,
    first_exit: Option<u32>,
}

impl State {
    fn divergent(&self) -> WaitError {
        WaitError::Divergent {
            exited: self.exited,
            first: self.first_exit.unwrap_or(0),
        }
    }
}

impl GroupBarrier {
    pub fn new(size: u32) -> Self {
        Self {
            size,
            state: Mutex::new(State {
                generation: 0,
                arrived: 0,
                exited: 0,
                first_exit: None,
            }),
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is updated before anything can panic, so a poisoned lock is consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until every member has arrived. Fails once `aborted` is set, or when the
    /// barrier can no longer complete because members left.
    pub fn wait(&self, aborted: &AtomicBool) -> Result<(), WaitError> {
        let mut st = self.lock();
        if aborted.load(SeqCst) {
            return Err(WaitError::Aborted);
        }
        st.arrived += 1;
        if st.arrived + st.exited == self.size {
            if st.exited > 0 {
                return Err(st.divergent());
            }
            st.generation += 1;
            st.arrived = 0;
            self.cv.notify_all();
            return Ok(());
        }
        let generation = st.generation;
        loop {
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
            if st.generation != generation {
                return Ok(());
            }
            if aborted.load(SeqCst) {
                return Err(WaitError::Aborted);
            }
            if st.arrived + st.exited == self.size {
                return Err(st.divergent());
            }
        }
    }

    /// Member `member` has left the kernel and will never arrive again.
    pub fn exit(&self, member: u32) {
        let mut st = self.lock();
        st.exited += 1;
        st.first_exit.get_or_insert(member);
        if st.arrived > 0 && st.arrived + st.exited == self.size {
            self.cv.notify_all();
        }
    }

    /// Wakes every waiter so it re-checks the abort flag.
    pub fn wake(&self) {
        let _st = self.lock();
        self.cv.notify_all();
    }
}

/// A call that all members of a group make together, with the same arguments.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Call {
    /// The operation, e.g. `shmem::putmem::<Block>`.
    pub op: &'static str,
    /// Name of each argument compared, and whether it is an address (shown in hex).
    pub names: &'static [(&'static str, bool)],
    pub args: [usize; 4],
}

impl Call {
    pub fn describe(&self) -> std::string::String {
        let mut s = format!("`{}`", self.op);
        for (i, ((name, address), value)) in self.names.iter().zip(self.args).enumerate() {
            s += if i == 0 { " with " } else { ", " };
            s += &if *address {
                format!("{name} = {value:#x}")
            } else {
                format!("{name} = {}", value as isize)
            };
        }
        s
    }
}

/// The threads of a block or of a warp: their barrier, and the call they are making together.
pub(crate) struct Group {
    pub barrier: GroupBarrier,
    /// What the group is calling now, as the first member to arrive saw it.
    pub call: Mutex<Option<(Call, u32)>>,
    /// `"block"` or `"warp"`, for messages.
    pub kind: &'static str,
    /// Rank in the block of member 0.
    first_rank: u32,
    /// One word per member, for warp shuffles and votes (written, then the group meets).
    pub slots: std::vec::Vec<core::sync::atomic::AtomicU64>,
}

impl Group {
    pub fn new(kind: &'static str, first_rank: u32, size: u32) -> Self {
        Self {
            barrier: GroupBarrier::new(size),
            call: Mutex::new(None),
            kind,
            first_rank,
            slots: (0..size)
                .map(|_| core::sync::atomic::AtomicU64::new(0))
                .collect(),
        }
    }

    /// The thread index of member `member`, in a block of extent `block`.
    pub fn thread_of(&self, member: u32, block: Dim3) -> Dim3 {
        let r = self.first_rank + member;
        Dim3 {
            x: r % block.x,
            y: r / block.x % block.y,
            z: r / (block.x * block.y),
        }
    }
}
