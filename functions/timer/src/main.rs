//! The timer function: target of the per-expectation EventBridge schedules, of the sweep
//! duties' schedules (`{"sweep": "<duty>"}`) and of the timer queue's delayed messages
//! (docs/aws-latency.md). Evaluates on its own clock; an early wake re-arms, never lapses.
//!
//! The event is read once into a typed `TimerEvent`; a shape it is not is refused with an error
//! log and a `NotRetryable.MalformedEvent` answer, never a panic.

use lambda_runtime::{service_fn, Diagnostic, LambdaEvent};
use serde_json::Value;
use std::sync::Arc;

use watcher_host::aws::{Function, Parts};
use watcher_lambda::redelivery::{Invocation, TimerQueueFromEnv};
use watcher_lambda::sweep::{Notify, NotifyCounts};
use watcher_lambda::timer::{handle_event, Following, TimerParts, TimerReport, FOLLOW_BUDGET};
use watcher_lambda::timer_event::{Duty, SweepTick, TimerEvent};
use watcher_runtime::clock::{Clock, SystemClock};

/// The `notify` duty over the host's notifier, built per round (it keeps nothing between
/// invocations that matters).
struct Channels<'a>(&'a Parts);

#[async_trait::async_trait]
impl Notify for Channels<'_> {
    async fn round(&self) -> NotifyCounts {
        let Some(notifier) = self.0.notifier(Arc::new(SystemClock)) else {
            return NotifyCounts::default();
        };
        let rounds = notifier.round().await;
        NotifyCounts {
            delivered: rounds.iter().map(|r| r.delivered).sum(),
            failed: rounds.iter().map(|r| r.failed).sum(),
        }
    }
}

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
    // The follow duty polls lapse tasks with GetTask as serve's lanes do.
    let following = &Following {
        submitter: &sending.submitter,
        endpoints: &parts.endpoints,
        reconciler: Some(&*sending.reconciler),
        budget: FOLLOW_BUDGET,
    };
    let channels = &Channels(parts);
    // A timer message handed back returns after its backoff (ChangeMessageVisibility on the
    // timer queue), and a lane wake-up still ahead is sent on there; the client is built at its
    // first use.
    let timer_queue = &TimerQueueFromEnv::new();
    let timer_parts = &TimerParts {
        watcher: &*parts.watcher,
        queue: &*parts.queue,
        timers: &*parts.timers,
        cards: Some(&parts.cards),
        following: Some(following),
        notify: Some(channels),
    };
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        let event_payload = match TimerEvent::parse(&event.payload) {
            Ok(parsed) => parsed,
            Err(e) => {
                tracing::error!(error = %e, request_id = %event.context.request_id, "refused an event that is not the timer function's");
                return Err(Diagnostic::from(e));
            }
        };
        let duty = match &event_payload {
            TimerEvent::Sweep(SweepTick::Duty(d)) => Some(*d),
            _ => None,
        };
        // Retries of a passing failure inside the invocation stay within Lambda's deadline.
        let invocation =
            Invocation::new(timer_queue, event.context.deadline()).with_wakes(timer_queue);
        let report: Result<TimerReport, Diagnostic> =
            handle_event(timer_parts, &event_payload, SystemClock.now(), &invocation)
                .await
                .map_err(Diagnostic::from);
        if let Ok(r) = &report {
            tracing::info!(
                duty = duty.map(Duty::name),
                evaluated = r.evaluated,
                lapses = r.lapses,
                requeued = r.requeued,
                followed = r.followed,
                origins = r.origins,
                cards_tried = r.cards_tried,
                cards_read = r.cards_read,
                probed = r.probed,
                notified = r.notified,
                notify_failed = r.notify_failed,
                fired_again = r.fired_again,
                lanes_woken = r.lanes_woken,
                wakes_sent_on = r.wakes_sent_on,
                cut_short = r.cut_short,
                redelivered = r.batch_item_failures.len(),
                "timer invocation"
            );
        }
        report
    }))
    .await
}
