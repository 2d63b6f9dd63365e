//! The lapse task's `SendMessage` with the W3C `traceparent` of its cause
//! (docs/howto/tracing.md).

use a2a_types::methods;
use serde_json::Value;
use watcher_core::trace::TraceParent;

use super::{outcome_of, A2aClient, DeliveryError, SendOutcome};
use crate::endpoint::{AgentEndpoint, Protocol};

impl A2aClient {
    /// [`A2aClient::send_message`] with a W3C `traceparent` header (trace-context §3.2) when
    /// `traceparent` is given: the lapse's cause's trace id with this send's own parent id
    /// (`watcher_runtime::trace_cause::outgoing`; docs/howto/tracing.md).
    ///
    /// # Errors
    /// As [`A2aClient::send_message`].
    pub async fn send_traced(
        &self,
        endpoint: &AgentEndpoint,
        params: &Value,
        message_id: &str,
        traceparent: Option<&TraceParent>,
    ) -> Result<SendOutcome, DeliveryError> {
        let result = match endpoint.protocol {
            Protocol::V1 => {
                self.call_traced(
                    endpoint,
                    methods::SEND_MESSAGE,
                    params,
                    message_id,
                    traceparent,
                )
                .await?
            }
            Protocol::V03 => {
                let params = a2a_types::v03::send_params_to_v03(params);
                let result = self
                    .call_traced(
                        endpoint,
                        a2a_types::v03::METHOD_SEND_MESSAGE,
                        &params,
                        message_id,
                        traceparent,
                    )
                    .await?;
                a2a_types::v03::result_to_v1(&result)
            }
        };
        Ok(outcome_of(result))
    }
}
