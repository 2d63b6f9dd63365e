//! The claims a sender takes on the lapse tasks it posts: how long a claim holds ([`LEASE`],
//! [`lease_for`]) and the owner each claim is made under (`Claims`).

use super::*;

/// How long a claim on a lapse task holds ([`watcher_runtime::lease`]): 5 minutes. Longer than
/// anything its holder does between the claim and the outcome's write (a `ListTasks` look-up,
/// bounded by [`LOOKUP_BUDGET`], then one `SendMessage`, bounded by the client's connect and
/// request timeouts, 10 s each by default), so a live sender never loses its claim; and longer
/// than the submitter function's timeout (60 s), so a claim outlives the invocation that made
/// it. Short enough that a crashed sender's lapse task is taken over within minutes, and
/// shorter than the lapse queue's visibility timeout (360 s), so the redelivered message finds
/// the crashed claim expired (docs/dynamodb.md "Leased sends").
pub const LEASE: std::time::Duration = std::time::Duration::from_secs(300);

/// The lease for a submitter whose requests may each take `timeout` (connect and answer, each
/// bounded by it): [`LEASE`], or longer when the look-up, its connect and one send could take
/// longer (a `[delivery] timeout_secs` above about two minutes), with a minute to spare.
pub fn lease_for(timeout: std::time::Duration) -> std::time::Duration {
    LEASE.max(LOOKUP_BUDGET + timeout * 2 + std::time::Duration::from_secs(60))
}

/// The leases one sender claims with ([`watcher_runtime::lease::Lease`]): owners
/// `{incarnation}#{n}`, unique per claim, so only the claim's own outcome releases it
/// ([`watcher_runtime::lease::keep_lease`]).
#[derive(Debug)]
pub(crate) struct Claims {
    incarnation: String,
    pub(super) sender: Option<String>,
    pub(super) lease: std::time::Duration,
    count: std::sync::atomic::AtomicU64,
}

impl Claims {
    /// An incarnation name unique across processes: the process id, the instant the submitter
    /// was made (nanoseconds since the epoch, in hex) and a process-wide count.
    pub(super) fn new() -> Self {
        static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Claims {
            incarnation: format!("{}-{nanos:x}-{n}", std::process::id()),
            sender: None,
            lease: LEASE,
            count: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The lease of a new claim at `now`, holding for the submitter's lease length.
    pub(super) fn next(&self, now: Instant) -> Lease {
        let n = self
            .count
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Lease {
            owner: format!("{}#{n}", self.incarnation),
            incarnation: self.incarnation.clone(),
            sender: self.sender.clone(),
            until: add(now, self.lease),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_lease_outlasts_a_look_up_and_a_send() {
        assert_eq!(
            lease_for(Duration::from_secs(10)),
            LEASE,
            "the default timeouts"
        );
        // A 10-minute timeout: 20 s look-up + connect + answer + a minute.
        assert_eq!(
            lease_for(Duration::from_secs(600)),
            Duration::from_secs(20 + 1200 + 60)
        );
        assert!(LEASE > LOOKUP_BUDGET + Duration::from_secs(2 * 10));
    }
}
