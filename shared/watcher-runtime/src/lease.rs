//! Leased sends: who may post a lapse task now (docs/dynamodb.md "Leased sends";
//! docs/interpretation.md "A lapse task is claimed before it is sent").
//!
//! Before posting an outbox entry, a sender claims it with [`crate::store::Outbox::outbox_claim`]:
//! one conditional write that records a [`Lease`] (an owner and an instant until which the
//! claim holds) and the attempt under way (`attempt_started_at`). The claim is granted only on
//! a `queued` entry whose lease is absent or expired; a `sent` (or `failed`, `withdrawn`) entry,
//! or one leased by another sender until after `now`, answers [`Claim::Taken`] and its sender
//! posts nothing. So at most one sender posts an entry at a time, whatever a queue delivers and
//! however many processes read it, and exactly-once rests on the store alone: no queue ordering
//! or timeout relation is needed for it.
//!
//! A lease expires: a sender that crashed after its claim leaves the entry leased until `until`,
//! and the next claim after that takes it over. The taken-over entry is ambiguous (the crashed
//! sender may have posted it), so its new sender looks for it with `ListTasks` first.
//!
//! The rules are pure functions so that the memory, SQLite and DynamoDB stores apply the very
//! same ones, each inside its own atomic step.

use watcher_core::time::Instant;

pub use crate::outbox_entry::Lease;
use crate::outbox_entry::{DeliveryState, OutboxEntry};

/// What [`crate::store::Outbox::outbox_claim`] answered.
#[allow(
    clippy::large_enum_variant,
    reason = "one is answered per send and matched at once, never stored: boxing the entry buys nothing"
)]
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The claim was written: post `entry` (the entry as written: `lease` and
    /// `attempt_started_at` set by [`claim`]).
    Claimed {
        /// The entry as written.
        entry: OutboxEntry,
        /// The stored entry had an attempt without a recorded outcome, or a lease that expired
        /// (its sender crashed): the agent may have the lapse task already, so look for it
        /// with `ListTasks` before posting.
        ambiguous: bool,
    },
    /// Not claimed, and not to be posted: the entry is no longer `queued`, or another sender
    /// holds a lease on it that has not expired.
    Taken {
        /// The stored entry's delivery state.
        delivery: DeliveryState,
        /// The live lease's end, when the entry is queued and leased by another sender.
        leased_until: Option<Instant>,
    },
    /// No such entry is stored.
    Gone,
}

/// The claim of `stored` by `lease` at `now`: [`Claim::Claimed`] with the entry to write
/// (`lease` set, `attempt_started_at` = `now`, nothing else changed) when `stored` is `queued`
/// and unleased, or leased by a claim that no longer holds ([`Lease::holds_against`]: expired,
/// or the sender's previous incarnation); [`Claim::Taken`] otherwise.
///
/// `next_attempt_at` is left as it is: a reader may see a claimed entry as due, and its claim
/// answers `Taken` (serve's lanes do not read again before their sends are done, and a restarted
/// `serve` finds its predecessor's claims due and takes them back at once).
pub fn claim(stored: &OutboxEntry, lease: &Lease, now: Instant) -> Claim {
    if stored.delivery != DeliveryState::Queued {
        return Claim::Taken {
            delivery: stored.delivery,
            leased_until: None,
        };
    }
    if let Some(held) = stored
        .lease
        .as_ref()
        .filter(|l| l.holds_against(lease, now))
    {
        return Claim::Taken {
            delivery: stored.delivery,
            leased_until: Some(held.until),
        };
    }
    let mut entry = stored.clone();
    entry.lease = Some(lease.clone());
    entry.attempt_started_at = Some(now);
    Claim::Claimed {
        entry,
        ambiguous: stored.attempt_started_at.is_some() || stored.lease.is_some(),
    }
}

/// The lease `incoming`, an entry about to replace `stored` (`Outbox::outbox_update`), is
/// written with: a writer holding `stored`'s lease (the same owner) releases it with its write
/// (the outcome of its attempt); any other writer (a deferral, an operator, a push) keeps the
/// stored lease as it is, so it never frees an entry another sender is posting.
pub fn keep_lease(incoming: &mut OutboxEntry, stored: &OutboxEntry) {
    let holder = match (&incoming.lease, &stored.lease) {
        (Some(mine), Some(theirs)) => mine.owner == theirs.owner,
        _ => false,
    };
    incoming.lease = if holder { None } else { stored.lease.clone() };
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use watcher_core::ids::{AgentId, ExpectationId, Tenant};
    use watcher_core::record::LapseKind;

    fn t(s: &str) -> Instant {
        Instant::parse(s).unwrap()
    }

    fn lease(incarnation: &str, sender: Option<&str>, until: &str) -> Lease {
        Lease {
            owner: format!("{incarnation}#0"),
            incarnation: incarnation.into(),
            sender: sender.map(str::to_owned),
            until: t(until),
        }
    }

    fn entry() -> OutboxEntry {
        OutboxEntry::queued(
            Tenant::default_tenant(),
            AgentId::parse("booking").unwrap(),
            "lapse:e:overdue:2026-09-10T12:00:00Z".into(),
            ExpectationId::parse("e").unwrap(),
            LapseKind::Overdue,
            t("2026-09-10T12:00:00Z"),
            json!({}),
        )
    }

    fn claimed(stored: &OutboxEntry, lease: &Lease, now: &str) -> (OutboxEntry, bool) {
        match claim(stored, lease, t(now)) {
            Claim::Claimed { entry, ambiguous } => (entry, ambiguous),
            other => panic!("not claimed: {other:?}"),
        }
    }

    const T0: &str = "2026-09-10T12:00:00Z";
    const UNTIL: &str = "2026-09-10T12:05:00Z";

    #[test]
    fn a_queued_unleased_entry_is_claimed_with_its_attempt_marked() {
        let a = lease("a", None, UNTIL);
        let (e, ambiguous) = claimed(&entry(), &a, T0);
        assert!(!ambiguous);
        assert_eq!(e.lease, Some(a));
        assert_eq!(e.attempt_started_at, Some(t(T0)));
        assert_eq!(
            e.next_attempt_at,
            t(T0),
            "the next attempt is left as it was"
        );
    }

    #[test]
    fn a_live_lease_or_a_settled_entry_is_taken() {
        let (leased, _) = claimed(&entry(), &lease("a", None, UNTIL), T0);
        assert_eq!(
            claim(&leased, &lease("b", None, UNTIL), t("2026-09-10T12:04:59Z")),
            Claim::Taken {
                delivery: DeliveryState::Queued,
                leased_until: Some(t(UNTIL))
            }
        );
        for delivery in [
            DeliveryState::Sent,
            DeliveryState::Failed,
            DeliveryState::Withdrawn,
        ] {
            let settled = OutboxEntry {
                delivery,
                ..entry()
            };
            assert_eq!(
                claim(&settled, &lease("b", None, UNTIL), t(T0)),
                Claim::Taken {
                    delivery,
                    leased_until: None
                }
            );
        }
    }

    #[test]
    fn an_expired_lease_is_taken_over_as_ambiguous() {
        let (leased, _) = claimed(&entry(), &lease("a", None, UNTIL), T0);
        let b = lease("b", None, "2026-09-10T12:10:00Z");
        let (e, ambiguous) = claimed(&leased, &b, UNTIL);
        assert!(ambiguous, "the crashed sender may have posted it");
        assert_eq!(e.lease, Some(b));
        assert_eq!(e.attempt_started_at, Some(t(UNTIL)));
    }

    #[test]
    fn a_restarted_sender_takes_back_its_predecessors_claims_at_once() {
        let (leased, _) = claimed(&entry(), &lease("serve-1", Some("db"), UNTIL), T0);
        let (e, ambiguous) = claimed(&leased, &lease("serve-2", Some("db"), UNTIL), T0);
        assert!(ambiguous);
        assert_eq!(e.lease.unwrap().incarnation, "serve-2");
        // Another sender, or the same incarnation, or no sender name: the lease holds.
        for other in [
            lease("other", Some("other-db"), UNTIL),
            lease("serve-1", Some("db"), UNTIL),
            lease("lambda", None, UNTIL),
        ] {
            assert!(
                matches!(claim(&leased, &other, t(T0)), Claim::Taken { .. }),
                "{other:?}"
            );
        }
        let (unnamed, _) = claimed(&entry(), &lease("x", None, UNTIL), T0);
        assert!(matches!(
            claim(&unnamed, &lease("y", None, UNTIL), t(T0)),
            Claim::Taken { .. }
        ));
    }

    #[test]
    fn only_the_holder_releases_a_lease() {
        let (stored, _) = claimed(&entry(), &lease("a", None, UNTIL), T0);
        let mut outcome = stored.clone();
        keep_lease(&mut outcome, &stored);
        assert_eq!(outcome.lease, None, "the holder's write releases it");
        let mut stale = entry();
        keep_lease(&mut stale, &stored);
        assert_eq!(
            stale.lease, stored.lease,
            "a write read before the claim keeps it"
        );
        let mut other = entry();
        other.lease = Some(lease("b", None, UNTIL));
        keep_lease(&mut other, &stored);
        assert_eq!(other.lease, stored.lease, "another claim's writer keeps it");
    }
}
