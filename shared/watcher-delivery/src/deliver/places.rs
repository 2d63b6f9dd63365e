//! The places a send holds at its agent while the request is there ([`Places`]).

/// The places a send holds while its request is at the agent: a lane's per-agent place
/// (`in_flight_per_agent`) and, on `serve`, a slot of the process's `in_flight`. Taken before the
/// claim (so no lapse task is claimed and then left waiting for a place) and released as soon as
/// the agent has answered, before the answer is recorded: the record's write overlaps the next
/// send, so the agent has its `in_flight_per_agent` requests for as long as there is work, on a
/// store whose writes take a round trip (DynamoDB) as on one whose writes take microseconds.
#[derive(Debug, Default)]
pub struct Places<'a>(Vec<tokio::sync::SemaphorePermit<'a>>);

impl<'a> Places<'a> {
    /// No place held: the caller bounds nothing (a test, an operator's retry of one lapse task).
    pub fn none() -> Self {
        Places(Vec::new())
    }

    /// Holds `permits` until [`Places::release`] (or the send's end).
    pub fn holding(permits: impl IntoIterator<Item = tokio::sync::SemaphorePermit<'a>>) -> Self {
        Places(permits.into_iter().collect())
    }

    /// Frees the places: the agent has answered (or was not asked).
    pub fn release(self) {
        drop(self.0);
    }
}
