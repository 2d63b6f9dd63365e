//! The timer function's event, read once at the edge into [`TimerEvent`]: a schedule's fire, a
//! timer-queue batch, or a sweep duty's tick. Every other shape is refused with
//! [`TimerError::Malformed`], which says which shape it resembled and what was wrong; the
//! handlers below never look at raw JSON.
//!
//! | Event | From | Shape |
//! |---|---|---|
//! | [`TimerEvent::Fire`] | a per-expectation one-time schedule | `{"tenant", "timer"}` ([`TimerInput`]) |
//! | [`TimerEvent::Batch`] | the timer queue's event source mapping | `{"Records": [{"messageId", "receiptHandle", "body", "attributes": {"ApproximateReceiveCount"}}]}` |
//! | [`TimerEvent::Sweep`] | a sweep duty's `cron()` schedule (template.yaml) | `{"sweep": "<duty>"}` ([`Duty`]), or `{"sweep": true}` for every duty in turn |
//!
//! Each record's `body` is read by [`watcher_aws::TimerQueueMessage::parse`] when the record is
//! handled: one unreadable body is dropped (logged) without failing its batch.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use watcher_aws::TimerInput;

use crate::timer::TimerError;

/// One sweep duty, each with its own schedule (template.yaml, docs/aws-latency.md "The sweep's
/// duties"): a backlog in one never delays another, and each has the invocation's time to
/// itself. The serde name is the tick's `sweep` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Duty {
    /// `timers`: fires every deadline and horizon due, whatever happened to its schedule, then
    /// refreshes the open-expectations gauge.
    Timers,
    /// `requeue`: wakes again the agents whose lapse tasks stayed queued well past their next
    /// attempt (a lost message), at most `REQUEUE_PER_AGENT` per agent.
    Requeue,
    /// `follow`: polls followed lapse tasks the lanes left overdue (`FOLLOW_MARGIN`).
    Follow,
    /// `origins`: polls the origin tasks followed in the table (origin-task reconciliation).
    Origins,
    /// `cards`: re-reads the cards due for a re-read and runs the registration probe.
    Cards,
    /// `notify`: the notification channels' round.
    Notify,
}

impl Duty {
    /// Every duty, in the order `{"sweep": true}` runs them: deadlines first (a lapse is the
    /// product), then what delivers, what follows, and what only informs.
    pub const ALL: [Duty; 6] = [
        Duty::Timers,
        Duty::Requeue,
        Duty::Follow,
        Duty::Origins,
        Duty::Cards,
        Duty::Notify,
    ];

    /// The tick's `sweep` value: `timers`, `requeue`, `follow`, `origins`, `cards`, `notify`.
    pub fn name(self) -> &'static str {
        match self {
            Duty::Timers => "timers",
            Duty::Requeue => "requeue",
            Duty::Follow => "follow",
            Duty::Origins => "origins",
            Duty::Cards => "cards",
            Duty::Notify => "notify",
        }
    }
}

impl std::fmt::Display for Duty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a sweep tick asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepTick {
    /// `{"sweep": true}`: every duty in turn ([`Duty::ALL`]), each within its share of the
    /// invocation's remaining time (an operator's manual sweep, and the older single schedule).
    All,
    /// `{"sweep": "<duty>"}`: one duty, with the invocation's time to itself.
    Duty(Duty),
}

impl SweepTick {
    /// The duties to run, in order.
    pub fn duties(self) -> Vec<Duty> {
        match self {
            SweepTick::All => Duty::ALL.to_vec(),
            SweepTick::Duty(d) => vec![d],
        }
    }
}

/// One record of a timer-queue batch (the fields of SQS's event the function uses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerRecord {
    /// The SQS `messageId`: what a partial batch failure names.
    pub message_id: String,
    /// The receipt handle, for `ChangeMessageVisibility` when the record is handed back
    /// (`None`: its visibility is left to the queue's timeout).
    pub receipt_handle: Option<String>,
    /// The message body: a [`watcher_aws::TimerQueueMessage`], read when the record is handled.
    pub body: String,
    /// `attributes.ApproximateReceiveCount`, at least 1 (1 when missing or unreadable).
    pub receive_count: u32,
}

/// The timer function's event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimerEvent {
    /// A per-expectation schedule's fire: evaluate this timer.
    Fire(TimerInput),
    /// A timer-queue batch (standard queue, at most ten records).
    Batch(Vec<TimerRecord>),
    /// A sweep duty's tick.
    Sweep(SweepTick),
}

/// SQS's record as it arrives; optional what tests and SQS may leave out.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireRecord {
    message_id: String,
    #[serde(default)]
    receipt_handle: Option<String>,
    body: String,
    #[serde(default)]
    attributes: WireAttributes,
}

#[derive(Default, Deserialize)]
struct WireAttributes {
    #[serde(rename = "ApproximateReceiveCount", default)]
    approximate_receive_count: Option<Value>,
}

#[derive(Deserialize)]
struct WireBatch {
    #[serde(rename = "Records")]
    records: Vec<WireRecord>,
}

/// `true` or a duty's name.
#[derive(Deserialize)]
#[serde(untagged)]
enum WireSweep {
    Flag(bool),
    Duty(String),
}

#[derive(Deserialize)]
struct WireTick {
    sweep: WireSweep,
}

/// What the errors name for each shape.
const FIRE: &str = "a schedule's fire {\"tenant\", \"timer\"}";
const BATCH: &str = "a timer-queue batch {\"Records\": [...]}";
const TICK: &str = "a sweep tick {\"sweep\": \"<duty>\" | true}";

impl TimerEvent {
    /// Reads the function's event: by its `Records` key a batch, by its `sweep` key a tick,
    /// else a schedule's fire.
    ///
    /// # Errors
    /// [`TimerError::Malformed`] naming the shape the event resembled and what is wrong with it
    /// (a field missing or mistyped, an id empty or too long, an unknown duty, `"sweep": false`),
    /// or, for an event that resembles none, the three shapes. Not retryable.
    ///
    /// # Example
    /// ```
    /// use watcher_lambda::timer_event::{Duty, SweepTick, TimerEvent};
    /// let tick = serde_json::json!({ "sweep": "follow" });
    /// assert_eq!(TimerEvent::parse(&tick).unwrap(), TimerEvent::Sweep(SweepTick::Duty(Duty::Follow)));
    /// assert!(TimerEvent::parse(&serde_json::json!({ "sweep": "nap" })).is_err());
    /// ```
    pub fn parse(event: &Value) -> Result<Self, TimerError> {
        let Some(fields) = event.as_object() else {
            return Err(malformed(format!(
                "expected a JSON object ({FIRE}, {BATCH} or {TICK}), got {}",
                kind_of(event)
            )));
        };
        if fields.contains_key("Records") {
            let batch: WireBatch = serde_json::from_value(event.clone())
                .map_err(|e| malformed(format!("{BATCH}: {e}")))?;
            return Ok(TimerEvent::Batch(
                batch.records.into_iter().map(TimerRecord::from).collect(),
            ));
        }
        if fields.contains_key("sweep") {
            let tick: WireTick = serde_json::from_value(event.clone())
                .map_err(|e| malformed(format!("{TICK}: {e}")))?;
            return match tick.sweep {
                WireSweep::Flag(true) => Ok(TimerEvent::Sweep(SweepTick::All)),
                WireSweep::Flag(false) => Err(malformed(format!(
                    "{TICK}: \"sweep\": false asks for nothing"
                ))),
                WireSweep::Duty(name) => Duty::ALL
                    .into_iter()
                    .find(|d| d.name() == name)
                    .map(|d| TimerEvent::Sweep(SweepTick::Duty(d)))
                    .ok_or_else(|| {
                        malformed(format!(
                            "{TICK}: unknown duty {name:?}; the duties are {}",
                            Duty::ALL.map(Duty::name).join(", ")
                        ))
                    }),
            };
        }
        if fields.contains_key("timer") {
            return serde_json::from_value(event.clone())
                .map(TimerEvent::Fire)
                .map_err(|e| malformed(format!("{FIRE}: {e}")));
        }
        Err(malformed(format!(
            "none of {FIRE}, {BATCH} or {TICK} (keys: {})",
            fields.keys().cloned().collect::<Vec<_>>().join(", ")
        )))
    }
}

impl TryFrom<&Value> for TimerEvent {
    type Error = TimerError;

    fn try_from(event: &Value) -> Result<Self, TimerError> {
        TimerEvent::parse(event)
    }
}

impl<'de> Deserialize<'de> for TimerEvent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        TimerEvent::parse(&value).map_err(serde::de::Error::custom)
    }
}

impl From<WireRecord> for TimerRecord {
    fn from(r: WireRecord) -> Self {
        let receive_count = r
            .attributes
            .approximate_receive_count
            .and_then(|n| match n {
                Value::String(s) => s.trim().parse::<u32>().ok(),
                Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
                _ => None,
            })
            .unwrap_or(1)
            .max(1);
        TimerRecord {
            message_id: r.message_id,
            receipt_handle: r.receipt_handle,
            body: r.body,
            receive_count,
        }
    }
}

fn malformed(reason: String) -> TimerError {
    TimerError::Malformed(reason)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_duty_tick_reads_as_its_duty_and_true_as_all() {
        for duty in Duty::ALL {
            let tick = json!({ "sweep": duty.name() });
            assert_eq!(
                TimerEvent::parse(&tick).unwrap(),
                TimerEvent::Sweep(SweepTick::Duty(duty))
            );
            assert_eq!(serde_json::to_value(duty).unwrap(), json!(duty.name()));
        }
        assert_eq!(
            TimerEvent::parse(&json!({ "sweep": true })).unwrap(),
            TimerEvent::Sweep(SweepTick::All)
        );
        assert_eq!(SweepTick::All.duties(), Duty::ALL.to_vec());
    }

    #[test]
    fn a_schedules_fire_and_a_batch_read_as_theirs() {
        let key = json!({
            "subject": {"type": "shipment", "id": "S-1"},
            "expectation": {"agent": "booking", "id": "e-1"},
            "kind": "deadline"
        });
        let fire = TimerEvent::parse(&json!({ "tenant": "default", "timer": key })).unwrap();
        assert!(matches!(fire, TimerEvent::Fire(ref i) if i.tenant.as_str() == "default"));
        let batch = TimerEvent::parse(&json!({ "Records": [
            { "messageId": "m-1", "receiptHandle": "rh-1", "body": "{}",
              "attributes": { "ApproximateReceiveCount": "3" }, "eventSource": "aws:sqs" },
            { "messageId": "m-2", "body": "x", "attributes": { "ApproximateReceiveCount": 0 } },
            { "messageId": "m-3", "body": "y" },
        ]}))
        .unwrap();
        let TimerEvent::Batch(records) = batch else {
            panic!("a batch: {batch:?}")
        };
        assert_eq!(
            records,
            vec![
                TimerRecord {
                    message_id: "m-1".into(),
                    receipt_handle: Some("rh-1".into()),
                    body: "{}".into(),
                    receive_count: 3
                },
                TimerRecord {
                    message_id: "m-2".into(),
                    receipt_handle: None,
                    body: "x".into(),
                    receive_count: 1
                },
                TimerRecord {
                    message_id: "m-3".into(),
                    receipt_handle: None,
                    body: "y".into(),
                    receive_count: 1
                },
            ]
        );
    }

    /// Unknown shapes are refused with an error naming the shape they resembled and the fault,
    /// never a panic; the error is not retryable.
    #[test]
    fn unknown_shapes_are_refused_with_a_clear_error() {
        for (event, says) in [
            (json!(null), "expected a JSON object"),
            (json!([1, 2]), "got an array"),
            (json!({ "sweep": "nap" }), "unknown duty \"nap\"; the duties are timers, requeue, follow, origins, cards, notify"),
            (json!({ "sweep": false }), "asks for nothing"),
            (json!({ "sweep": 3 }), "a sweep tick"),
            (json!({ "Records": "none" }), "a timer-queue batch"),
            (json!({ "Records": [{ "body": "{}" }] }), "missing field `messageId`"),
            (json!({ "tenant": "default", "timer": {} }), "a schedule's fire"),
            (json!({ "tenant": "default" }), "none of a schedule's fire"),
            (json!({ "detail-type": "Scheduled Event" }), "keys: detail-type"),
        ] {
            let e = TimerEvent::parse(&event).expect_err(&event.to_string());
            assert!(e.to_string().contains(says), "{event}: {e}");
            assert_eq!(
                lambda_runtime::Diagnostic::from(e).error_type,
                "NotRetryable.MalformedEvent"
            );
        }
        let e = serde_json::from_value::<TimerEvent>(json!({ "sweep": "nap" })).unwrap_err();
        assert!(e.to_string().contains("unknown duty"), "{e}");
    }
}
