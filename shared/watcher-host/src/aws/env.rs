//! Building a function's parts once per cold start from its environment (style: build SDK
//! clients once in `main` and pass references into the handler).
//!
//! Variables: `TABLE_NAME`, `QUEUE_URL`, `SCHEDULE_GROUP`, `TIMER_FUNCTION_ARN`,
//! `SCHEDULER_ROLE_ARN`, `SCHEDULER_DLQ_ARN` (optional), `SCHEDULE_KMS_KEY_ARN` (optional: the
//! customer managed KMS key each schedule's input is encrypted with, docs/security.md
//! "Encryption at rest"), `TIMER_QUEUE_URL` (optional: the
//! standard queue feeding the timer function; when set, schedules fire a minute early and the
//! last stretch to each deadline is a delayed message there, docs/aws-latency.md), `WATCHER_CONFIG_SECRET_ID` (the
//! Secrets Manager secret whose SecretString is the TOML of contracts/serve.md: agents, sources,
//! operators, teachers and their tokens; read through the SDK at cold start and kept for the
//! instance's life, never put in the environment), `WATCHER_CONFIG_SECRET_VERSION` (optional),
//! `RETENTION_DAYS` (default 30), `SENDER_LEASE_SECONDS` (optional: how long the submitter's
//! claim on a lapse task holds; the template sets it just above the function's timeout),
//! `CARD_MAX_AGE_SECS` (default a day: the sweep re-reads a card in good health once it is
//! older, [`super::cards`]).
//! `AWS_ENDPOINT_URL` points every client at an emulator.

use std::sync::Arc;

use crate::deployment::{load_deployment, load_deployment_kept};
use crate::functions::{needs_of, Function};
use anyhow::{anyhow, Context};
use watcher_aws::TimerQueue;
use watcher_config::Config;
use watcher_delivery::deliver::Submitter;
use watcher_delivery::endpoint::{Endpoints, SharedEndpoints};
use watcher_delivery::reconcile::Reconciler;
use watcher_http::Credentials;
use watcher_runtime::clock::{Clock, SystemClock};
use watcher_runtime::ports::LapseQueue;
use watcher_runtime::store::Store;
use watcher_runtime::watcher::Watcher;
use watcher_store_dynamodb::DynamoStore;

use super::cards::Cards;
use watcher_lambda::sink::AwsSink;
use watcher_lambda::submitter::{QueueTimeout, Redelivery};

/// Everything a function needs, built once: what [`Function::needs`] asks for, no more.
pub struct Parts {
    /// The watcher over DynamoDB, carrying out timer and queue effects after each commit.
    pub watcher: Arc<Watcher<dyn Store>>,
    /// The lapse queue.
    pub queue: Arc<dyn LapseQueue>,
    /// The per-deadline schedules (the timer function deletes those commits deferred to the
    /// timer queue).
    pub timers: Arc<dyn watcher_runtime::ports::Timers>,
    /// Who may call what (the API function).
    pub credentials: Arc<Credentials>,
    /// Where lapse tasks go (the submitter), kept up to date by [`Parts::cards`].
    pub endpoints: SharedEndpoints,
    /// The configured agents' cards: re-read by the sweep, picked up from the table at use.
    pub cards: Arc<Cards>,
    /// The A2A client's parts, where lapse tasks are sent or followed ([`crate::functions::Needs::a2a_client`]:
    /// the timer and the submitter); `None` in the API function.
    pub sending: Option<Sending>,
    /// The request bounds of the API (config `[limits]`).
    pub limits: watcher_http::Limits,
    /// When a lapse message the submitter hands back is received again (the lapse queue's
    /// `ChangeMessageVisibility` where [`crate::functions::Needs::redelivery`]; [`QueueTimeout`] elsewhere and
    /// from [`assemble`]).
    pub redelivery: Arc<dyn Redelivery>,
    /// The `[[notify]]` channels, in the function whose sweep tells them (the timer); `None`
    /// elsewhere or when none is configured. Only in a build with the `aws-notify` feature.
    #[cfg(feature = "aws-notify")]
    pub notifying: Option<Notifying>,
}

/// How far behind the newest lapse tasks a channel's cursor stays on DynamoDB
/// (`watcher_notify::Notifier::with_settle`): lapse-task positions are time-ordered ids taken
/// by concurrent functions, so one committed late may sort below one already told. Twice the
/// longest function timeout (the timer's 120 s) and a minute more: every write that could take a
/// position below a settled lapse has finished or failed.
pub const NOTIFY_SETTLE: std::time::Duration = std::time::Duration::from_secs(300);

/// The environment variable that shortens [`NOTIFY_SETTLE`], in whole seconds: for the local
/// stack (`infra/aws-local.sh` passes it to the functions), whose functions end in
/// milliseconds. On AWS leave it unset: the settle must exceed twice the functions' longest
/// timeout (docs/interpretation.md, "Notification channels").
pub const NOTIFY_SETTLE_ENV: &str = "A2A_NOTIFY_SETTLE_SECS";

/// [`NOTIFY_SETTLE`], or [`NOTIFY_SETTLE_ENV`] when it is set to a whole number of seconds.
pub fn notify_settle() -> std::time::Duration {
    std::env::var(NOTIFY_SETTLE_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(NOTIFY_SETTLE, std::time::Duration::from_secs)
}

/// Counts each notification as CloudWatch embedded metrics (`Notifications`,
/// `NotificationFailures`, `NotificationRedirects`).
#[cfg(feature = "aws-notify")]
struct EmfNotifications(watcher_lambda::emf::EmfRecorder);

#[cfg(feature = "aws-notify")]
impl watcher_notify::NotifyRecorder for EmfNotifications {
    fn notified(&self, channel: &str, outcome: &'static str) {
        self.0.notified(channel, outcome);
    }
}

/// How long the sweep may spend telling the channels: within the timer function's 120 s with
/// the sweep's other passes (a round cut short resumes at the next sweep from its cursor).
pub const NOTIFY_BUDGET: std::time::Duration = std::time::Duration::from_secs(15);

/// What the timer function's sweep tells people with (issue 25).
#[cfg(feature = "aws-notify")]
pub struct Notifying {
    /// The channels, checked at the cold start.
    pub channels: Vec<watcher_notify::Channel>,
    /// Their HTTP client.
    pub transport: Arc<dyn watcher_notify::transport::Transport>,
    /// The deployment's own base URL, for the links (config `public_url`).
    pub public_url: Option<String>,
    /// Where `sns` channels publish: the function's SNS client ([`from_env`]); `None` from
    /// [`assemble_for`] until a test sets one.
    pub publisher: Option<Arc<dyn watcher_notify::transport::Publish>>,
}

/// What posts and follows lapse tasks: built only where [`crate::functions::Needs::a2a_client`].
pub struct Sending {
    /// The lapse-task submitter (its A2A client, retry policy and rate limit).
    pub submitter: Submitter,
    /// Origin-task reconciliation, as serve uses it: the submitter checks a lapse task's origin
    /// before its first send; the sweep polls the origin tasks followed in the table and feeds
    /// followed lapse tasks' `GetTask` answers through the push ingest path. On the system clock
    /// ([`Parts::with_clock`] to change it).
    pub reconciler: Arc<Reconciler>,
    /// The lanes' settings of `[delivery]` (`in_flight_per_agent` as `per_agent`, as serve's):
    /// the submitter function runs one lane per agent a batch wakes with them.
    pub lanes: watcher_delivery::lanes::LaneSettings,
    /// The A2A client's timeout per request (`[delivery] timeout_secs`): how long a send taken
    /// just before an invocation stops taking may still run.
    pub request_timeout: std::time::Duration,
}

impl Parts {
    /// The notifier of the channels on `clock`, settling [`notify_settle`] behind the newest
    /// lapse tasks; `None` when this function tells none. Built per sweep: it keeps nothing
    /// between invocations that matters (its backoff is a courtesy within one).
    #[cfg(feature = "aws-notify")]
    pub fn notifier(&self, clock: Arc<dyn Clock>) -> Option<watcher_notify::Notifier<dyn Store>> {
        let n = self.notifying.as_ref()?;
        let notifier = watcher_notify::Notifier::new(
            self.watcher.store.clone(),
            n.channels.clone(),
            n.transport.clone(),
            clock,
            n.public_url.clone(),
        )
        .with_settle(notify_settle())
        .with_directory(self.watcher.directory.clone())
        .with_recorder(Arc::new(EmfNotifications(
            watcher_lambda::emf::EmfRecorder::from_env(),
        )));
        Some(match &n.publisher {
            Some(p) => notifier.with_publisher(p.clone()),
            None => notifier,
        })
    }

    /// The same parts with the reconciler on `clock` (tests drive the functions on a fake
    /// clock; the reconciler stamps the snapshots it ingests with it).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        if let Some(sending) = &mut self.sending {
            sending.reconciler =
                reconciler(&self.watcher, &sending.submitter, &self.endpoints, clock);
        }
        self
    }

    /// [`Parts::sending`], or an error naming `function`: for a function whose services need
    /// the A2A client (checked at its cold start, never at an invocation).
    ///
    /// # Errors
    /// The parts were built without the A2A client.
    pub fn sending_for(&self, function: Function) -> anyhow::Result<&Sending> {
        self.sending.as_ref().ok_or_else(|| {
            anyhow!(
                "the {} function's parts were built without the A2A client",
                function.name()
            )
        })
    }
}

/// The reconciler of a function: `GetTask` with the submitter's client and retry policy, to the
/// agents of `endpoints`. Nothing waits on its wake-up: each function runs to completion.
fn reconciler(
    watcher: &Arc<Watcher<dyn Store>>,
    submitter: &Submitter,
    endpoints: &SharedEndpoints,
    clock: Arc<dyn Clock>,
) -> Arc<Reconciler> {
    let endpoints: Arc<dyn Endpoints> = Arc::new(endpoints.clone());
    Arc::new(Reconciler::new(
        watcher.clone(),
        submitter.client().clone(),
        endpoints,
        *submitter.policy(),
        clock,
        Arc::new(tokio::sync::Notify::new()),
    ))
}

fn var(name: &str) -> anyhow::Result<String> {
    std::env::var(name).map_err(|_| anyhow!("environment variable {name} is not set"))
}

/// Reads the environment and builds `function`'s parts ([`Function::needs`]): the AWS clients
/// its watcher's effects use (DynamoDB, Scheduler, SQS), the A2A client and the shared rate
/// buckets only where lapse tasks are sent or followed, the cards read over the network only
/// in the function that refreshes them. Logs each service of the AWS deployment at the start,
/// and where each one this function leaves runs ([`Function::placements`]).
///
/// # Errors
/// A missing variable, an unusable configuration or card, each named.
pub async fn from_env(function: Function) -> anyhow::Result<Parts> {
    let aws = watcher_aws::sdk_env::sdk_config_from_env()?;
    let toml = watcher_aws::config_secret::config_from_env(&aws).await?;
    from_config(function, &aws, &toml).await
}

/// [`from_env`] with the SDK configuration and the configuration secret's text already read
/// (a function that reads the secret for itself too, `lesson-write`, reads it once).
///
/// # Errors
/// As [`from_env`].
pub async fn from_config(
    function: Function,
    aws: &aws_types::SdkConfig,
    toml: &str,
) -> anyhow::Result<Parts> {
    let needs = function.needs();
    let aws = aws.clone();
    let config = Config::from_toml(toml).context("the configuration secret")?;
    let retention: u32 = match std::env::var("RETENTION_DAYS") {
        Ok(v) => v
            .parse()
            .context("RETENTION_DAYS must be a whole number of days")?,
        Err(_) => config.retention_days,
    };
    let ddb = watcher_aws::sdk_env::dynamodb_client(&aws);
    let table = var("TABLE_NAME")?;
    let store: Arc<dyn Store> = Arc::new(DynamoStore::new(ddb.clone(), table.clone(), retention));
    let mut scheduler = watcher_aws::SchedulerConfig::new(
        var("SCHEDULE_GROUP")?,
        var("TIMER_FUNCTION_ARN")?,
        var("SCHEDULER_ROLE_ARN")?,
    );
    if let Ok(dlq) = std::env::var("SCHEDULER_DLQ_ARN") {
        if !dlq.is_empty() {
            scheduler = scheduler.with_dead_letter_queue(dlq);
        }
    }
    // The template's KmsKeyArn, set only with it: each schedule's input under the customer's key.
    if let Ok(key) = std::env::var("SCHEDULE_KMS_KEY_ARN") {
        if !key.is_empty() {
            scheduler = scheduler.with_kms_key(key);
        }
    }
    let sqs_client = aws_sdk_sqs::Client::new(&aws);
    let timer_queue: Option<Arc<dyn TimerQueue>> = match std::env::var("TIMER_QUEUE_URL") {
        Ok(url) if !url.is_empty() => {
            scheduler = scheduler.with_lead(watcher_aws::SCHEDULE_LEAD);
            Some(Arc::new(watcher_aws::SqsTimerQueue::new(
                sqs_client.clone(),
                url,
            )))
        }
        _ => None,
    };
    let timers = Arc::new(
        watcher_aws::SchedulerTimers::new(aws_sdk_scheduler::Client::new(&aws), scheduler)
            .map_err(|e| anyhow!("scheduler configuration: {e}"))?,
    );
    let sqs = Arc::new(watcher_aws::SqsLapseQueue::new(
        sqs_client,
        var("QUEUE_URL")?,
    ));
    let queue: Arc<dyn LapseQueue> = sqs.clone();
    let mut parts = assemble_for(&[function], store, timers, queue, timer_queue, &config).await?;
    if needs.redelivery {
        parts.redelivery = sqs;
    }
    if let Some(mut sending) = parts.sending.take() {
        if let Ok(secs) = std::env::var("SENDER_LEASE_SECONDS") {
            let secs: u64 = secs
                .parse()
                .ok()
                .filter(|s| *s > 0)
                .context("SENDER_LEASE_SECONDS must be a positive whole number of seconds")?;
            sending.submitter = sending
                .submitter
                .with_lease(std::time::Duration::from_secs(secs));
        }
        if needs.rate_buckets {
            // The rate limit per agent holds across every submitter instance (docs/dynamodb.md
            // "Rate buckets"), not per instance.
            sending.submitter = sending.submitter.with_rate_buckets(Arc::new(
                watcher_lambda::rate::DynamoRateBuckets::new(
                    ddb,
                    table,
                    crate::deployment::rate_limit(&config.delivery),
                ),
            ));
        }
        parts.sending = Some(sending);
    }
    #[cfg(feature = "aws-notify")]
    if let Some(n) = &mut parts.notifying {
        n.publisher = Some(Arc::new(super::sns::SnsPublisher::new(
            aws_sdk_sns::Client::new(&aws),
        )));
    }
    if let Ok(v) = std::env::var("CARD_MAX_AGE_SECS") {
        let secs: i64 = v
            .parse()
            .context("CARD_MAX_AGE_SECS must be a whole number of seconds")?;
        let cards = Cards::new(
            config.clone(),
            parts.watcher.store.clone(),
            parts.watcher.directory.clone(),
            parts.endpoints.clone(),
        )
        .with_max_age(jiff::SignedDuration::from_secs(secs));
        parts.cards = Arc::new(cards);
    }
    crate::services::log_placements_in_one_line(
        &format!("aws/{}", function.name()),
        &function.placements(),
    );
    Ok(parts)
}

/// Builds the parts of every function from ready adapters (tests pass emulator-backed ones),
/// every timer on `timers`.
///
/// # Errors
/// An unusable configuration or card.
pub async fn assemble(
    store: Arc<dyn Store>,
    timers: Arc<dyn watcher_runtime::ports::Timers>,
    queue: Arc<dyn LapseQueue>,
    config: &Config,
) -> anyhow::Result<Parts> {
    assemble_for(&Function::ALL, store, timers, queue, None, config).await
}

/// [`assemble`], with timers due within SQS's 900 s finished on `timer_queue` (give `timers` a
/// schedule lead then: docs/aws-latency.md).
///
/// # Errors
/// An unusable configuration or card.
pub async fn assemble_with_timer_queue(
    store: Arc<dyn Store>,
    timers: Arc<dyn watcher_runtime::ports::Timers>,
    queue: Arc<dyn LapseQueue>,
    timer_queue: Option<Arc<dyn TimerQueue>>,
    config: &Config,
) -> anyhow::Result<Parts> {
    assemble_for(&Function::ALL, store, timers, queue, timer_queue, config).await
}

/// The parts `functions` need together ([`needs_of`]) from ready adapters: the A2A client and
/// reconciler only when one of them sends or follows lapse tasks; every card read over the
/// network only when one of them refreshes cards, else the cards kept in the table
/// ([`load_deployment_kept`]). The rate buckets and redelivery of [`from_env`] are not set
/// here ([`Parts::redelivery`] is [`QueueTimeout`]).
///
/// # Errors
/// An unusable configuration or card.
pub async fn assemble_for(
    functions: &[Function],
    store: Arc<dyn Store>,
    timers: Arc<dyn watcher_runtime::ports::Timers>,
    queue: Arc<dyn LapseQueue>,
    timer_queue: Option<Arc<dyn TimerQueue>>,
    config: &Config,
) -> anyhow::Result<Parts> {
    let needs = needs_of(functions);
    // A cold start never fails for one agent's card (serve.md "Agents are independent"): the
    // card kept in the table is used, or the agent waits for the sweep.
    let now = SystemClock.now();
    let deployment = if needs.reads_cards {
        load_deployment(config, &*store, now).await?
    } else {
        load_deployment_kept(config, &*store, now).await?
    };
    // The origin check before a lapse task's first send, as in serve (`[delivery]
    // reconcile_origins` above 0). The in-memory origin queue stays off: a function instance
    // keeps nothing between invocations (docs/interpretation.md).
    // Origins are followed in the table, polled by the sweep, for the same reason.
    let reconcile = config.delivery.reconcile_origins > 0;
    deployment.directory.set_origin_checks(reconcile);
    deployment.directory.set_origins_in_store(reconcile);
    deployment
        .directory
        .origins()
        .set_first_poll(crate::deployment::retry_policy(&config.delivery).poll_first);
    let sink = Arc::new(AwsSink {
        timers: timers.clone(),
        queue: queue.clone(),
        timer_queue,
        disarm_later: !needs.deletes_schedules,
    });
    let endpoints = SharedEndpoints::new(deployment.endpoints);
    let cards = Arc::new(Cards::new(
        config.clone(),
        store.clone(),
        deployment.directory.clone(),
        endpoints.clone(),
    ));
    let recorder = Arc::new(watcher_lambda::emf::EmfRecorder::from_env());
    let watcher = Arc::new(
        Watcher::new(store, deployment.directory, deployment.settings)
            .with_sink(sink)
            .with_recorder(recorder.clone())
            .evaluating_due_at_once(),
    );
    let tells = functions
        .iter()
        .any(|f| f.runs(crate::services::Service::Notifications))
        && !config.notify.is_empty();
    #[cfg(feature = "aws-notify")]
    let notifying = if tells {
        let channels = crate::deployment::notify_channels(config)?;
        let transport =
            watcher_notify::transport::HttpTransport::new().map_err(anyhow::Error::msg)?;
        Some(Notifying {
            channels,
            transport: Arc::new(transport),
            public_url: config.public_url.clone(),
            publisher: None,
        })
    } else {
        None
    };
    // A function that tells the channels is built with them (the timer function's crate turns
    // the feature on); a build without them refuses to start rather than tell nobody.
    #[cfg(not(feature = "aws-notify"))]
    if tells {
        anyhow::bail!(
            "this function runs the notification channels, but its binary was built without \
             them (watcher-host's `aws-notify` feature)"
        );
    }
    let sending = if needs.a2a_client {
        let submitter = crate::deployment::submitter(&config.delivery)?.with_recorder(recorder);
        let reconciler = reconciler(&watcher, &submitter, &endpoints, Arc::new(SystemClock));
        Some(Sending {
            submitter,
            reconciler,
            lanes: crate::deployment::lane_settings(&config.delivery),
            request_timeout: std::time::Duration::from_secs(config.delivery.timeout_secs),
        })
    } else {
        None
    };
    Ok(Parts {
        watcher,
        queue,
        timers,
        credentials: Arc::new(deployment.credentials),
        endpoints,
        cards,
        sending,
        limits: crate::deployment::http_limits(&config.limits),
        redelivery: Arc::new(QueueTimeout),
        #[cfg(feature = "aws-notify")]
        notifying,
    })
}
