//! What a replica does with one WasmController, given who should own it (the
//! [rendezvous](super::rendezvous) owner among the live members), who holds it
//! (`status.host`, the claim), whether that holder is still alive and whether the module runs
//! here. A pure function, so that the rules that keep a module from running twice are read and
//! tested in one place:
//!
//! - a module runs only on the replica that holds its claim, and a claim is taken only with a
//!   compare-and-swap write (the resource's `resourceVersion` as precondition);
//! - a claim held by a live replica is never taken: its holder releases it (after stopping the
//!   module) when the module is no longer its own;
//! - a claim of a replica whose Lease expired (by this replica's observation) or is gone may
//!   be taken by the owner: the holder stopped its modules before its Lease could expire.

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The module is ours and runs here: go on reconciling it.
    Keep,
    /// Take the claim (compare-and-swap), then run the module. `from`: the replica whose
    /// expired claim is taken over (a failover), if any.
    Claim {
        /// The previous holder, gone.
        from: Option<String>,
    },
    /// Ours by claim but no longer by membership: stop the module, then clear the claim.
    Release,
    /// This replica thought it held the claim, but another replica holds it (or none does):
    /// stop the module at once, if it runs.
    StopHere,
    /// Another live replica holds it: wait for its release or its Lease's expiry.
    Wait {
        /// The holder.
        holder: String,
    },
    /// Not ours, not held by us, not running here: nothing to do.
    Ignore,
}

/// What a replica knows about one WasmController.
#[derive(Debug, Clone, Copy)]
pub struct Situation<'a> {
    /// This replica.
    pub me: &'a str,
    /// The member the module belongs to (`None`: no live member, not even this one).
    pub owner: Option<&'a str>,
    /// `status.host`: the replica holding the claim.
    pub holder: Option<&'a str>,
    /// Whether the holder, when it is another replica, is alive (its Lease not expired).
    pub holder_alive: bool,
    /// Whether this replica holds the claim in its current epoch: the module runs here, or
    /// this replica wrote the claim since its Lease was last current.
    pub held_here: bool,
}

/// Decides; see the [module](self) for the rules.
pub fn decide(s: Situation<'_>) -> Decision {
    let owned = s.owner == Some(s.me);
    match s.holder {
        Some(holder) if holder == s.me => match (owned, s.held_here) {
            (true, true) => Decision::Keep,
            // Ours by claim but not held in this epoch (a restart of this replica, a lost
            // Lease since): the claim is written again, so that no one else's could have come
            // in between.
            (true, false) => Decision::Claim { from: None },
            (false, _) => Decision::Release,
        },
        Some(_) if s.held_here => Decision::StopHere,
        Some(holder) if s.holder_alive => Decision::Wait {
            holder: holder.to_owned(),
        },
        Some(holder) if owned => Decision::Claim {
            from: Some(holder.to_owned()),
        },
        Some(_) => Decision::Ignore,
        None if owned => Decision::Claim { from: None },
        None if s.held_here => Decision::StopHere,
        None => Decision::Ignore,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn situation<'a>(
        owner: Option<&'a str>,
        holder: Option<&'a str>,
        holder_alive: bool,
        held_here: bool,
    ) -> Situation<'a> {
        Situation {
            me: "a",
            owner,
            holder,
            holder_alive,
            held_here,
        }
    }

    #[test]
    fn an_unclaimed_module_is_claimed_by_its_owner_only() {
        assert_eq!(
            decide(situation(Some("a"), None, false, false)),
            Decision::Claim { from: None }
        );
        assert_eq!(
            decide(situation(Some("b"), None, false, false)),
            Decision::Ignore
        );
        assert_eq!(
            decide(situation(None, None, false, false)),
            Decision::Ignore
        );
    }

    #[test]
    fn a_live_holders_claim_is_never_taken() {
        for owner in [Some("a"), Some("b"), None] {
            assert_eq!(
                decide(situation(owner, Some("b"), true, false)),
                Decision::Wait { holder: "b".into() },
                "{owner:?}"
            );
        }
    }

    #[test]
    fn a_dead_holders_claim_is_taken_by_the_owner_only() {
        assert_eq!(
            decide(situation(Some("a"), Some("b"), false, false)),
            Decision::Claim {
                from: Some("b".into())
            }
        );
        assert_eq!(
            decide(situation(Some("c"), Some("b"), false, false)),
            Decision::Ignore
        );
    }

    #[test]
    fn our_claim_is_kept_refreshed_or_released() {
        assert_eq!(
            decide(situation(Some("a"), Some("a"), true, true)),
            Decision::Keep
        );
        assert_eq!(
            decide(situation(Some("a"), Some("a"), true, false)),
            Decision::Claim { from: None }
        );
        for running in [true, false] {
            assert_eq!(
                decide(situation(Some("b"), Some("a"), true, running)),
                Decision::Release
            );
            assert_eq!(
                decide(situation(None, Some("a"), true, running)),
                Decision::Release
            );
        }
    }

    #[test]
    fn a_module_held_here_without_our_claim_stops_at_once() {
        for owner in [Some("a"), Some("b")] {
            for alive in [true, false] {
                assert_eq!(
                    decide(situation(owner, Some("b"), alive, true)),
                    Decision::StopHere
                );
            }
        }
        assert_eq!(
            decide(situation(Some("b"), None, false, true)),
            Decision::StopHere
        );
    }
}
