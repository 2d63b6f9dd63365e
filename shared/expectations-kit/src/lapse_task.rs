//! The lapse task as a `handle_lapse` skill receives it (expectations-v1 §10.1): a `ROLE_USER`
//! Message with the origin `contextId`, `referenceTaskIds` = [origin task], a deterministic
//! `messageId`, the lapse in words in a text part, and the lapse block under
//! `metadata["https://rsaxb.com/a2a/expectations/v1"].lapse`.

use serde_json::Value;
use watcher_core::lapse::LapseBlock;
use watcher_core::EXPECTATIONS_URI;

use crate::ExpectationBuilder;

/// A lapse task, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LapseTask {
    /// `lapse:{expectationId}:{lapse}:{dueAt}`: the same for every resend of this lapse, so a
    /// skill can drop duplicates by it.
    pub message_id: String,
    /// The origin task's `contextId`, when it had one.
    pub context_id: Option<String>,
    /// The task that raised the expectation (`referenceTaskIds[0]`).
    pub origin_task_id: Option<String>,
    /// The lapse in a person's words (the text parts, joined by newlines).
    pub text: String,
    /// The block: which expectation, which lapse, the due times, `lastFactAt`, lineage.
    pub block: LapseBlock,
}

/// Why a message is not a lapse task: the field and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}`: {reason} (expectations-v1 §10.1)")]
pub struct LapseTaskError {
    /// JSON path within the message, e.g. `metadata["…"].lapse.dueAt`.
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

impl LapseTask {
    /// Reads a lapse task from an A2A 1.0 Message (JSON), or from `SendMessage` params
    /// `{ "message": Message, … }`.
    ///
    /// ```
    /// use expectations_kit::{LapseKind, LapseTask};
    /// use serde_json::json;
    ///
    /// let message = json!({
    ///   "role": "ROLE_USER",
    ///   "contextId": "ctx-northgate-sep",
    ///   "referenceTaskIds": ["task-booking-7f3a"],
    ///   "messageId": "lapse:exp-01J8Q0MANIFEST:skipped:2026-09-10T20:15:00Z",
    ///   "parts": [{ "text": "PA-2026-0901 departed on EK203 at 02:41Z but no manifest was ever received." }],
    ///   "extensions": ["https://rsaxb.com/a2a/expectations/v1"],
    ///   "metadata": { "https://rsaxb.com/a2a/expectations/v1": { "lapse": {
    ///     "expectationId": "exp-01J8Q0MANIFEST", "kind": "shipment.manifest",
    ///     "subject": { "type": "shipment", "id": "PA-2026-0901" },
    ///     "expects": "the airline manifest for PA-2026-0901", "lapse": "skipped",
    ///     "projectedDueAt": "2026-09-10T20:15:00Z", "dueAt": "2026-09-10T20:15:00Z",
    ///     "lapsedAt": "2026-09-11T02:41:07Z", "lastFactAt": "2026-09-11T02:41:00Z",
    ///     "satisfiedAfter": ["exp-01J8Q0DEPART"], "lineage": 0 } } }
    /// });
    /// let task = LapseTask::from_message(&message)?;
    /// assert_eq!(task.block.lapse, LapseKind::Skipped);
    /// assert_eq!(task.origin_task_id.as_deref(), Some("task-booking-7f3a"));
    /// assert_eq!(task.block.satisfied_after[0].as_str(), "exp-01J8Q0DEPART");
    ///
    /// // Extend (§10.3): a successor on the same subject, superseding the lapsed expectation.
    /// let successor = task
    ///     .successor("exp-01J8Q0MANIFEST-2")
    ///     .satisfied_by("shipment.manifest.received:PA-2026-0901")
    ///     .due_at("2026-09-11T08:00:00Z")
    ///     .basis("declared")
    ///     .build()?;
    /// assert_eq!(successor.supersedes.unwrap().as_str(), "exp-01J8Q0MANIFEST");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`LapseTaskError`] naming the field: not an object, no `messageId`, no lapse block, or a
    /// block field missing or malformed.
    pub fn from_message(value: &Value) -> Result<Self, LapseTaskError> {
        let message = value.get("message").unwrap_or(value);
        let fail = |field: &str, reason: String| LapseTaskError {
            field: field.into(),
            reason,
        };
        if !message.is_object() {
            return Err(fail("message", "must be a JSON object".into()));
        }
        let message_id = message
            .get("messageId")
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| fail("messageId", "is required".into()))?
            .to_owned();
        let block_path = format!("metadata[\"{EXPECTATIONS_URI}\"].lapse");
        let raw = message
            .get("metadata")
            .and_then(|m| m.get(EXPECTATIONS_URI))
            .and_then(|b| b.get("lapse"))
            .ok_or_else(|| {
                fail(
                    &block_path,
                    "is missing: this message is not a lapse task".into(),
                )
            })?;
        let block: LapseBlock = serde_json::from_value(raw.clone()).map_err(|e| {
            // serde names the missing or malformed field in its message.
            fail(&block_path, e.to_string())
        })?;
        let text = message
            .get("parts")
            .and_then(Value::as_array)
            .map(|parts| {
                parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        Ok(LapseTask {
            message_id,
            context_id: message
                .get("contextId")
                .and_then(Value::as_str)
                .map(str::to_owned),
            origin_task_id: message
                .get("referenceTaskIds")
                .and_then(Value::as_array)
                .and_then(|l| l.first())
                .and_then(Value::as_str)
                .map(str::to_owned),
            text,
            block,
        })
    }

    /// A builder for a successor (§10.3): same `kind`, `subject` and `expects`, `supersedes` the
    /// lapsed expectation. Set `satisfiedBy`, `dueAt` and `basis`, then build.
    pub fn successor(&self, expectation_id: impl Into<String>) -> ExpectationBuilder {
        let b = &self.block;
        ExpectationBuilder::new(expectation_id, b.kind.clone())
            .subject(b.subject.subject_type.clone(), b.subject.id.clone())
            .expects(b.expects.clone())
            .supersedes(b.expectation_id.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request() -> Value {
        json!({ "message": {
            "role": "ROLE_USER", "referenceTaskIds": ["t-1"], "messageId": "lapse:e:overdue:2026-09-10T20:15:00Z",
            "parts": [{ "text": "Overdue: the manifest" }],
            "metadata": { EXPECTATIONS_URI: { "lapse": {
                "expectationId": "e", "kind": "k", "subject": { "type": "shipment", "id": "S" },
                "expects": "the manifest", "lapse": "overdue",
                "projectedDueAt": "2026-09-10T20:15:00Z", "dueAt": "2026-09-10T20:15:00Z",
                "lapsedAt": "2026-09-10T22:15:00Z", "lineage": 1 } } }
        }, "configuration": { "returnImmediately": true } })
    }

    #[test]
    fn reads_send_message_params_as_the_watcher_builds_them() {
        let t = LapseTask::from_message(&request()).unwrap();
        assert_eq!(t.block.lineage, 1);
        assert_eq!(t.text, "Overdue: the manifest");
        assert!(t.context_id.is_none());
        assert!(t.block.last_fact_at.is_none());
    }

    #[test]
    fn faults_are_named() {
        let mut r = request();
        r["message"]["metadata"][EXPECTATIONS_URI]["lapse"]
            .as_object_mut()
            .unwrap()
            .remove("dueAt");
        let err = LapseTask::from_message(&r).unwrap_err();
        assert!(err.field.ends_with(".lapse"), "{err}");
        assert!(err.reason.contains("dueAt"), "{err}");
        let mut r = request();
        r["message"]["metadata"] = json!({});
        assert!(LapseTask::from_message(&r)
            .unwrap_err()
            .reason
            .contains("not a lapse task"));
        assert_eq!(
            LapseTask::from_message(&json!("x")).unwrap_err().field,
            "message"
        );
    }

    #[test]
    fn reads_what_watcher_core_sends() {
        // The request the watcher builds (watcher_core::lapse::Lapse::request) round-trips.
        let block: LapseBlock = serde_json::from_value(
            request()["message"]["metadata"][EXPECTATIONS_URI]["lapse"].clone(),
        )
        .unwrap();
        let lapse = watcher_core::lapse::Lapse {
            tenant: watcher_core::ids::Tenant::default_tenant(),
            agent: watcher_core::ids::AgentId::parse("booking").unwrap(),
            raised_by: watcher_core::record::RaisedBy {
                task_id: watcher_core::ids::TaskId::parse("t-1").unwrap(),
                context_id: Some(watcher_core::ids::ContextId::parse("ctx").unwrap()),
                lineage: Vec::new(),
                trace: None,
            },
            message_id: "lapse:e:overdue:2026-09-10T20:15:00Z".into(),
            block: block.clone(),
            text: "Overdue".into(),
            order: watcher_core::record::RaiseOrder { input: 1, index: 0 },
        };
        let sent = lapse.request(&watcher_core::lapse::Delivery::default());
        let t = LapseTask::from_message(&sent).unwrap();
        assert_eq!(t.block, block);
        assert_eq!(t.context_id.as_deref(), Some("ctx"));
        assert_eq!(t.origin_task_id.as_deref(), Some("t-1"));
        assert_eq!(t.message_id, lapse.message_id);
    }
}
