//! The lapse task (expectations-v1 §10.1; semantics.md "The lapse task"): the block, the text in
//! a person's words, the deterministic `messageId`, and the `SendMessage` request.

use a2a_types::{
    Message, Part, Role, SendMessageConfiguration, SendMessageRequest, TaskPushNotificationConfig,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ids::{AgentId, ExpectationId, Subject, Tenant};
use crate::record::{LapseKind, RaiseOrder, RaisedBy};
use crate::time::Instant;
use crate::EXPECTATIONS_URI;

/// The lapse block carried in `message.metadata[URI].lapse` (expectations-v1 §10.1 table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LapseBlock {
    /// Copied from the expectation.
    pub expectation_id: ExpectationId,
    /// Copied from the expectation.
    pub kind: String,
    /// Copied from the expectation.
    pub subject: Subject,
    /// Copied from the expectation.
    pub expects: String,
    /// `overdue`, `skipped` or `stalled`.
    pub lapse: LapseKind,
    /// `dueAt` as raised.
    pub projected_due_at: Instant,
    /// The current due time at the moment of lapse.
    pub due_at: Instant,
    /// The watcher's clock when it determined the lapse.
    pub lapsed_at: Instant,
    /// Greatest `observedAt` of facts on the subject received since raising; absent if none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_fact_at: Option<Instant>,
    /// For `skipped`: the later expectations whose satisfaction revealed the gap.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub satisfied_after: Vec<ExpectationId>,
    /// Superseded ancestors.
    pub lineage: u32,
}

/// A lapse the engine determined: everything needed to submit its task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lapse {
    /// Tenant of the raising agent.
    pub tenant: Tenant,
    /// The agent that raised the expectation, to which the task goes.
    pub agent: AgentId,
    /// The origin task (for a successor: the task that raised the successor).
    pub raised_by: RaisedBy,
    /// `lapse:{expectationId}:{lapse}:{dueAt}`.
    pub message_id: String,
    /// The block.
    pub block: LapseBlock,
    /// The lapse in a person's words (the message's text part).
    pub text: String,
    /// Raising order of the expectation (for ordering lapses of one input).
    pub order: RaiseOrder,
}

/// `lapse:{expectationId}:{lapse}:{dueAt}` with `dueAt` in the output instant format
/// (semantics.md, "The lapse task").
pub fn message_id(id: &ExpectationId, kind: LapseKind, due_at: Instant) -> String {
    format!("lapse:{}:{}:{}", id, kind.as_str(), due_at)
}

/// Where and how a lapse task is delivered, beyond what the lapse itself says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivery {
    /// `taskPushNotificationConfig` to ask for: the watcher's push route and the agent's push
    /// token, when the deployment has a public URL and the card says `pushNotifications: true`.
    pub push: Option<(String, String)>,
    /// The interface's `tenant`, copied into the request when the card names one.
    pub tenant: Option<String>,
    /// The lapse task's Task states that resolve its lapse's incident (expectations-v1 §13.1,
    /// `[[agents]] resolve_on`): terminal states; `None`: `TASK_STATE_COMPLETED` only; empty:
    /// none.
    pub resolve_on: Option<Vec<a2a_types::TaskState>>,
}

impl Lapse {
    /// The `SendMessage` params (A2A 1.0 `SendMessageRequest`) for this lapse: `ROLE_USER`, the
    /// origin `contextId`, `referenceTaskIds` = [origin task], no `taskId`, the extension URI,
    /// one text part, the block under `metadata[URI].lapse`, `returnImmediately: true`, and
    /// `taskPushNotificationConfig` and `tenant` as `delivery` says.
    pub fn send_request(&self, delivery: &Delivery) -> SendMessageRequest {
        let mut message = Message::new(
            self.message_id.clone(),
            Role::User,
            vec![Part::text(self.text.clone())],
        );
        message.context_id = self.raised_by.context_id.as_ref().map(ToString::to_string);
        message.reference_task_ids = vec![self.raised_by.task_id.to_string()];
        message.extensions = vec![EXPECTATIONS_URI.to_owned()];
        let mut lapse = Map::new();
        // A `LapseBlock` is strings, instants and numbers: its serialization cannot fail.
        lapse.insert(
            "lapse".to_owned(),
            serde_json::to_value(&self.block).unwrap_or_default(),
        );
        let mut metadata = Map::new();
        metadata.insert(EXPECTATIONS_URI.to_owned(), Value::Object(lapse));
        message.metadata = Some(metadata);
        let push = delivery.push.as_ref().map(|(url, token)| {
            let mut config = TaskPushNotificationConfig::new(url.clone());
            config.token = Some(token.clone());
            config
        });
        let mut request = SendMessageRequest::new(message);
        request.tenant = delivery.tenant.clone();
        request.configuration = Some(SendMessageConfiguration {
            accepted_output_modes: Vec::new(),
            task_push_notification_config: push,
            history_length: None,
            return_immediately: Some(true),
        });
        request
    }

    /// [`Lapse::send_request`] as the JSON kept with the lapse task in the outbox and posted as
    /// the `SendMessage` params.
    pub fn request(&self, delivery: &Delivery) -> Value {
        // Every member is a string, a list of strings or JSON already: cannot fail.
        serde_json::to_value(self.send_request(delivery)).unwrap_or_default()
    }
}

/// Context for phrasing a lapse in a person's words.
pub(crate) struct Phrase<'a> {
    pub block: &'a LapseBlock,
    pub grace: Option<&'a str>,
    pub horizon: Option<Instant>,
    /// For skipped: what the later, satisfied expectations expected.
    pub revealed_by: Vec<&'a str>,
    /// For stalled: when the subject was last heard of.
    pub silent_since: Instant,
}

/// The text part of the lapse message: the lapse in a person's words (§10.1).
pub(crate) fn phrase(p: &Phrase<'_>) -> String {
    let b = p.block;
    let subject = format!("{} {}", b.subject.subject_type, b.subject.id);
    match b.lapse {
        LapseKind::Overdue => {
            let grace = match p.grace {
                Some(g) => format!(" (grace {g})"),
                None => String::new(),
            };
            let heard = match b.last_fact_at {
                Some(t) => format!(" The last word on {subject} was observed at {t}."),
                None => format!(" Nothing has been heard about {subject} since it was expected."),
            };
            format!(
                "Overdue: {} was due by {}{} and has not arrived.{}",
                b.expects, b.due_at, grace, heard
            )
        }
        LapseKind::Skipped => {
            let later = if p.revealed_by.is_empty() {
                "a later step".to_owned()
            } else {
                p.revealed_by.join("; ")
            };
            format!(
                "Skipped: {later} has been reported for {subject}, but {} (due by {}) was never received.",
                b.expects, b.due_at
            )
        }
        LapseKind::Stalled => match p.horizon {
            // Raised (or last heard of) after its horizon had already passed: "since" would name
            // a time after the horizon, so the horizon is what the sentence is about.
            Some(h) if p.silent_since > h => format!(
                "Stalled: nothing was heard about {subject} by its horizon, {h}, and {} is still outstanding.",
                b.expects
            ),
            horizon => {
                let horizon = horizon
                    .map(|h| format!(" The horizon, {h}, has passed."))
                    .unwrap_or_default();
                format!(
                    "Stalled: nothing has been heard about {subject} since {}, and {} is still outstanding.{horizon}",
                    p.silent_since, b.expects
                )
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{ContextId, TaskId};

    fn at(t: &str) -> Instant {
        Instant::parse(t).unwrap()
    }

    /// Expectation `e-1`'s block (shipment S1's arrival, due 06:00), lapsed `lapse` at
    /// `lapsed_at`.
    fn block(lapse: LapseKind, lapsed_at: &str) -> LapseBlock {
        LapseBlock {
            expectation_id: ExpectationId::parse("e-1").unwrap(),
            kind: "ship.arrival".into(),
            subject: Subject::parse("shipment", "S1").unwrap(),
            expects: "the arrival".into(),
            lapse,
            projected_due_at: at("2026-09-10T06:00:00Z"),
            due_at: at("2026-09-10T06:00:00Z"),
            lapsed_at: at(lapsed_at),
            last_fact_at: None,
            satisfied_after: Vec::new(),
            lineage: 0,
        }
    }

    /// The request is the A2A type, and its JSON is what semantics.md "The lapse task" gives,
    /// member for member.
    #[test]
    fn the_request_is_a_typed_send_message_request() {
        let block = block(LapseKind::Overdue, "2026-09-10T06:00:00Z");
        let lapse = Lapse {
            tenant: Tenant::default_tenant(),
            agent: AgentId::parse("booking").unwrap(),
            raised_by: RaisedBy {
                task_id: TaskId::parse("task-1").unwrap(),
                context_id: Some(ContextId::parse("ctx-1").unwrap()),
                lineage: Vec::new(),
                trace: None,
            },
            message_id: message_id(&block.expectation_id, block.lapse, block.due_at),
            block: block.clone(),
            text: "The arrival is overdue.".into(),
            order: RaiseOrder { input: 1, index: 0 },
        };
        let delivery = Delivery {
            push: Some((
                "https://w.example/v1/agents/booking/push".into(),
                "tok".into(),
            )),
            tenant: Some("t-1".into()),
            resolve_on: None,
        };
        let typed = lapse.send_request(&delivery);
        let json = lapse.request(&delivery);
        assert_eq!(
            json,
            serde_json::json!({
                "tenant": "t-1",
                "message": {
                    "messageId": "lapse:e-1:overdue:2026-09-10T06:00:00Z",
                    "contextId": "ctx-1",
                    "role": "ROLE_USER",
                    "parts": [{ "text": "The arrival is overdue." }],
                    "metadata": { EXPECTATIONS_URI: { "lapse": block } },
                    "extensions": [EXPECTATIONS_URI],
                    "referenceTaskIds": ["task-1"],
                },
                "configuration": {
                    "taskPushNotificationConfig": {
                        "url": "https://w.example/v1/agents/booking/push",
                        "token": "tok",
                    },
                    "returnImmediately": true,
                },
            })
        );
        let back: SendMessageRequest = serde_json::from_value(json).unwrap();
        assert_eq!(back, typed);
        assert!(back.message.task_id.is_none(), "a new task: no taskId");
    }

    fn stalled_text(silent_since: &str, horizon: &str) -> String {
        let block = block(LapseKind::Stalled, "2026-09-10T09:00:00Z");
        phrase(&Phrase {
            block: &block,
            grace: None,
            horizon: Some(at(horizon)),
            revealed_by: Vec::new(),
            silent_since: at(silent_since),
        })
    }

    #[test]
    fn a_stalled_lapse_never_names_a_since_after_its_horizon() {
        // Heard of before the horizon: since then.
        assert_eq!(
            stalled_text("2026-09-10T01:00:00Z", "2026-09-10T04:00:00Z"),
            "Stalled: nothing has been heard about shipment S1 since 2026-09-10T01:00:00Z, and the arrival is still outstanding. The horizon, 2026-09-10T04:00:00Z, has passed."
        );
        // Raised after its horizon had passed: the horizon, not a later "since".
        assert_eq!(
            stalled_text("2026-09-10T08:00:00Z", "2026-09-10T04:00:00Z"),
            "Stalled: nothing was heard about shipment S1 by its horizon, 2026-09-10T04:00:00Z, and the arrival is still outstanding."
        );
    }
}
