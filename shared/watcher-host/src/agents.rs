//! Loading agents at start: cards from files or URLs, validated with clear errors; endpoints
//! from `supportedInterfaces` unless the configuration overrides them (serve.md "Outbound").

use std::net::{IpAddr, ToSocketAddrs};

use anyhow::{anyhow, bail, Context};
use serde_json::Value;
use watcher_core::card::declaration_from_card;
use watcher_core::engine::AgentProfile;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::lapse::Delivery;
use watcher_runtime::directory::AgentEntry;

use watcher_config::config::{AgentConfig, Config};

/// An agent ready to serve: its directory entry and where its lapse tasks go.
pub struct LoadedAgent {
    /// Directory entry (profile, submission, push config).
    pub entry: AgentEntry,
    /// JSON-RPC URL for lapse tasks.
    pub endpoint: Option<String>,
    /// Bearer the watcher presents.
    pub bearer: Option<String>,
    /// The endpoint came from a fetched card and must stay public (serve.md "Outbound").
    pub public_only: bool,
    /// The protocol the endpoint speaks: 1.0, or 0.3 when the card offers only a 0.3 JSON-RPC
    /// interface.
    pub protocol: watcher_delivery::endpoint::Protocol,
}

/// The legacy card path of A2A 0.3 and earlier, tried after [`a2a_types::AGENT_CARD_PATH`].
pub const LEGACY_AGENT_CARD_PATH: &str = "/.well-known/agent.json";

/// Reads the card at `location`: the card's JSON itself (text starting with `{`, for deployments
/// without files, such as Lambda), a file path, or an http(s) URL. A base URL is looked up at
/// `/.well-known/agent-card.json`, then at the legacy `/.well-known/agent.json` (serve.md "Agents
/// are independent"); when both fail, the error names the current path's failure first, then the
/// legacy one's. Redirects are not followed. A 0.3 card (top-level `url`,
/// `preferredTransport`, `protocolVersion`) is given the `supportedInterfaces` it implies
/// ([`a2a_types::v03::card_to_v1`]). The flag says whether the card was fetched over the network
/// (its endpoint must then be public, serve.md "Outbound").
pub async fn fetch_card(location: &str) -> anyhow::Result<(Value, bool)> {
    let (card, fetched) = read_card(location).await?;
    Ok((a2a_types::v03::card_to_v1(card), fetched))
}

async fn read_card(location: &str) -> anyhow::Result<(Value, bool)> {
    if location.trim_start().starts_with('{') {
        let card = serde_json::from_str(location).context("the inline agent card is not JSON")?;
        Ok((card, false))
    } else if location.starts_with("http://") || location.starts_with("https://") {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(10))
            .build()
            .context("Failed to build the HTTP client")?;
        if location.ends_with(".json") {
            return Ok((get_card(&client, location).await?, true));
        }
        let base = location.trim_end_matches('/');
        let current = format!("{base}{}", a2a_types::AGENT_CARD_PATH);
        match get_card(&client, &current).await {
            Ok(card) => Ok((card, true)),
            Err(first) => {
                let legacy = format!("{base}{LEGACY_AGENT_CARD_PATH}");
                match get_card(&client, &legacy).await {
                    Ok(card) => Ok((card, true)),
                    // The current path's error first: it is where the card should be.
                    Err(second) => Err(anyhow!("{first:#}; and at the legacy path: {second:#}")),
                }
            }
        }
    } else {
        let text = std::fs::read_to_string(location)
            .with_context(|| format!("Failed to read the agent card {location}"))?;
        let card = serde_json::from_str(&text)
            .with_context(|| format!("the agent card {location} is not JSON"))?;
        Ok((card, false))
    }
}

async fn get_card(client: &reqwest::Client, url: &str) -> anyhow::Result<Value> {
    let resp = client
        .get(url)
        .send()
        .await
        .with_context(|| format!("Failed to fetch the agent card at {url}"))?;
    if !resp.status().is_success() {
        bail!(
            "fetching the agent card at {url} answered {}",
            resp.status()
        );
    }
    resp.json::<Value>()
        .await
        .with_context(|| format!("the agent card at {url} is not JSON"))
}

/// `true` for loopback, private, link-local and other non-public addresses: the delivery
/// resolver's own classification, so the check at start and the one at connection agree.
fn is_private(ip: IpAddr) -> bool {
    !watcher_delivery::is_public_address(ip)
}

/// Refuses an endpoint taken from a fetched card that resolves to a non-public address.
fn check_public(url: &str) -> anyhow::Result<()> {
    let parsed = reqwest::Url::parse(url).with_context(|| format!("{url:?} is not a URL"))?;
    let host = parsed
        .host_str()
        .ok_or_else(|| anyhow!("{url:?} has no host"))?;
    // An IPv6 literal comes back bracketed, which the resolver does not take.
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = parsed.port_or_known_default().unwrap_or(443);
    let addrs = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("Failed to resolve {host}"))?;
    for a in addrs {
        if is_private(a.ip()) {
            bail!("the endpoint {url} from a fetched card resolves to the non-public address {}; set allow_private_endpoints = true for local use", a.ip());
        }
    }
    Ok(())
}

/// Loads and validates one agent: fetches its card and reads it. Answers the card as read too,
/// so the caller can keep it (serve.md "Agents are independent").
///
/// # Errors
/// Naming the agent and the card field at fault.
pub async fn load_agent(
    cfg: &AgentConfig,
    config: &Config,
) -> anyhow::Result<(LoadedAgent, Value)> {
    let who = format!("agent {:?}", cfg.id);
    let (card, fetched) = fetch_card(&cfg.card).await.with_context(|| who.clone())?;
    let loaded = agent_from_card(cfg, config, card.clone(), fetched)?;
    Ok((loaded, card))
}

/// The JSON-RPC interface the watcher speaks to an agent through, and the protocol spoken there:
/// the card's first A2A 1.x JSON-RPC interface, else its first 0.3 one (spoken to through the
/// 0.3 adapter, [`a2a_types::v03`]). `None` when the card offers neither. Lapse-task delivery and
/// the lifecycle probe both choose with this, so a probe speaks to the interface lapse tasks go
/// to.
pub fn jsonrpc_interface(
    card: &a2a_types::AgentCard,
) -> Option<(
    &a2a_types::AgentInterface,
    watcher_delivery::endpoint::Protocol,
)> {
    use watcher_delivery::endpoint::Protocol;
    card.jsonrpc_interface()
        .map(|i| (i, Protocol::V1))
        .or_else(|| card.jsonrpc_v03_interface().map(|i| (i, Protocol::V03)))
}

/// Whether `cfg.card` is fetched over the network (its endpoint must then be public).
pub fn card_is_fetched(cfg: &AgentConfig) -> bool {
    cfg.card.starts_with("http://") || cfg.card.starts_with("https://")
}

/// Reads an agent from a card already in hand (just fetched, or the last one kept).
///
/// # Errors
/// Naming the agent and the card field at fault.
pub fn agent_from_card(
    cfg: &AgentConfig,
    config: &Config,
    card: Value,
    fetched: bool,
) -> anyhow::Result<LoadedAgent> {
    let who = format!("agent {:?}", cfg.id);
    let declaration = declaration_from_card(&card).map_err(|errs| {
        anyhow!(
            "{who}: the card {} is not usable:\n  {}",
            cfg.card,
            errs.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n  ")
        )
    })?;
    let parsed: a2a_types::AgentCard = serde_json::from_value(card)
        .with_context(|| format!("{who}: the card is not an A2A 1.0 AgentCard"))?;
    let (interface, protocol) = match jsonrpc_interface(&parsed) {
        Some((i, p)) => (Some(i), p),
        None => (None, watcher_delivery::endpoint::Protocol::V1),
    };
    let endpoint = match (&cfg.endpoint, interface) {
        (Some(e), _) => Some(e.clone()),
        (None, Some(i)) => {
            if fetched && !config.allow_private_endpoints {
                check_public(&i.url).with_context(|| who.clone())?;
            }
            Some(i.url.clone())
        }
        (None, None) => None,
    };
    if endpoint.is_none() && !declaration.keeps_time {
        bail!("{who}: no JSON-RPC 1.0 or 0.3 interface on the card and no `endpoint` in the configuration; lapse tasks could not be delivered");
    }
    let push = match (&config.public_url, parsed.capabilities.push_notifications) {
        (Some(base), Some(true)) => Some((
            format!("{}/v1/agents/{}/push", base.trim_end_matches('/'), cfg.id),
            cfg.push_token.clone(),
        )),
        _ => None,
    };
    let tenant = Tenant::parse(cfg.tenant.clone()).map_err(|r| anyhow!("{who}: tenant: {r}"))?;
    let id = AgentId::parse(cfg.id.clone()).map_err(|r| anyhow!("{who}: id: {r}"))?;
    Ok(LoadedAgent {
        entry: AgentEntry {
            tenant,
            submits_lapses: !declaration.keeps_time || cfg.submit_lapses,
            profile: AgentProfile { id, declaration },
            delivery: Delivery {
                push,
                tenant: interface.and_then(|i| i.tenant.clone()),
                // Checked when the configuration was read (terminal wire names).
                resolve_on: cfg.resolve_on.as_ref().map(|states| {
                    states
                        .iter()
                        .map(|s| a2a_types::TaskState::from_wire_str(s))
                        .collect()
                }),
            },
        },
        public_only: cfg.endpoint.is_none() && fetched && !config.allow_private_endpoints,
        endpoint,
        bearer: cfg.bearer.clone(),
        protocol,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_endpoints_are_checked_with_the_resolver_classification() {
        for url in [
            "http://127.0.0.1:8080/",
            "http://169.254.169.254/latest",
            "http://[::1]/",
            // Not refused before the classifications were one: NAT64, documentation, IETF.
            "http://[64:ff9b::a00:1]/",
            "http://192.0.2.10/",
            "http://192.0.0.8/",
        ] {
            let e = check_public(url).unwrap_err().to_string();
            assert!(e.contains("non-public address"), "{url}: {e}");
        }
        assert!(check_public("http://93.184.216.34/").is_ok());
    }
}
