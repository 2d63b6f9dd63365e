//! `a2a-watcher serve`: the whole watcher as one process (contracts/serve.md): the HTTP API, the
//! SQLite store, timers that survive restarts, the lapse-task submitter, and retention.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use learnables_store::SqliteDefinitionStore;
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify};
use watcher_config::Config;
use watcher_core::ids::{AgentId, Tenant};
use watcher_delivery::endpoint::SharedEndpoints;
use watcher_host::load_deployment;
use watcher_http::{learnables_router_with, watcher_router_with, AppState, LearnablesState};
use watcher_runtime::clock::{Clock, SystemClock};
use watcher_runtime::store::{DueTimer, Store};
use watcher_runtime::watcher::{Applied, Watcher};
use watcher_store_sqlite::SqliteStore;

use crate::delivery::start_lanes;

/// Longest the timer and delivery loops sleep before looking again: a safety net under the
/// wake-ups (the record, not the in-memory wait, is what decides).
const MAX_IDLE: Duration = Duration::from_secs(1);

/// How often the retention loop purges (expectations-v1 §14); it also purges once at start.
const PURGE_EVERY: Duration = Duration::from_secs(3600);

/// A watcher started by [`start`].
pub struct Running {
    /// The bound address.
    pub addr: std::net::SocketAddr,
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Running {
    /// Stops serving, lets in-flight requests finish, and stops the loops.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
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

/// Opens the store, loads the agents, binds, and starts the HTTP server, the timer loop, the
/// delivery loop and (unless `retention_days` is 0) the retention loop.
///
/// # Errors
/// Configuration, card, database or bind failures, each naming what failed.
pub async fn start(config: Config) -> anyhow::Result<Running> {
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(&config.database).with_context(|| {
            format!("Failed to open the database {}", config.database.display())
        })?);
    let deployment = load_deployment(&config, &*store, SystemClock.now()).await?;
    // Origin-task reconciliation (issue 11 item 5): its bound and first poll.
    // Followed origin tasks are kept in the database, as on AWS, so a restart forgets none.
    let origins = deployment.directory.origins();
    origins.set_capacity(config.delivery.reconcile_origins);
    origins.set_first_poll(watcher_host::retry_policy(&config.delivery).poll_first);
    deployment
        .directory
        .set_origins_in_store(config.delivery.reconcile_origins > 0);
    let prometheus = Arc::new(crate::metrics::Prometheus::new());
    // One serve process per database file: a restart takes back its predecessor's claims at once.
    let sender =
        std::fs::canonicalize(&config.database).unwrap_or_else(|_| config.database.clone());
    let submitter = watcher_host::submitter(&config.delivery)?
        .with_recorder(prometheus.clone())
        .with_sender(format!("serve:{}", sender.display()));
    let lanes = watcher_host::lane_settings(&config.delivery);
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
    let limits = watcher_host::http_limits(&config.limits);
    let app = watcher_router_with(state, limits)
        .merge(learnables_router_with(
            LearnablesState {
                store: definitions,
                credentials,
                clock: clock.clone(),
                registry: Arc::new(learnables::Registry::builtin()),
            },
            limits,
        ))
        .merge(
            axum::Router::new()
                .route("/metrics", axum::routing::get(crate::metrics::metrics))
                .with_state(crate::metrics::MetricsState {
                    prometheus,
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
    // Every declared service, one line each; one the configuration turns off says why.
    watcher_host::services::log_placements(
        "serve",
        &watcher_host::services::serve_as_configured(&config),
    );

    let (stop_tx, stop_rx) = watch::channel(false);
    let reconciler = Arc::new(watcher_delivery::reconcile::Reconciler::new(
        watcher.clone(),
        submitter.client().clone(),
        Arc::new(endpoints.clone()),
        *submitter.policy(),
        clock.clone(),
        wake.clone(),
    ));
    let mut server_stop = stop_rx.clone();
    let server = tokio::spawn(async move {
        let result = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = server_stop.changed().await;
            })
            .await;
        if let Err(e) = result {
            tracing::error!(error = %e, "the HTTP server failed");
        }
    });
    let timers = tokio::spawn(timer_loop(
        watcher.clone(),
        clock.clone(),
        wake.clone(),
        stop_rx.clone(),
    ));
    let mut tasks = vec![server, timers];
    tasks.push(tokio::spawn(reconciler.clone().run(stop_rx.clone())));
    // The lifecycle probe on registration (`probe = true`), for agents whose card was read now;
    // the others are probed when the card refresh reads their card.
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
    if config.retention_days > 0 {
        tasks.push(tokio::spawn(retention_loop(
            store.clone(),
            clock.clone(),
            config.retention_days,
            stop_rx.clone(),
        )));
    } else {
        tracing::info!("retention_days = 0: keeping every record forever");
    }
    if !pending.is_empty() {
        tasks.push(tokio::spawn(crate::cards::refresh_loop(
            config.clone(),
            pending,
            store.clone(),
            lane_directory.clone(),
            endpoints.clone(),
            clock.clone(),
            wake.clone(),
            stop_rx.clone(),
        )));
    }
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
    Ok(Running {
        addr,
        stop: stop_tx,
        tasks,
    })
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

/// Fires due deadlines and horizons. On start this evaluates everything that fell due while the
/// process was down, at once and late (§10.1), from the store's deadline index. What the firings
/// queue is handed to the delivery lanes in small groups as they are committed
/// ([`Watcher::fire_due_handing_over`]).
async fn timer_loop(
    watcher: Arc<Watcher<dyn Store>>,
    clock: Arc<dyn Clock>,
    wake: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let now = clock.now();
        // The delivery lanes are woken after each small group of firings that queued a lapse
        // task, so a burst is delivered as it is decided, not once its last lapse is committed.
        let mut hand_over = |group: &[(DueTimer, Applied)]| {
            if group.iter().any(|(_, a)| !a.outbox.is_empty()) {
                wake.notify_waiters();
            }
        };
        // Fired together in each group (the SQLite store takes raising-order numbers and
        // commits in the order asked, so the firing order is kept): one sync per group.
        match watcher
            .fire_due_handing_over(now, true, &mut hand_over)
            .await
        {
            Ok(fired) if !fired.is_empty() => tracing::debug!(
                fired = fired.len(),
                ms = (clock.now().as_nanos() - now.as_nanos()) / 1_000_000,
                "fired due timers"
            ),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "firing due timers failed; will retry"),
        }
        let wait = match watcher.store.next_timer().await {
            Ok(Some(t)) => {
                let ns = t.at.as_nanos() - clock.now().as_nanos();
                Duration::from_nanos(ns.clamp(1_000_000, MAX_IDLE.as_nanos() as i128) as u64)
            }
            _ => MAX_IDLE,
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {},
            () = wake.notified() => {},
            _ = stop.changed() => return,
        }
    }
}

/// Forgets what the retention period allows (expectations-v1 §14, serve.md `retention_days`):
/// once at start, then every [`PURGE_EVERY`]. The SQLite store deletes in small batches and
/// frees the connection between them, so requests go on during a large purge. A failed purge
/// stops at the failing batch (earlier batches' deletions stand; the rule allowed them); it is
/// logged and tried again at the next round.
async fn retention_loop(
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    retention_days: u32,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        if let Some(before) = watcher_runtime::retention::purge_before(clock.now(), retention_days)
        {
            match store.purge(before).await {
                Ok(report) => tracing::info!(
                    %before,
                    retention_days,
                    subjects = report.subjects,
                    outbox = report.outbox,
                    rejections = report.rejections,
                    tasks = report.tasks,
                    "retention purge"
                ),
                Err(e) => {
                    tracing::error!(error = %e, %before, "retention purge failed; will retry")
                }
            }
        }
        tokio::select! {
            () = tokio::time::sleep(PURGE_EVERY) => {},
            _ = stop.changed() => return,
        }
    }
}
