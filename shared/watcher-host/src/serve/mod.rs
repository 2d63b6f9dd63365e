//! `a2a-watcher serve` (feature `serve`): the whole watcher as one process (contracts/serve.md):
//! the HTTP API, the SQLite store (one `serve` per database: [`lock`]), timers that survive
//! restarts ([`timers`]), the delivery lanes ([`lanes`]), origin reconciliation, the card refresh
//! ([`cards`]), the probe on registration, retention ([`retention`]) and `GET /metrics`
//! ([`metrics`]). Which loops start is the service list's to say ([`loops`]).

pub mod cards;
pub mod lanes;
pub mod lock;
pub mod loops;
pub mod metrics;
pub mod retention;
pub mod timers;

use std::sync::Arc;

use crate::load_deployment;
use anyhow::Context;
use learnables_store::SqliteDefinitionStore;
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify};
use watcher_config::Config;
use watcher_core::ids::{AgentId, Tenant};
use watcher_delivery::endpoint::SharedEndpoints;
use watcher_http::{learnables_router_with, watcher_router_with, AppState, LearnablesState};
use watcher_runtime::clock::{Clock, SystemClock};
use watcher_runtime::store::Store;
use watcher_runtime::watcher::Watcher;
use watcher_store_sqlite::SqliteStore;

use crate::services::Placement;
use lanes::start_lanes;
use lock::DatabaseLock;
use loops::Loop;
use retention::retention_loop;
use timers::timer_loop;

/// A watcher started by [`start`]. It holds its database's lock ([`lock`]) until it is shut
/// down or dropped.
pub struct Running {
    /// The bound address.
    pub addr: std::net::SocketAddr,
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    placements: Vec<Placement>,
    loops: Vec<Loop>,
    _lock: DatabaseLock,
}

impl Running {
    /// Stops serving, lets in-flight requests finish, and stops the loops; then frees the
    /// database for the next `serve`.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
    }

    /// Every service of `serve` as this start placed it (logged at start, one line each).
    pub fn placements(&self) -> &[Placement] {
        &self.placements
    }

    /// The loops this start started, in order: exactly [`loops::loops_for`] of
    /// [`Running::placements`].
    pub fn loops(&self) -> &[Loop] {
        &self.loops
    }
}

/// Runs until SIGINT or SIGTERM. Prints `listening on http://ADDR` once bound.
///
/// # Errors
/// Configuration, card, database or bind failures, each naming what failed.
pub async fn run(config: Config, used_defaults: bool) -> anyhow::Result<()> {
    if used_defaults {
        // Once: serve's log is on stderr, so a second eprintln would print it twice.
        tracing::warn!("no --config given: using built-in defaults (127.0.0.1:8080, ./watcher.db, no agents, sources or operators)");
    } else {
        for gap in config.gaps() {
            tracing::warn!("{gap}");
        }
    }
    let running = start(config).await?;
    println!("listening on http://{}", running.addr);
    shutdown_signal().await;
    tracing::info!("shutting down");
    running.shutdown().await;
    Ok(())
}

/// Takes the database's lock, opens the store, loads the agents, binds, and starts the loops of
/// the services that run ([`crate::services::serve_at_start`], [`loops::loops_for`]): the HTTP
/// server, the timer loop and the delivery lanes always; origin reconciliation unless
/// `[delivery] reconcile_origins = 0`; the registration probe when an agent has
/// `probe = true`; retention unless `retention_days = 0`; the card refresh while a card is
/// unread; the notifier when a `[[notify]]` channel is configured.
///
/// # Errors
/// Another `serve` holds the database ([`lock::LockError::InUse`], naming its pid);
/// configuration, card, database or bind failures, each naming what failed.
pub async fn start(config: Config) -> anyhow::Result<Running> {
    // One serve per database, refused before the database is touched.
    let database_lock = DatabaseLock::acquire(&config.database, jiff::Timestamp::now())?;
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(&config.database).with_context(|| {
            format!("Failed to open the database {}", config.database.display())
        })?);
    let deployment = load_deployment(&config, &*store, SystemClock.now()).await?;
    // Origin-task reconciliation (issue 11 item 5): its bound and first poll.
    // Followed origin tasks are kept in the database, as on AWS, so a restart forgets none.
    let origins = deployment.directory.origins();
    origins.set_capacity(config.delivery.reconcile_origins);
    origins.set_first_poll(crate::retry_policy(&config.delivery).poll_first);
    deployment
        .directory
        .set_origins_in_store(config.delivery.reconcile_origins > 0);
    // Notification channels (issue 25): built now, so a bad secret stops the start.
    let channels = crate::deployment::notify_channels(&config)?;
    refuse_sns(&channels)?;
    for c in channels
        .iter()
        .filter(|c| c.secret.is_none() && c.format == watcher_notify::Format::StandardWebhooks)
    {
        tracing::warn!(channel = %c.id, "notification channel {} has no secret: its notifications are not signed (set secret, secret_file or secret_env)", c.id);
    }
    let prometheus =
        Arc::new(metrics::Prometheus::new().with_channels(channels.iter().map(|c| c.id.as_str())));
    // One serve process per database file: a restart takes back its predecessor's claims at once.
    let sender =
        std::fs::canonicalize(&config.database).unwrap_or_else(|_| config.database.clone());
    let submitter = crate::submitter(&config.delivery)?
        .with_recorder(prometheus.clone())
        .with_sender(format!("serve:{}", sender.display()));
    let lanes = crate::lane_settings(&config.delivery);
    let endpoints = SharedEndpoints::new(deployment.endpoints);
    let lane_directory = deployment.directory.clone();
    let pending = deployment.pending;
    let configured: Vec<(Tenant, AgentId)> = config
        .agents
        .iter()
        .filter_map(|a| {
            Some((
                Tenant::parse(a.tenant.clone()).ok()?,
                AgentId::parse(a.id.clone()).ok()?,
            ))
        })
        .collect();
    let watcher = Arc::new(
        Watcher::new(store.clone(), deployment.directory, deployment.settings)
            .with_recorder(prometheus.clone()),
    );
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let wake = Arc::new(Notify::new());
    let credentials = Arc::new(deployment.credentials);
    let state = AppState {
        watcher: watcher.clone(),
        credentials: credentials.clone(),
        clock: clock.clone(),
        wake: wake.clone(),
    };
    // The Learnables authority shares the database file (its own table) and the credentials.
    let definitions = Arc::new(SqliteDefinitionStore::open(&config.database).with_context(
        || {
            format!(
                "Failed to open the definitions table in {}",
                config.database.display()
            )
        },
    )?);
    let limits = crate::http_limits(&config.limits);
    let app = watcher_router_with(state, limits)
        .merge(learnables_router_with(
            LearnablesState {
                store: definitions,
                credentials,
                clock: clock.clone(),
                registry: Arc::new(learnables::Registry::builtin()),
                reviews: Some(Arc::new(watcher_http::lesson_reviews::WatcherReviews {
                    owners: crate::learnable_owners(&config)?,
                    watcher: watcher.clone(),
                    clock: clock.clone(),
                    wake: wake.clone(),
                })),
            },
            limits,
        ))
        .merge(
            axum::Router::new()
                .route("/metrics", axum::routing::get(metrics::metrics))
                .with_state(metrics::MetricsState {
                    prometheus: prometheus.clone(),
                    watcher: watcher.clone(),
                    clock: clock.clone(),
                }),
        )
        .fallback(watcher_http::not_found)
        .method_not_allowed_fallback(watcher_http::method_not_allowed);
    let listener = TcpListener::bind(&config.listen)
        .await
        .with_context(|| format!("Failed to listen on {}", config.listen))?;
    let addr = listener
        .local_addr()
        .context("Failed to read the bound address")?;
    tracing::info!(%addr, "a2a-watcher serving");
    // Every declared service, one line each; one the configuration turns off says why. The
    // same list says which loops start below.
    let placements = crate::services::serve_at_start(&config, pending.len());
    crate::services::log_placements("serve", &placements);
    let wanted = loops::loops_for(&placements);
    let mut started: Vec<Loop> = Vec::new();
    let mut tasks = Vec::new();

    let (stop_tx, stop_rx) = watch::channel(false);
    let reconciler = Arc::new(watcher_delivery::reconcile::Reconciler::new(
        watcher.clone(),
        submitter.client().clone(),
        Arc::new(endpoints.clone()),
        *submitter.policy(),
        clock.clone(),
        wake.clone(),
    ));
    if wanted.contains(&Loop::Http) {
        let mut server_stop = stop_rx.clone();
        tasks.push(tokio::spawn(async move {
            let result = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = server_stop.changed().await;
                })
                .await;
            if let Err(e) = result {
                tracing::error!(error = %e, "the HTTP server failed");
            }
        }));
        started.push(Loop::Http);
    }
    if wanted.contains(&Loop::Timers) {
        tasks.push(tokio::spawn(timer_loop(
            watcher.clone(),
            clock.clone(),
            wake.clone(),
            stop_rx.clone(),
        )));
        started.push(Loop::Timers);
    }
    if wanted.contains(&Loop::Reconciler) {
        tasks.push(tokio::spawn(reconciler.clone().run(stop_rx.clone())));
        started.push(Loop::Reconciler);
    }
    // The lifecycle probe on registration (`probe = true`), for agents whose card was read now;
    // the others are probed when the card refresh reads their card.
    if wanted.contains(&Loop::Probe) {
        for a in config.agents.iter().filter(|a| a.probe) {
            let registered = Tenant::parse(a.tenant.clone())
                .ok()
                .zip(AgentId::parse(a.id.clone()).ok())
                .is_some_and(|(t, id)| lane_directory.get(&t, &id).is_some());
            if registered {
                let (a, store, directory, clock) = (
                    a.clone(),
                    store.clone(),
                    lane_directory.clone(),
                    clock.clone(),
                );
                tasks.push(tokio::spawn(async move {
                    crate::probe::on_registration(&a, &*store, &directory, &*clock).await;
                }));
            }
        }
        started.push(Loop::Probe);
    }
    if wanted.contains(&Loop::Retention) {
        tasks.push(tokio::spawn(retention_loop(
            store.clone(),
            clock.clone(),
            config.retention_days,
            stop_rx.clone(),
        )));
        started.push(Loop::Retention);
    } else {
        tracing::info!("retention_days = 0: keeping every record forever");
    }
    if wanted.contains(&Loop::CardRefresh) {
        tasks.push(tokio::spawn(cards::refresh_loop(
            config.clone(),
            pending,
            store.clone(),
            lane_directory.clone(),
            endpoints.clone(),
            clock.clone(),
            wake.clone(),
            stop_rx.clone(),
        )));
        started.push(Loop::CardRefresh);
    }
    if wanted.contains(&Loop::Notifier) {
        let transport =
            watcher_notify::transport::HttpTransport::new().map_err(anyhow::Error::msg)?;
        let notifier = Arc::new(
            watcher_notify::Notifier::new(
                store.clone(),
                channels,
                Arc::new(transport),
                clock.clone(),
                config.public_url.clone(),
            )
            .with_directory(lane_directory.clone())
            .with_recorder(prometheus.clone()),
        );
        tasks.push(tokio::spawn(notifier.run(stop_rx.clone())));
        started.push(Loop::Notifier);
    }
    if wanted.contains(&Loop::Lanes) {
        tasks.extend(start_lanes(
            store.clone(),
            submitter,
            endpoints,
            configured,
            &lane_directory,
            clock.clone(),
            wake.clone(),
            stop_rx,
            lanes,
            Some(reconciler),
        ));
        started.push(Loop::Lanes);
    }
    tracing::info!(
        loops = %started.iter().map(|l| l.name()).collect::<Vec<_>>().join(", "),
        "loops started from the service list"
    );
    Ok(Running {
        addr,
        stop: stop_tx,
        tasks,
        placements,
        loops: started,
        _lock: database_lock,
    })
}

/// `serve` has no SNS client: a `format = "sns"` channel stops the start, saying where it runs.
fn refuse_sns(channels: &[watcher_notify::Channel]) -> anyhow::Result<()> {
    match channels
        .iter()
        .find(|c| c.format == watcher_notify::Format::Sns)
    {
        Some(c) => anyhow::bail!(
            "notify: channel {:?}: format = \"sns\" publishes to an SNS topic from the AWS deployment only; serve has no SNS client (use a webhook, Slack, Teams or email channel)",
            c.id
        ),
        None => Ok(()),
    }
}

/// SIGINT or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::{Runs, Service};
    use std::collections::BTreeSet;

    /// `text` (TOML) listening on a free port, with its database in a new folder.
    fn config_in_new_folder(text: &str) -> Config {
        let dir = std::env::temp_dir().join(format!(
            "a2a-watcher-serve-unit-{}-{}",
            std::process::id(),
            jiff::Timestamp::now().as_nanosecond()
        ));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        let mut config = Config::from_toml(&format!("listen = \"127.0.0.1:0\"\n{text}"))
            .expect("a configuration");
        config.database = dir.join("watcher.db");
        config
    }

    /// A second `serve` on the database of a running one is refused at start, naming the
    /// database and the first's pid; once the first stops, the database is free again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_second_serve_on_one_database_is_refused_naming_the_first() {
        let config = config_in_new_folder("");
        let first = start(config.clone()).await.expect("the first serve");
        let Err(refused) = start(config.clone()).await else {
            panic!("a second serve started on the same database")
        };
        match refused.downcast_ref::<lock::LockError>() {
            Some(lock::LockError::InUse {
                database, holder, ..
            }) => {
                assert_eq!(
                    database,
                    &std::fs::canonicalize(&config.database).expect("the database exists")
                );
                assert_eq!(holder.as_ref().map(|h| h.pid), Some(std::process::id()));
            }
            _ => panic!("not refused for the lock: {refused:#}"),
        }
        let text = format!("{refused:#}");
        assert!(
            text.contains("watcher.db") && text.contains(&format!("pid {}", std::process::id())),
            "{text}"
        );
        first.shutdown().await;
        let again = start(config.clone())
            .await
            .expect("free once the first stopped");
        again.shutdown().await;
        if let Some(dir) = config.database.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    /// The loops `serve` starts are exactly those of the services its list runs: each loop
    /// started carries a service that runs, each service that runs has its loop started, and a
    /// service the configuration (or the start) turns off starts none.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_loops_started_are_those_of_the_services_the_list_runs() {
        let defaults = config_in_new_folder("");
        // An agent whose card cannot be read now (nothing listens on port 1), probed when it
        // registers, a notification channel, and the two settings that turn services off.
        let turned = config_in_new_folder(concat!(
            "retention_days = 0\n",
            "allow_private_endpoints = true\n",
            "[delivery]\nreconcile_origins = 0\n",
            "[[agents]]\nid = \"booking\"\ncard = \"http://127.0.0.1:1/card.json\"\n",
            "endpoint = \"http://127.0.0.1:1/\"\npush_token = \"push\"\nprobe = true\n",
            "[[notify]]\nid = \"hook\"\nurl = \"http://127.0.0.1:1/hook\"\n",
        ));
        let cases = [
            (
                defaults,
                vec![
                    Loop::Http,
                    Loop::Timers,
                    Loop::Reconciler,
                    Loop::Retention,
                    Loop::Lanes,
                ],
                vec![Service::CardRefresh, Service::Probe, Service::Notifications],
            ),
            (
                turned,
                vec![
                    Loop::Http,
                    Loop::Timers,
                    Loop::Probe,
                    Loop::CardRefresh,
                    Loop::Notifier,
                    Loop::Lanes,
                ],
                vec![Service::OriginReconciliation, Service::Retention],
            ),
        ];
        for (config, loops, off) in cases {
            let running = start(config.clone()).await.expect("serve starts");
            assert_eq!(running.loops(), loops.as_slice());
            let started: BTreeSet<Loop> = running.loops().iter().copied().collect();
            assert_eq!(started, loops::loops_for(running.placements()));
            for p in running.placements() {
                let carried = Loop::ALL
                    .into_iter()
                    .filter(|l| l.carries().contains(&p.service));
                match p.runs {
                    Runs::At(_) => assert!(
                        carried.clone().any(|l| started.contains(&l)),
                        "{:?} runs but none of its loops started",
                        p.service
                    ),
                    _ => assert!(off.contains(&p.service), "{:?} is {:?}", p.service, p.runs),
                }
            }
            for l in running.loops() {
                assert!(
                    running
                        .placements()
                        .iter()
                        .any(|p| matches!(p.runs, Runs::At(_)) && l.carries().contains(&p.service)),
                    "{l:?} started for no service that runs"
                );
            }
            running.shutdown().await;
            if let Some(dir) = config.database.parent() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }

    #[test]
    fn an_sns_channel_stops_serve_saying_where_it_runs() {
        let config = Config::from_toml(
            "[[agents]]\nid = \"booking\"\ncard = \"card.json\"\npush_token = \"t\"\n[[notify]]\nid = \"hook\"\nurl = \"https://hooks.example.test/x\"\n[[notify]]\nid = \"topic\"\nformat = \"sns\"\nurl = \"arn:aws:sns:us-east-1:123456789012:lapses\"\n",
        )
        .unwrap();
        let channels: Vec<_> = config
            .notify
            .iter()
            .map(|c| watcher_notify::Channel::from_config(c).unwrap())
            .collect();
        let e = refuse_sns(&channels).unwrap_err().to_string();
        assert!(
            e.starts_with("notify: channel \"topic\": format = \"sns\" publishes to an SNS topic from the AWS deployment only"),
            "{e}"
        );
        assert!(refuse_sns(&channels[..1]).is_ok());
    }
}
