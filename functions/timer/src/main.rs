//! The timer function: target of the per-expectation EventBridge schedules, of the
//! `rate(5 minutes)` sweep and of the timer queue's delayed messages (docs/aws-latency.md).
//! Evaluates on its own clock; an early wake re-arms, never lapses.

use lambda_runtime::{service_fn, Diagnostic, LambdaEvent};
use serde_json::Value;
use watcher_host::aws::Function;
use watcher_lambda::timer::{handle_with_cards, Following, TimerReport, FOLLOW_BUDGET};
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
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        let report: Result<TimerReport, Diagnostic> = handle_with_cards(
            &*parts.watcher,
            &*parts.queue,
            &*parts.timers,
            &parts.cards,
            Some(following),
            &event.payload,
            SystemClock.now(),
        )
        .await
        .map_err(Diagnostic::from);
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
                "timer invocation"
            );
        }
        report
    }))
    .await
}
