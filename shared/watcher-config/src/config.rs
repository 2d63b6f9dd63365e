//! `serve`'s configuration file (contracts/serve.md "Configuration"). Relative paths (the
//! database, card files) are resolved against the configuration file's folder.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use watcher_core::time::IsoDuration;

use crate::error::ConfigError;

pub use crate::keys::{did_you_mean, unknown_keys, KNOWN_KEYS};
pub use crate::notify::{NotifyConfig, NOTIFY_EVENTS, NOTIFY_FORMATS, NOTIFY_TLS};

fn default_listen() -> String {
    "127.0.0.1:8080".into()
}
fn default_database() -> PathBuf {
    PathBuf::from("watcher.db")
}
pub(crate) fn default_tenant() -> String {
    "default".into()
}
fn default_retention() -> u32 {
    30
}

/// The whole file. Unknown keys are ignored so that newer files still start.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    /// Address to bind, e.g. `127.0.0.1:8080`.
    #[serde(default = "default_listen")]
    pub listen: String,
    /// The SQLite file.
    #[serde(default = "default_database")]
    pub database: PathBuf,
    /// How agents reach this watcher (lapse-task push configs); also the base of the links to the operator page and the timeline in `[[notify]]` notifications.
    #[serde(default)]
    pub public_url: Option<String>,
    /// Allow endpoints from fetched cards to resolve to loopback/private addresses.
    #[serde(default)]
    pub allow_private_endpoints: bool,
    /// Days to keep satisfied, lapsed and withdrawn records, delivered lapse tasks, finished
    /// tasks and rejections after their last activity (§14; `watcher_runtime::retention`).
    /// `serve` purges hourly; the AWS deployment writes the table's TTL. 0 keeps everything.
    #[serde(default = "default_retention")]
    pub retention_days: u32,
    /// Fact sources.
    #[serde(default)]
    pub sources: Vec<SourceConfig>,
    /// Agents.
    #[serde(default)]
    pub agents: Vec<AgentConfig>,
    /// Operators.
    #[serde(default)]
    pub operators: Vec<PartyConfig>,
    /// Teachers (Learnables).
    #[serde(default)]
    pub teachers: Vec<TeacherConfig>,
    /// Bounds (expectations-v1 §10.3, §13.2).
    #[serde(default)]
    pub limits: LimitsConfig,
    /// Lapse-task delivery.
    #[serde(default)]
    pub delivery: DeliveryConfig,
    /// Notification channels: who is told of each lapse (expectations-v1 §13.1).
    #[serde(default)]
    pub notify: Vec<NotifyConfig>,
}

/// `[[sources]]`.
#[derive(Debug, Clone, Deserialize)]
pub struct SourceConfig {
    /// Recorded as the fact's `source`.
    pub id: String,
    /// Bearer token.
    pub token: String,
    /// Tenant.
    #[serde(default = "default_tenant")]
    pub tenant: String,
    /// `[sources.signature]`: when set, webhook requests must carry a valid signature
    /// (contracts/serve.md "Carrier webhooks").
    #[serde(default)]
    pub signature: Option<watcher_webhooks::SignatureConfig>,
    /// `[[sources.mappings]]`: how the source's own JSON on its webhook becomes facts.
    #[serde(default)]
    pub mappings: Vec<watcher_webhooks::MappingConfig>,
}

impl SourceConfig {
    /// The source's checked webhook settings (mappings and signature).
    ///
    /// # Errors
    /// [`ConfigError::Webhook`], naming the source, the mapping (or `signature`) and the field.
    pub fn hook(&self) -> Result<watcher_webhooks::SourceHook, ConfigError> {
        watcher_webhooks::SourceHook::compile(self.signature.as_ref(), &self.mappings).map_err(
            |e| ConfigError::Webhook {
                id: self.id.clone(),
                reason: e,
            },
        )
    }
}

/// `[[operators]]`.
#[derive(Debug, Clone, Deserialize)]
pub struct PartyConfig {
    /// Name.
    pub id: String,
    /// Bearer token.
    pub token: String,
    /// Tenant.
    #[serde(default = "default_tenant")]
    pub tenant: String,
}

/// `[[teachers]]`.
#[derive(Debug, Clone, Deserialize)]
pub struct TeacherConfig {
    /// The teacher's identity (a `taughtBy` it may use).
    pub id: String,
    /// Bearer token.
    pub token: String,
    /// Tenant.
    #[serde(default = "default_tenant")]
    pub tenant: String,
    /// People it may teach on behalf of.
    #[serde(default)]
    pub on_behalf_of: Vec<String>,
}

/// `[[agents]]`.
#[derive(Debug, Clone, Deserialize)]
pub struct AgentConfig {
    /// The agent's id in this deployment.
    pub id: String,
    /// Card file path, or an http(s) URL of the card or of the agent's base.
    pub card: String,
    /// JSON-RPC URL for lapse tasks; else from the card.
    #[serde(default)]
    pub endpoint: Option<String>,
    /// Credential the agent presents on its push webhook.
    pub push_token: String,
    /// The watcher's own credential on lapse tasks (§13.1).
    #[serde(default)]
    pub bearer: Option<String>,
    /// Tenant.
    #[serde(default = "default_tenant")]
    pub tenant: String,
    /// Submit lapse tasks even though the card says `keepsTime: true`.
    #[serde(default)]
    pub submit_lapses: bool,
    /// Follow this agent's origin tasks with `GetTask` while no probe promoted the agent to
    /// lifecycle-trusted, and check a lapse task's origin before sending it whether trusted or
    /// not (origin-task reconciliation). Default `true`; `false` for an agent that offers no
    /// `GetTask`.
    #[serde(default = "default_true")]
    pub reconcile: bool,
    /// Run the lifecycle probe (`a2a-watcher probe`: a task followed to its end and a second
    /// canceled with `CancelTask`, in 1.0 or 0.3 as the card offers) against the agent when it
    /// registers (its card read), and keep the descriptor per (agent, protocol version) in the
    /// store. Default
    /// `false`: a probe sends the agent a real task. Without a probe the agent is not
    /// lifecycle-trusted.
    #[serde(default)]
    pub probe: bool,
    /// Definitions of the Learnables authority this agent owns (their ids, in its tenant): a
    /// lesson taught into one with `expiresAt` raises its `lesson.review` as this agent, and
    /// the lapse task goes to it, when its card declares the kind `lesson.review` on subjects
    /// of type `lesson` (expectations-v1 §16). Otherwise the authority raises it and only the
    /// notification channels tell it. A definition has one owner per tenant. Default: none.
    #[serde(default)]
    pub learnables: Vec<String>,
    /// The states of a lapse task's Task that resolve its lapse's incident (expectations-v1
    /// §13.1; docs/interpretation.md "When a lapse is resolved"): A2A 1.0 wire names of terminal states
    /// (`TASK_STATE_COMPLETED`, `TASK_STATE_FAILED`, `TASK_STATE_CANCELED`,
    /// `TASK_STATE_REJECTED`). Default: `["TASK_STATE_COMPLETED"]` (a lapse task that failed or
    /// was canceled leaves the incident open for a person). Kept on each lapse task when it is
    /// recorded: a change applies to lapses recorded after it. `resolve_on = []`: no Task state
    /// resolves them (only the fact, a withdrawal or an operator's acknowledgement do).
    #[serde(default = "resolve_on_absent")]
    pub resolve_on: Option<Vec<String>>,
}

fn default_true() -> bool {
    true
}

/// `resolve_on` left out: `None`, which the lapse tasks read as `["TASK_STATE_COMPLETED"]`
/// (`watcher_runtime::resolution::RESOLVING_TASK_STATES`), told apart from `resolve_on = []`.
fn resolve_on_absent() -> Option<Vec<String>> {
    None
}

/// `[limits]`.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(default)]
pub struct LimitsConfig {
    /// Default 3.
    pub lineage_bound: u32,
    /// Default 100.
    pub max_open_per_subject: u64,
    /// Default 100000.
    pub max_open_per_agent: u64,
    /// Largest request body in bytes. Default 1048576 (over it: 413).
    pub body_bytes: usize,
    /// Seconds a request body may take to arrive. Default 30 (over it: 408).
    pub body_read_secs: u64,
    /// Deepest JSON nesting of a body (arrays and objects; at most 128). Default 64.
    pub json_depth: usize,
    /// Longest JSON string (member names too) in bytes as sent. Default 65536.
    pub string_bytes: usize,
    /// Most expectations in one artifact or status message. Default 100.
    pub expectations_per_artifact: usize,
    /// Most facts in one `POST /v1/facts` or carrier webhook payload. Default 1000.
    pub facts_per_request: usize,
    /// Most `corpus` entries in one `lessons:check`. Default 10000.
    pub check_corpus_entries: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        let s = watcher_core::settings::Settings::default();
        // The routers' own defaults (`watcher_http::Limits::default`); watcher-config does not
        // depend on watcher-http, so `watcher_host::deployment`'s tests check they agree.
        LimitsConfig {
            lineage_bound: s.lineage_bound,
            max_open_per_subject: s.max_open_per_subject,
            max_open_per_agent: s.max_open_per_agent,
            body_bytes: 1024 * 1024,
            body_read_secs: 30,
            json_depth: 64,
            string_bytes: 64 * 1024,
            expectations_per_artifact: 100,
            facts_per_request: 1000,
            check_corpus_entries: 10_000,
        }
    }
}

/// `[delivery]`: how lapse tasks reach agents (docs/howto/operating.md). Every key is optional.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(default)]
pub struct DeliveryConfig {
    /// Per-request timeout in seconds (connection and whole exchange). Default 10.
    pub timeout_secs: u64,
    /// How long after its first retryable failure (transport error, 5xx, 408, 429, a transient
    /// JSON-RPC error) a lapse task is still retried; then it is marked `failed`. ISO 8601.
    /// Default `PT24H`.
    pub give_up_after: IsoDuration,
    /// Backoff after the first failure, doubling with each further one (with jitter). Default
    /// `PT1S`.
    pub backoff_base: IsoDuration,
    /// Longest backoff between two attempts (an agent's `Retry-After` may ask for longer).
    /// Default `PT5M`.
    pub backoff_max: IsoDuration,
    /// The first `GetTask` poll of a lapse task the watcher follows (it asked for no push
    /// notifications) comes this long after delivery; later ones thin out up to `backoff_max`,
    /// until the task is terminal, needs a person, or has been followed for `give_up_after`.
    /// Default `PT10S`.
    pub poll_first: IsoDuration,
    /// Lapse tasks per agent per minute, sustained (§13.2). Default 600. 0 turns the limit off.
    pub per_minute: u32,
    /// Lapse tasks an agent may be sent at once after a quiet spell (the token bucket's size).
    /// Default 100. Excess waits; nothing is dropped.
    pub burst: u32,
    /// Lapse tasks in flight at once to one agent. Default 4.
    pub in_flight_per_agent: usize,
    /// Lapse tasks in flight at once over all agents. Default 64.
    pub in_flight: usize,
    /// Above 0, origin tasks of agents that are not lifecycle-trusted are followed with `GetTask`
    /// (origin-task reconciliation; kept in the store, so not bounded by this number). Default
    /// 10000; 0 turns reconciliation off (no polls, and no origin check before sending). Polls back off from `poll_first` to
    /// `backoff_max` and stop at a terminal state or after `give_up_after`.
    pub reconcile_origins: usize,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        let iso = |t: &str| IsoDuration::parse(t).expect("a valid built-in duration");
        DeliveryConfig {
            timeout_secs: 10,
            give_up_after: iso("PT24H"),
            backoff_base: iso("PT1S"),
            backoff_max: iso("PT5M"),
            poll_first: iso("PT10S"),
            per_minute: 600,
            burst: 100,
            in_flight_per_agent: 4,
            in_flight: 64,
            reconcile_origins: watcher_runtime::origins::DEFAULT_CAPACITY,
        }
    }
}

impl Config {
    /// Reads and checks a configuration file; relative paths become relative to its folder.
    ///
    /// # Errors
    /// [`ConfigError::Read`] for an unreadable file; [`ConfigError::InvalidFile`] naming the file
    /// for TOML errors (with line and column) and credentials that cannot be read; duplicate ids
    /// and unusable webhooks as their own variants.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut config = parse_warning_unknown(&text, &path.display().to_string(), Some(&base))
            .map_err(|e| ConfigError::InvalidFile {
                path: path.to_path_buf(),
                source: Box::new(e),
            })?;
        if config.database.is_relative() {
            config.database = base.join(&config.database);
        }
        for a in &mut config.agents {
            if !a.card.starts_with("http://")
                && !a.card.starts_with("https://")
                && !a.card.trim_start().starts_with('{')
                && Path::new(&a.card).is_relative()
            {
                a.card = base.join(&a.card).to_string_lossy().into_owned();
            }
        }
        config.check()?;
        Ok(config)
    }

    /// Parses a configuration held in memory (e.g. the Lambda functions' configuration secret);
    /// relative paths stay relative to the working directory.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] for TOML errors (with line and column) and credentials that
    /// cannot be read; duplicate ids and unusable webhooks as their own variants.
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        let config = parse_warning_unknown(text, "the configuration", None).map_err(|e| {
            ConfigError::Invalid {
                source: Box::new(e),
            }
        })?;
        config.check()?;
        Ok(config)
    }

    /// Built-in defaults: 127.0.0.1:8080, ./watcher.db, nobody registered.
    pub fn defaults() -> Config {
        Config {
            listen: default_listen(),
            database: default_database(),
            public_url: None,
            allow_private_endpoints: false,
            retention_days: default_retention(),
            sources: Vec::new(),
            agents: Vec::new(),
            operators: Vec::new(),
            teachers: Vec::new(),
            limits: LimitsConfig::default(),
            delivery: DeliveryConfig::default(),
            notify: Vec::new(),
        }
    }

    fn check(&self) -> Result<(), ConfigError> {
        let mut channels = std::collections::BTreeSet::new();
        for n in &self.notify {
            n.check()?;
            n.check_in(&self.agents, &self.teachers)?;
            if !channels.insert((n.tenant.as_str(), n.id.as_str())) {
                return Err(ConfigError::Notify {
                    id: n.id.clone(),
                    reason: format!("id: used twice in tenant {:?}", n.tenant),
                });
            }
        }
        let mut ids = std::collections::BTreeSet::new();
        for a in &self.agents {
            if !ids.insert(a.id.as_str()) {
                return Err(ConfigError::DuplicateAgent(a.id.clone()));
            }
        }
        for a in &self.agents {
            check_resolve_on(a)?;
        }
        let mut owned = std::collections::BTreeMap::new();
        for a in &self.agents {
            for d in &a.learnables {
                if let Some(other) = owned.insert((a.tenant.as_str(), d.as_str()), a.id.as_str()) {
                    return Err(ConfigError::DefinitionOwners {
                        definition: d.clone(),
                        tenant: a.tenant.clone(),
                        agents: (other.to_owned(), a.id.clone()),
                    });
                }
            }
        }
        let reserved = watcher_runtime::lesson_review::AUTHORITY_AGENT;
        let taken = |section, id: &str| {
            (id == reserved).then(|| ConfigError::ReservedId {
                section,
                id: id.to_owned(),
            })
        };
        let agents = self.agents.iter().map(|a| ("agents", a.id.as_str()));
        let sources = self.sources.iter().map(|s| ("sources", s.id.as_str()));
        if let Some(e) = agents.chain(sources).find_map(|(sec, id)| taken(sec, id)) {
            return Err(e);
        }
        // Webhook mappings and signatures are checked now, so a bad pointer or template stops
        // the start (contracts/serve.md "Carrier webhooks").
        for s in &self.sources {
            s.hook()?;
            // A signed request names its source only by the path: the id must be unambiguous.
            if s.signature.is_some() && self.sources.iter().filter(|o| o.id == s.id).count() > 1 {
                return Err(ConfigError::SignedSourceShared(s.id.clone()));
            }
        }
        Ok(())
    }
}

/// Checks that `agent.resolve_on` lists terminal A2A 1.0 `TaskState` wire names only.
fn check_resolve_on(agent: &AgentConfig) -> Result<(), ConfigError> {
    for state in agent.resolve_on.iter().flatten() {
        let parsed = a2a_types::TaskState::from_wire_str(state);
        if parsed.as_str() != state || !parsed.is_terminal() {
            return Err(ConfigError::ResolveOn {
                agent: agent.id.clone(),
                reason: format!(
                    "{state:?} is not a terminal task state; use TASK_STATE_COMPLETED, \
                     TASK_STATE_FAILED, TASK_STATE_CANCELED or TASK_STATE_REJECTED"
                ),
            });
        }
    }
    Ok(())
}

/// Parses the TOML, warning (on stderr and in the log) about every key this version does not
/// know — a typo such as `lisen` or `[[agent]]` would otherwise be silently ignored. Unknown keys
/// are not refused: contracts/serve.md says more keys may be added.
fn parse_warning_unknown(
    text: &str,
    origin: &str,
    base: Option<&Path>,
) -> Result<Config, ConfigError> {
    // Tokens from files or variables (`token_file`, `token_env`, …; crate::secrets). Only when
    // there are some is the text re-written, so TOML errors otherwise keep their positions.
    let mut resolved = None;
    if let Ok(mut table) = text.parse::<toml::Table>() {
        if crate::secrets::resolve(&mut table, base)? {
            resolved = Some(toml::to_string(&table)?);
        }
    }
    let text = resolved.as_deref().unwrap_or(text);
    let unknown = unknown_keys(text)?;
    for key in &unknown {
        let hint = match did_you_mean(key) {
            Some(known) => format!("did you mean `{known}`?"),
            None => "a typo?".to_owned(),
        };
        // Once: through the log when one is set up (serve's log is on stderr too, so both would
        // print it twice), else on stderr.
        if tracing::dispatcher::has_been_set() {
            tracing::warn!(key = %key, origin, "unknown configuration key `{key}` ignored ({hint})");
        } else {
            eprintln!("a2a-watcher: warning: unknown key `{key}` in {origin} is ignored ({hint})");
        }
    }
    Ok(toml::from_str(text)?)
}

impl Config {
    /// What a configuration that parses still lacks for a working watcher, in words, one line
    /// each: no agent (nothing can raise an expectation), no operator (nobody can read the
    /// record: the operator routes and the web page refuse everyone). Empty when it has both.
    /// `serve` logs each at start.
    pub fn gaps(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.agents.is_empty() {
            out.push(
                "no [[agents]] in the configuration: no agent can push, so no expectation can be raised".to_owned(),
            );
        }
        if self.operators.is_empty() {
            out.push(
                "no [[operators]] in the configuration: the operator routes (/v1/subjects, /v1/lapses, /v1/agents) and the web page (/ui) refuse everyone".to_owned(),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_contract() {
        let c = Config::from_toml("").unwrap();
        assert_eq!(c.listen, "127.0.0.1:8080");
        assert_eq!(c.database, PathBuf::from("watcher.db"));
        assert_eq!(c.retention_days, 30);
        assert_eq!(c.limits.lineage_bound, 3);
        assert_eq!(c.limits.max_open_per_subject, 100);
        assert_eq!(c.limits.max_open_per_agent, 100_000);
        assert_eq!(c.delivery.give_up_after.as_str(), "PT24H");
        assert_eq!(c.delivery.backoff_base.as_str(), "PT1S");
        assert_eq!(c.delivery.backoff_max.as_str(), "PT5M");
        assert_eq!(c.delivery.poll_first.as_str(), "PT10S");
        assert_eq!((c.delivery.per_minute, c.delivery.burst), (600, 100));
        assert_eq!(
            (c.delivery.in_flight_per_agent, c.delivery.in_flight),
            (4, 64)
        );
        assert_eq!(c.delivery.timeout_secs, 10);
        assert_eq!(c.delivery.reconcile_origins, 10_000);
    }

    #[test]
    fn reconciliation_and_probe_settings() {
        let agent = "[[agents]]\nid = \"a\"\ncard = \"x\"\npush_token = \"p\"\n";
        let c = Config::from_toml(agent).unwrap();
        assert!(c.agents[0].reconcile, "reconciled unless turned off");
        assert!(
            !c.agents[0].probe,
            "a probe sends a real task: only when asked"
        );
        let c = Config::from_toml(&format!(
            "[delivery]\nreconcile_origins = 0\n{agent}reconcile = false\nprobe = true\n"
        ))
        .unwrap();
        assert_eq!(c.delivery.reconcile_origins, 0);
        assert!(!c.agents[0].reconcile);
        assert!(c.agents[0].probe);
    }

    #[test]
    fn the_contract_example_parses_with_tenants_defaulted() {
        let c = Config::from_toml(
            r#"
listen = "127.0.0.1:8080"
database = "watcher.db"
public_url = "https://watcher.example"
allow_private_endpoints = false
retention_days = 30
[[sources]]
id = "carrier-feed:emirates"
token = "src-token-1"
tenant = "default"
[[agents]]
id = "booking"
card = "agents/booking-card.json"
endpoint = "http://127.0.0.1:9999/"
push_token = "push-token-1"
bearer = "watcher-token"
[[operators]]
id = "ops-desk"
token = "ops-token-1"
"#,
        )
        .unwrap();
        assert_eq!(c.sources[0].tenant, "default");
        assert_eq!(c.agents[0].tenant, "default");
        assert_eq!(c.agents[0].bearer.as_deref(), Some("watcher-token"));
        assert_eq!(c.public_url.as_deref(), Some("https://watcher.example"));
    }

    #[test]
    fn relative_paths_follow_the_file_and_inline_cards_stay() {
        let dir = std::env::temp_dir().join(format!("watcher-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("w.toml");
        std::fs::write(
            &path,
            "[[agents]]\nid = \"a\"\ncard = \"cards/a.json\"\npush_token = \"p\"\n[[agents]]\nid = \"b\"\ncard = '{\"name\": \"b\"}'\npush_token = \"q\"\n",
        )
        .unwrap();
        let c = Config::load(&path).unwrap();
        assert_eq!(c.database, dir.join("watcher.db"));
        assert_eq!(PathBuf::from(&c.agents[0].card), dir.join("cards/a.json"));
        assert!(c.agents[1].card.starts_with('{'));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn duplicate_agent_ids_are_refused() {
        let err = Config::from_toml(
            "[[agents]]\nid = \"a\"\ncard = \"x\"\npush_token = \"p\"\n[[agents]]\nid = \"a\"\ncard = \"y\"\npush_token = \"q\"\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("used twice"), "{err}");
    }

    #[test]
    fn resolve_on_takes_terminal_states_only() {
        let agent = "[[agents]]\nid = \"a\"\ncard = \"x\"\npush_token = \"p\"\n";
        let ok = Config::from_toml(&format!(
            "{agent}resolve_on = [\"TASK_STATE_COMPLETED\", \"TASK_STATE_CANCELED\"]\n"
        ))
        .expect("terminal states");
        assert_eq!(
            ok.agents[0].resolve_on.as_deref(),
            Some(
                &[
                    "TASK_STATE_COMPLETED".to_owned(),
                    "TASK_STATE_CANCELED".to_owned()
                ][..]
            )
        );
        // Absent: the default; empty: no state resolves.
        let absent = Config::from_toml(agent).expect("no resolve_on");
        assert_eq!(absent.agents[0].resolve_on, None);
        let none = Config::from_toml(&format!("{agent}resolve_on = []\n")).expect("empty");
        assert_eq!(none.agents[0].resolve_on, Some(Vec::new()));
        for bad in ["TASK_STATE_WORKING", "completed", "TASK_STATE_DONE"] {
            let err =
                Config::from_toml(&format!("{agent}resolve_on = [\"{bad}\"]\n")).expect_err(bad);
            assert_eq!(
                err.to_string(),
                format!(
                    "agents: agent \"a\": resolve_on: \"{bad}\" is not a terminal task state; use \
                     TASK_STATE_COMPLETED, TASK_STATE_FAILED, TASK_STATE_CANCELED or \
                     TASK_STATE_REJECTED"
                )
            );
        }
    }

    #[test]
    fn the_authoritys_id_is_refused_for_an_agent_and_a_source() {
        for toml in [
            "[[agents]]\nid = \"learnables-authority\"\ncard = \"x\"\npush_token = \"p\"\n",
            "[[sources]]\nid = \"learnables-authority\"\ntoken = \"t\"\n",
        ] {
            let err = Config::from_toml(toml).unwrap_err();
            assert!(
                err.to_string().contains("the Learnables authority's"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_definition_has_one_owner_per_tenant() {
        let two = "[[agents]]\nid = \"a\"\ncard = \"x\"\npush_token = \"p\"\nlearnables = [\"triage\"]\n\
                   [[agents]]\nid = \"b\"\ncard = \"y\"\npush_token = \"q\"\nlearnables = [\"triage\"]\n";
        let err = Config::from_toml(two).unwrap_err();
        assert!(err.to_string().contains("one owner"), "{err}");
        let other_tenant = two.replace(
            "learnables = [\"triage\"]\n[[agents]]",
            "learnables = [\"triage\"]\ntenant = \"t2\"\n[[agents]]",
        );
        let ok = Config::from_toml(&other_tenant).unwrap();
        assert_eq!(ok.agents[0].learnables, ["triage"]);
    }

    #[test]
    fn a_configuration_without_agents_or_operators_says_so() {
        let gaps = Config::from_toml("").unwrap().gaps();
        assert_eq!(gaps.len(), 2, "{gaps:?}");
        assert!(gaps[0].starts_with("no [[agents]]"), "{gaps:?}");
        assert!(gaps[1].starts_with("no [[operators]]"), "{gaps:?}");
        let full = Config::from_toml(
            "[[agents]]\nid = \"a\"\ncard = \"x\"\npush_token = \"p\"\n[[operators]]\nid = \"o\"\ntoken = \"t\"\n",
        )
        .unwrap();
        assert!(full.gaps().is_empty(), "{:?}", full.gaps());
    }

    #[test]
    fn unknown_keys_get_the_closest_known_one() {
        assert_eq!(did_you_mean("databse").as_deref(), Some("database"));
        assert_eq!(did_you_mean("lisen").as_deref(), Some("listen"));
        assert_eq!(
            did_you_mean("agents.0.push_tokn").as_deref(),
            Some("agents.0.push_token")
        );
        assert_eq!(
            did_you_mean("delivery.per_minut").as_deref(),
            Some("delivery.per_minute")
        );
        // [[agent]] for [[agents]]: the table's name.
        assert_eq!(did_you_mean("agent").as_deref(), Some("agents"));
        // Nothing near: no guess.
        assert_eq!(did_you_mean("colour"), None);
        assert_eq!(did_you_mean("limits.zzzzzz"), None);
    }

    #[test]
    fn unknown_keys_are_named() {
        let keys = unknown_keys(
            "lisen = \"x\"\n[[agent]]\nid = \"a\"\n[[sources]]\nid = \"s\"\ntoken = \"t\"\ntokn = \"u\"\n",
        )
        .unwrap();
        assert_eq!(keys, ["lisen", "agent", "sources.0.tokn"]);
        assert!(unknown_keys("listen = \"127.0.0.1:1\"").unwrap().is_empty());
    }

    #[test]
    fn the_contract_webhook_source_parses_and_is_checked() {
        let c = Config::from_toml(
            r#"
[[sources]]
id = "carrier-feed:tracker"
token = "src-token-2"
[sources.signature]
header = "X-Hmac-Signature"
algorithm = "hmac-sha256"
encoding = "hex"
secret = "shared-secret"
timestamp_header = "X-Timestamp"
tolerance = "PT5M"

[[sources.mappings]]
name = "tracker.updated"
when = { pointer = "/description", equals = "tracker.updated" }
each = "/result/tracking_details"
fact_key = "shipment.{/status}:{^/result/tracking_code}"
observed_at = "/datetime"
subject = { type = "shipment", id = "{^/result/tracking_code}" }
"#,
        )
        .unwrap();
        let hook = c.sources[0].hook().unwrap();
        assert!(hook.signature.is_some());
        assert_eq!(hook.mappings.iter().count(), 1);
        assert_eq!(
            unknown_keys("[[sources]]\nid = \"s\"\ntoken = \"t\"\n[[sources.mappings]]\nname = \"m\"\nwhen = [{ pointer = \"/a\", equals = 1, equal = 2 }]\nfact_key = \"k\"\nobserved_at = \"/a\"\nobservedAt = \"/b\"\n").unwrap(),
            ["sources.0.mappings.0.when.?.0.equal", "sources.0.mappings.0.observedAt"]
        );
        assert!(unknown_keys("[[sources]]\nid = \"s\"\ntoken = \"t\"\n[[sources.mappings]]\nname = \"m\"\nfact_key = \"k\"\nobserved_at = \"/a\"\n")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn a_bad_mapping_stops_the_load_naming_source_mapping_and_field() {
        let err = Config::from_toml(
            "[[sources]]\nid = \"carrier-x\"\ntoken = \"t\"\n[[sources.mappings]]\nname = \"m1\"\nfact_key = \"k:{/a}\"\nobserved_at = \"at\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("\"carrier-x\"") && err.contains("\"m1\"") && err.contains("observed_at"),
            "{err}"
        );
        let err = Config::from_toml(
            "[[sources]]\nid = \"s\"\ntoken = \"t\"\n[sources.signature]\nheader = \"X\"\nalgorithm = \"hmac-sha256\"\nencoding = \"hex\"\nsecret = \"k\"\n[[sources]]\nid = \"s\"\ntoken = \"u\"\ntenant = \"other\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("signature") && err.contains("\"s\""), "{err}");
    }

    #[test]
    fn toml_errors_name_the_place() {
        let err = Config::from_toml("listen = ").unwrap_err();
        assert!(format!("{err:#}").contains("line 1"), "{err:#}");
    }
}
