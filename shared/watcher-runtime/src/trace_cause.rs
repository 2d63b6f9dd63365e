//! The trace context of the request being served (W3C Trace Context; [`watcher_core::trace`]):
//! the HTTP layer sets it around each request ([`scope`]), and a step reads it
//! ([`current`]) into `StepContext::trace`, so the expectations a push or a `POST /v1/facts`
//! raises keep the cause's trace, and their lapse tasks name it (docs/howto/tracing.md).
//!
//! A task-local rather than an argument: the request's trace is not part of the watcher's
//! rules, and every path from a route to a step (push, facts, artifacts, both deployments) gets
//! it without a change to its signature.

use std::future::Future;

use watcher_core::trace::TraceParent;

tokio::task_local! {
    static CAUSE: TraceParent;
}

/// Runs `f` with `cause` as the request's trace context.
pub async fn scope<F: Future>(cause: TraceParent, f: F) -> F::Output {
    CAUSE.scope(cause, f).await
}

/// The trace context [`scope`] set for the running task, `None` outside one (a timer loop, a
/// replay, a test calling the watcher directly).
pub fn current() -> Option<TraceParent> {
    CAUSE.try_with(|c| *c).ok()
}

/// What an OpenTelemetry export (on `serve`, when configured) does with the watcher's spans: the
/// `tracing` spans are exported by a layer the runtime does not know, so it is reached through
/// these two functions, set once at start ([`set_exporter`]). Without one (the default, and the
/// AWS functions), [`enter`] and [`context_of`] do nothing.
#[derive(Debug, Clone, Copy)]
pub struct Exporter {
    /// Makes the span's exported parent the remote `parent` (so it joins the cause's trace).
    pub adopt: fn(&tracing::Span, &TraceParent),
    /// The span's own exported context (its trace id, and its span id as the parent id).
    pub context_of: fn(&tracing::Span) -> Option<TraceParent>,
}

static EXPORTER: std::sync::OnceLock<Exporter> = std::sync::OnceLock::new();

/// Sets the exporter's functions; `false` when one was set already (the first stays).
pub fn set_exporter(exporter: Exporter) -> bool {
    EXPORTER.set(exporter).is_ok()
}

/// Puts `span` in `parent`'s trace as its child, when an exporter is set.
pub fn enter(span: &tracing::Span, parent: &TraceParent) {
    if let Some(e) = EXPORTER.get() {
        (e.adopt)(span, parent);
    }
}

/// `span`'s own context when an exporter is set and the span is exported, else `None`.
pub fn context_of(span: &tracing::Span) -> Option<TraceParent> {
    EXPORTER.get().and_then(|e| (e.context_of)(span))
}

/// The `traceparent` a request sent within `span` carries, for the cause `cause`: the span's own
/// context when it is exported (so the agent's spans are its children), else `cause`'s trace
/// with a new random parent id, one per request: every send is its own span of the trace.
pub fn outgoing(span: &tracing::Span, cause: &TraceParent) -> TraceParent {
    context_of(span)
        .filter(|c| c.trace_id() == cause.trace_id())
        .unwrap_or_else(|| cause.child(new_span_id()))
}

/// A random span id, never zero.
pub fn new_span_id() -> u64 {
    fastrand::u64(1..)
}

/// The trace context a request is recorded under (trace-context §3.2, "traceparent"): its
/// `traceparent` when that is valid (an invalid one is ignored, as the spec asks), else the AWS
/// X-Ray trace (`X-Amzn-Trace-Id`, or the Lambda invocation's trace id: the same form), else a
/// new trace with a random id.
pub fn of_request(traceparent: Option<&str>, xray: Option<&str>) -> TraceParent {
    traceparent
        .and_then(TraceParent::parse)
        .or_else(|| xray.and_then(|x| TraceParent::from_xray(x, new_span_id())))
        .unwrap_or_else(|| TraceParent::root(fastrand::u128(1..), new_span_id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

    #[test]
    fn a_valid_traceparent_wins_then_xray_then_a_new_trace() {
        let xray = "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1";
        let valid = format!("00-{T}-00f067aa0ba902b7-01");
        assert_eq!(of_request(Some(&valid), Some(xray)).trace_id_hex(), T);
        let invalid = format!("ff-{T}-00f067aa0ba902b7-01");
        assert_eq!(
            of_request(Some(&invalid), Some(xray)).trace_id_hex(),
            "5759e988bd862e3fe1be46a994272793"
        );
        let fresh = of_request(Some(&invalid), None);
        assert_ne!(fresh.trace_id_hex(), T);
        assert_ne!(fresh.trace_id(), [0; 16]);
        assert_ne!(
            of_request(None, None),
            fresh,
            "each new trace has its own id"
        );
    }

    /// Entries written before the trace was kept read without one; an invalid stored value reads
    /// as none; a kept one round-trips (both stores keep the entry as this JSON).
    #[test]
    fn the_outbox_entry_keeps_the_trace_and_reads_old_entries() {
        use crate::outbox_entry::OutboxEntry;
        use watcher_core::ids::{AgentId, ExpectationId, Tenant};
        let at = watcher_core::time::Instant::parse("2026-12-01T08:00:00Z").unwrap();
        let mut entry = OutboxEntry::queued(
            Tenant::parse("default".to_owned()).unwrap(),
            AgentId::parse("a".to_owned()).unwrap(),
            "lapse:e:overdue:2026-12-01T08:00:00Z".into(),
            ExpectationId::parse("e".to_owned()).unwrap(),
            watcher_core::record::LapseKind::Overdue,
            at,
            serde_json::json!({}),
        );
        let old = serde_json::to_value(&entry).unwrap();
        assert!(old.get("trace").is_none(), "absent, not null: {old}");
        let read: OutboxEntry = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(read.trace, None);
        let mut bad = old;
        bad["trace"] = serde_json::json!("ff-not-a-trace");
        assert_eq!(
            serde_json::from_value::<OutboxEntry>(bad).unwrap().trace,
            None
        );
        let tp = TraceParent::parse(&format!("00-{T}-00f067aa0ba902b7-01")).unwrap();
        entry.trace = Some(tp);
        let json = serde_json::to_value(&entry).unwrap();
        assert_eq!(json["trace"], format!("00-{T}-00f067aa0ba902b7-01"));
        assert_eq!(serde_json::from_value::<OutboxEntry>(json).unwrap(), entry);
    }

    #[tokio::test]
    async fn the_scope_is_seen_inside_and_not_outside() {
        let tp = of_request(None, None);
        assert_eq!(current(), None);
        assert_eq!(scope(tp, async { current() }).await, Some(tp));
        assert_eq!(current(), None);
    }
}
