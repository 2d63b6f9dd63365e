//! The timer function: target of the per-expectation EventBridge schedules, of the
//! `rate(5 minutes)` sweep and of the timer queue's delayed messages (docs/aws-latency.md).
//! Evaluates on its own clock; an early wake re-arms, never lapses.

use lambda_runtime::{service_fn, Diagnostic, LambdaEvent};
use serde_json::Value;
use std::sync::Arc;

use watcher_host::aws::{Function, NOTIFY_BUDGET};
use watcher_lambda::redelivery::{Invocation, TimerQueueFromEnv};
use watcher_lambda::timer::{handle_with_cards_in, Following, TimerReport, FOLLOW_BUDGET};
use watcher_runtime::clock::{Clock, SystemClock};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    watcher_lambda::init_tracing();
    let parts = watcher_host::aws::from_env(Function::Timer)
        .await
        .map_err(|e| format!("{e:#}"))?;
    let parts = &parts;
    let sending = parts
        .sending_for(Function::Timer)
        .map_err(|e| format!("{e:#}"))?;
    // The sweep follows lapse tasks with GetTask as serve's lanes do.
    let following = &Following {
        submitter: &sending.submitter,
        endpoints: &parts.endpoints,
        reconciler: Some(&*sending.reconciler),
        budget: FOLLOW_BUDGET,
    };
    // A timer message handed back returns after its backoff (ChangeMessageVisibility on the
    // timer queue, whose client is built at the first hand-back).
    let redelivery = &TimerQueueFromEnv::new();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        // Retries of a passing failure inside the invocation stay within Lambda's deadline.
        let invocation = Invocation::new(redelivery, event.context.deadline());
        let report: Result<TimerReport, Diagnostic> = handle_with_cards_in(
            &*parts.watcher,
            &*parts.queue,
            &*parts.timers,
            &parts.cards,
            Some(following),
            &event.payload,
            SystemClock.now(),
            &invocation,
        )
        .await
        .map_err(Diagnostic::from);
        // Then, on a sweep, the notification channels (issue 25), within their budget; a round
        // cut short resumes at the next sweep from each channel's cursor.
        let sweep = event.payload.get("sweep").and_then(Value::as_bool) == Some(true);
        if let Some(notifier) = parts.notifier(Arc::new(SystemClock)).filter(|_| sweep) {
            match tokio::time::timeout(NOTIFY_BUDGET, notifier.round()).await {
                Ok(rounds) => tracing::info!(
                    delivered = rounds.iter().map(|r| r.delivered).sum::<u64>(),
                    failed = rounds.iter().map(|r| r.failed).sum::<u64>(),
                    "notification channels told"
                ),
                Err(_) => tracing::warn!(
                    budget = ?NOTIFY_BUDGET,
                    "notification channels ran out of the sweep's budget; the rest at the next sweep"
                ),
            }
        }
        if let Ok(r) = &report {
            tracing::info!(
                evaluated = r.evaluated,
                lapses = r.lapses,
                requeued = r.requeued,
                followed = r.followed,
                origins = r.origins,
                cards_tried = r.cards_tried,
                cards_read = r.cards_read,
                probed = r.probed,
                redelivered = r.batch_item_failures.len(),
                "timer invocation"
            );
        }
        report
    }))
    .await
}
