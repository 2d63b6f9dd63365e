//! Looking for an ambiguous lapse task at the agent with `ListTasks` before it is posted again
//! ([`LOOKUP_BUDGET`]).

use super::*;

/// The longest an ambiguous lapse task is looked for with `ListTasks` (every page) before it is
/// posted again with the same `messageId`: 20 s, well inside [`LEASE`] and inside the submitter
/// function's 60 s timeout, so a look-up that keeps timing out still ends in a send.
pub const LOOKUP_BUDGET: std::time::Duration = std::time::Duration::from_secs(20);

/// Looks for an ambiguous entry's task at the agent: `Some((task id, state))` when a task in the
/// request's `contextId` holds its `messageId` (every `ListTasks` page, at most
/// [`crate::client::LIST_PAGES`], within [`LOOKUP_BUDGET`]); `None` when none does, the request
/// has no `contextId`, the agent does not answer `ListTasks`, or the look-up could not finish
/// (logged): the entry is then posted again with the same `messageId`
/// (docs/interpretation.md).
pub(crate) async fn look_for(
    client: &A2aClient,
    endpoint: &AgentEndpoint,
    entry: &OutboxEntry,
) -> Option<(String, TaskState)> {
    let context_id = entry
        .request
        .pointer("/message/contextId")
        .and_then(serde_json::Value::as_str)?;
    let tenant = entry
        .request
        .get("tenant")
        .and_then(serde_json::Value::as_str);
    let lookup = client.find_in_context(endpoint, context_id, tenant, &entry.message_id, 100);
    match tokio::time::timeout(LOOKUP_BUDGET, lookup).await {
        Ok(Ok(found)) => {
            if found.is_none() {
                tracing::info!(
                    message_id = %entry.message_id,
                    context_id,
                    "an attempt without a recorded outcome is not among the agent's tasks; posting it again"
                );
            }
            found
        }
        Ok(Err(e)) => {
            tracing::warn!(
                message_id = %entry.message_id,
                error = %e.describe(),
                "the agent's ListTasks did not tell whether it has the lapse task; posting again with the same messageId"
            );
            None
        }
        Err(_) => {
            tracing::warn!(
                message_id = %entry.message_id,
                budget_secs = LOOKUP_BUDGET.as_secs(),
                "the agent's ListTasks did not finish in time; posting again with the same messageId"
            );
            None
        }
    }
}
