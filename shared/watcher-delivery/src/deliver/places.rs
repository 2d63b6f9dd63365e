//! The places a send holds at its agent while the request is there ([`Places`]).

use tokio::sync::{Semaphore, SemaphorePermit};

/// The places a send holds while its request is at the agent: a lane's per-agent place
/// (`in_flight_per_agent`) and, on `serve`, a slot of the process's `in_flight`.
///
/// A send claims its lapse task first, holding only a place in the line of claims waiting for
/// the agent (`waiting`, of `in_flight_per_agent` places too: at most that many are claimed and
/// not yet at the agent, each for about one answer's time, well within its lease), then enters
/// ([`Places::enter`]: the agent's place and the slot, the waiting place given up), and releases
/// them as soon as the agent has answered, before the answer is recorded. The claim's and the
/// record's writes overlap other sends, so the agent has its `in_flight_per_agent` requests for as
/// long as there is work, on a store whose writes take a round trip (DynamoDB) as on one whose
/// writes take microseconds.
#[derive(Debug, Default)]
pub struct Places<'a> {
    /// The place in the line of claims, held from before the claim until the send enters.
    waiting: Option<SemaphorePermit<'a>>,
    /// The agent's places.
    place: Option<&'a Semaphore>,
    /// The process's slots (`serve`'s `[delivery] in_flight`).
    slot: Option<&'a Semaphore>,
    /// What the send holds once entered.
    held: Vec<SemaphorePermit<'a>>,
}

impl<'a> Places<'a> {
    /// No place held or to take: the caller bounds nothing (a test, an operator's retry of one
    /// lapse task).
    pub fn none() -> Self {
        Places::default()
    }

    /// A send holding `waiting` (its place in the line of claims) that will enter one of `place`
    /// and one of `slot` when its claim is made.
    pub fn after_claim(
        waiting: Option<SemaphorePermit<'a>>,
        place: Option<&'a Semaphore>,
        slot: Option<&'a Semaphore>,
    ) -> Self {
        Places {
            waiting,
            place,
            slot,
            held: Vec::new(),
        }
    }

    /// The claim is made: waits for the agent's place and the slot, then gives up the place in
    /// the line of claims. Closed semaphores would only mean "go ahead"; a lane's never close.
    pub async fn enter(&mut self) {
        for semaphore in [self.place, self.slot].into_iter().flatten() {
            if let Ok(permit) = semaphore.acquire().await {
                self.held.push(permit);
            }
        }
        self.waiting = None;
    }

    /// Frees the places: the agent has answered (or was not asked).
    pub fn release(self) {
        drop(self.held);
    }
}
