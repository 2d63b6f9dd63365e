//! Where each agent receives lapse tasks: the caller (serve's configuration, the Lambda's
//! environment) supplies it through [`Endpoints`].

use std::collections::HashMap;
use std::fmt;

use watcher_core::ids::{AgentId, Tenant};

/// An agent's JSON-RPC endpoint and the watcher's credential for it (serve.md `[[agents]]`).
///
/// `Debug` never shows the bearer token.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AgentEndpoint {
    /// The JSON-RPC URL (`endpoint` in the configuration, or the card's JSONRPC interface).
    pub url: String,
    /// Sent as `Authorization: Bearer <bearer>` when present (expectations-v1 §13.1).
    pub bearer: Option<String>,
    /// Refuse to connect when the host is, or resolves to, a loopback, private, link-local or
    /// otherwise non-public address (serve.md "Outbound": an endpoint taken from a fetched card,
    /// unless `allow_private_endpoints = true`). `false` for endpoints written in the
    /// configuration, which are used as written.
    pub public_only: bool,
    /// The A2A protocol the agent speaks at `url`: 1.0, or 0.3 for an agent whose card offers
    /// only a 0.3 interface (sent `message/send` and `tasks/get` through [`a2a_types::v03`]).
    pub protocol: Protocol,
}

/// The A2A protocol version an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// A2A 1.0 (`SendMessage`, `GetTask`, `ListTasks`; `A2A-Version: 1.0`).
    #[default]
    V1,
    /// A2A 0.3 (`message/send`, `tasks/get`; no `ListTasks`).
    V03,
}

impl AgentEndpoint {
    /// An endpoint written in the configuration: used as written, private addresses allowed.
    pub fn configured(url: impl Into<String>, bearer: Option<String>) -> Self {
        AgentEndpoint {
            url: url.into(),
            bearer,
            public_only: false,
            protocol: Protocol::V1,
        }
    }

    /// An endpoint taken from a fetched agent card: only public addresses are contacted.
    pub fn from_card(url: impl Into<String>, bearer: Option<String>) -> Self {
        AgentEndpoint {
            url: url.into(),
            bearer,
            public_only: true,
            protocol: Protocol::V1,
        }
    }

    /// The same endpoint, speaking `protocol`.
    pub fn speaking(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }
}

impl fmt::Debug for AgentEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentEndpoint")
            .field("url", &self.url)
            .field("bearer", &self.bearer.as_ref().map(|_| "<redacted>"))
            .field("public_only", &self.public_only)
            .field("protocol", &self.protocol)
            .finish()
    }
}

/// Looks up where an agent of a tenant receives lapse tasks.
///
/// `None` means the watcher has no endpoint for that agent; its lapse tasks are marked `failed`
/// with a `last_error` saying so (they are not retried: fix the configuration and re-raise).
pub trait Endpoints: Send + Sync {
    /// The endpoint of `agent` in `tenant`, if known.
    fn endpoint(&self, tenant: &Tenant, agent: &AgentId) -> Option<AgentEndpoint>;
}

impl Endpoints for HashMap<(Tenant, AgentId), AgentEndpoint> {
    fn endpoint(&self, tenant: &Tenant, agent: &AgentId) -> Option<AgentEndpoint> {
        self.get(&(tenant.clone(), agent.clone())).cloned()
    }
}

/// Endpoints that can change while the watcher runs: an agent whose card is read only after an
/// outage gains its endpoint then (serve.md "Agents are independent"). Clones share the map.
#[derive(Debug, Clone, Default)]
pub struct SharedEndpoints(
    std::sync::Arc<std::sync::RwLock<HashMap<(Tenant, AgentId), AgentEndpoint>>>,
);

impl SharedEndpoints {
    /// Shares `map`.
    pub fn new(map: HashMap<(Tenant, AgentId), AgentEndpoint>) -> Self {
        SharedEndpoints(std::sync::Arc::new(std::sync::RwLock::new(map)))
    }

    /// Sets (or replaces) the endpoint of `agent` in `tenant`.
    pub fn insert(&self, tenant: Tenant, agent: AgentId, endpoint: AgentEndpoint) {
        self.0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert((tenant, agent), endpoint);
    }
}

impl Endpoints for SharedEndpoints {
    fn endpoint(&self, tenant: &Tenant, agent: &AgentId) -> Option<AgentEndpoint> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&(tenant.clone(), agent.clone()))
            .cloned()
    }
}

impl<E: Endpoints + ?Sized> Endpoints for &E {
    fn endpoint(&self, tenant: &Tenant, agent: &AgentId) -> Option<AgentEndpoint> {
        (**self).endpoint(tenant, agent)
    }
}

impl<E: Endpoints + ?Sized> Endpoints for std::sync::Arc<E> {
    fn endpoint(&self, tenant: &Tenant, agent: &AgentId) -> Option<AgentEndpoint> {
        (**self).endpoint(tenant, agent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_bearer() {
        let e = AgentEndpoint::configured("http://127.0.0.1:9/", Some("s3cret".into()));
        let shown = format!("{e:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }

    #[test]
    fn a_map_is_an_endpoint_directory() {
        let t = Tenant::default_tenant();
        let a = AgentId::parse("booking").unwrap();
        let mut m = HashMap::new();
        m.insert(
            (t.clone(), a.clone()),
            AgentEndpoint::configured("http://x/", None),
        );
        assert_eq!(m.endpoint(&t, &a).unwrap().url, "http://x/");
        assert!(m.endpoint(&t, &AgentId::parse("other").unwrap()).is_none());
    }
}
