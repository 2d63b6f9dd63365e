//! OpenTelemetry on `serve` (docs/howto/tracing.md): the watcher's spans of one cause (`ingest`,
//! `lapse`, `lapse_task`, `send`) exported over OTLP HTTP/protobuf when the standard
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set (and
//! `OTEL_SDK_DISABLED` is not `true`). Off otherwise: no layer, no exporter, no thread.
//!
//! Each span joins the trace of its cause (the push or `POST /v1/facts` that raised the
//! expectation: `watcher_runtime::trace_cause`), through the two functions this module gives the
//! runtime ([`watcher_runtime::trace_cause::Exporter`]).

use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState, TracerProvider as _,
};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing::Subscriber;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;
use watcher_core::trace::TraceParent;
use watcher_runtime::trace_cause::{self, Exporter};

/// The spans exported (their `tracing` names); the rest of the logs are not.
pub const SPANS: [&str; 4] = ["ingest", "lapse", "lapse_task", "send"];

/// Whether export is asked for by the environment (OpenTelemetry's own variables).
pub fn configured() -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    !disabled && (set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") || set("OTEL_EXPORTER_OTLP_ENDPOINT"))
}

/// The endpoint export goes to, as the environment names it (the traces endpoint first), for the
/// line `serve` logs when export is on.
pub fn endpoint() -> String {
    [
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ]
    .into_iter()
    .filter_map(|name| std::env::var(name).ok())
    .find(|v| !v.trim().is_empty())
    .unwrap_or_default()
}

/// The running export: the batch processor's thread, flushed and stopped when dropped.
pub struct Export {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

impl Drop for Export {
    fn drop(&mut self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("a2a-watcher: OpenTelemetry export did not stop cleanly: {e}");
        }
    }
}

impl Export {
    /// Starts the exporter (endpoint, headers and timeouts from the `OTEL_EXPORTER_OTLP_*`
    /// variables, batching from `OTEL_BSP_*`; service name `a2a-watcher` unless
    /// `OTEL_SERVICE_NAME` says otherwise) and gives the runtime its span functions.
    ///
    /// # Errors
    /// When the exporter cannot be built (an endpoint that is not a URL).
    pub fn start() -> anyhow::Result<Export> {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .build()?;
        let mut resource = opentelemetry_sdk::Resource::builder();
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name("a2a-watcher");
        }
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build();
        let tracer = provider.tracer("a2a-watcher");
        trace_cause::set_exporter(Exporter { adopt, context_of });
        Ok(Export { provider, tracer })
    }

    /// The `tracing` layer that exports the [`SPANS`].
    pub fn layer<S>(&self) -> impl Layer<S>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.tracer.clone())
            .with_filter(filter_fn(|m| m.is_span() && SPANS.contains(&m.name())))
    }
}

/// Makes `span`'s exported parent the remote span `parent` names.
fn adopt(span: &tracing::Span, parent: &TraceParent) {
    let remote = SpanContext::new(
        TraceId::from_bytes(parent.trace_id()),
        SpanId::from_bytes(parent.parent_id()),
        TraceFlags::new(parent.flags()),
        true,
        TraceState::default(),
    );
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
}

/// `span`'s exported context, as a `traceparent`.
fn context_of(span: &tracing::Span) -> Option<TraceParent> {
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    if !sc.is_valid() {
        return None;
    }
    TraceParent::new(
        sc.trace_id().to_bytes(),
        sc.span_id().to_bytes(),
        sc.trace_flags().to_u8(),
    )
}
