//! Calls made by a whole warp or block: who performs the work (lane or thread 0, between
//! two meetings of the group, after checking that every member makes the same call), and the
//! PE-wide rendezvous of `barrier_all`, `sync_all` and team barriers. Used by every family of
//! the simulator's device side.

use core::sync::atomic::{fence as host_fence, Ordering::SeqCst};
use std::format;

use super::barrier::Call;
use super::context::{with, ThreadCtx};
use super::world::Side;
use crate::contract::ScopeKind;

/// Runs `work` once for the group of `scope` that calls together: directly for a thread;
/// by lane 0 or thread 0 between two barriers of the warp or block, after checking that
/// every member makes the same `call`.
pub(super) fn in_scope(c: &ThreadCtx<'_>, scope: ScopeKind, call: Call, work: impl FnOnce()) {
    match scope {
        ScopeKind::Thread => work(),
        ScopeKind::Warp => {
            let (warp, lane) = c.warp();
            c.collective(warp, lane, call, work)
        }
        ScopeKind::Block => c.collective(&c.block.threads, c.rank, call, work),
    }
}

/// `barrier_all`/`sync_all` and team barriers: the group's one participant meets one
/// participant of every other member of `team`. Host-side barriers are a different
/// rendezvous and never pair with these.
pub(super) fn pe_sync(scope: ScopeKind, team: i32, op: &'static str, scoped: &'static str) {
    with(scoped, |c| {
        let call = Call {
            op: scoped,
            names: &[],
            args: [0; 4],
        };
        in_scope(c, scope, call, || {
            host_fence(SeqCst);
            if let Err(e) = c.world().rendezvous(Side::Device, team, c.pe(), op, [0; 4]) {
                c.fail(format!("{scoped}: {e}"));
            }
            host_fence(SeqCst);
        })
    })
}
