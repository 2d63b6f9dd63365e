//! The services of each deployment, declared once: what each guarantees, and, for `serve` and
//! for AWS, where it runs, or that it is not run there and why. `docs/deployments.md`'s table is
//! [`table`] (`tests/deployments_table.rs` fails when the two differ, and prints the table to
//! put there); `serve` logs every service of [`SERVE`] at start ([`log_placements`]), so a
//! service missing from a deployment is a visible line with its reason, never an absence, and
//! starts exactly the loops of the services that run ([`serve_at_start`]; `serve::loops`), as
//! each AWS function builds what its services need.
//!
//! Each deployment's list names every [`Service`] once, in [`Service::ALL`]'s order (checked
//! below): adding a service means saying where it runs in both.

use std::fmt::Write as _;

use watcher_config::Config;

/// A guarantee of the watcher, kept by a service of each deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Service {
    /// Every route of the API
    HttpRoutes,
    /// A deadline lapses at its instant
    Deadlines,
    /// A lost timer still lapses, late (§10.1)
    LateTimers,
    /// A burst is delivered as it is decided
    HandOver,
    /// One lapse task per (expectation, lapse, `dueAt`)
    SendOnce,
    /// A send whose outcome was lost is looked for before it is sent again
    LostSendLookup,
    /// Agents are independent; each agent's lapse tasks in order
    AgentLanes,
    /// Retries at the delivery backoff (1 s doubling to 5 min), given up after `give_up_after`
    Retries,
    /// `POST /v1/lapses/retry` delivers at once
    RetryNow,
    /// A canceled origin task withdraws, even when its cancel is never pushed
    OriginReconciliation,
    /// A lapse task's state is followed when the agent does not push
    Following,
    /// The rate limit per agent (§13.2)
    RateLimit,
    /// A card that cannot be read is read again
    CardRefresh,
    /// The registration probe (`probe = true`)
    Probe,
    /// Retention (§14)
    Retention,
    /// Metrics
    Metrics,
    /// A person is told of each lapse, once per channel (§13.1)
    Notifications,
    /// A lesson taught with `expiresAt` is looked at again, or its end is told (§16)
    LessonReviews,
}

impl Service {
    /// Every service, in the order of the table.
    pub const ALL: [Service; 18] = [
        Service::HttpRoutes,
        Service::Deadlines,
        Service::LateTimers,
        Service::HandOver,
        Service::SendOnce,
        Service::LostSendLookup,
        Service::AgentLanes,
        Service::Retries,
        Service::RetryNow,
        Service::OriginReconciliation,
        Service::Following,
        Service::RateLimit,
        Service::CardRefresh,
        Service::Probe,
        Service::Retention,
        Service::Metrics,
        Service::Notifications,
        Service::LessonReviews,
    ];

    /// The service's name, as `serve` logs it (`service=…`).
    pub fn name(self) -> &'static str {
        match self {
            Service::HttpRoutes => "http-routes",
            Service::Deadlines => "deadlines",
            Service::LateTimers => "late-timers",
            Service::HandOver => "hand-over",
            Service::SendOnce => "send-once",
            Service::LostSendLookup => "lost-send-lookup",
            Service::AgentLanes => "agent-lanes",
            Service::Retries => "retries",
            Service::RetryNow => "retry-now",
            Service::OriginReconciliation => "origin-reconciliation",
            Service::Following => "following",
            Service::RateLimit => "rate-limit",
            Service::CardRefresh => "card-refresh",
            Service::Probe => "probe",
            Service::Retention => "retention",
            Service::Metrics => "metrics",
            Service::Notifications => "notifications",
            Service::LessonReviews => "lesson-reviews",
        }
    }

    /// What the service guarantees, in the table's words.
    pub fn guarantee(self) -> &'static str {
        match self {
            Service::HttpRoutes => "Every route of the API",
            Service::Deadlines => "A deadline lapses at its instant",
            Service::LateTimers => "A lost timer still lapses, late (§10.1)",
            Service::HandOver => "A burst is delivered as it is decided",
            Service::SendOnce => "One lapse task per (expectation, lapse, `dueAt`)",
            Service::LostSendLookup => "A send whose outcome was lost is looked for before it is sent again",
            Service::AgentLanes => "Agents are independent; each agent's lapse tasks in order",
            Service::Retries => "Retries at the delivery backoff (1 s doubling to 5 min), given up after `give_up_after`",
            Service::RetryNow => "`POST /v1/lapses/retry` delivers at once",
            Service::OriginReconciliation => "A canceled origin task withdraws, even when its cancel is never pushed",
            Service::Following => "A lapse task's state is followed when the agent does not push",
            Service::RateLimit => "The rate limit per agent (§13.2)",
            Service::CardRefresh => "A card that cannot be read is read again",
            Service::Probe => "The registration probe (`probe = true`)",
            Service::Retention => "Retention (§14)",
            Service::Metrics => "Metrics",
            Service::Notifications => "A person is told of each lapse and each agent's trouble, once per channel (§13.1)",
            Service::LessonReviews => "A lesson taught with `expiresAt` raises `lesson.review`, satisfied when the entry changes, told when it lapses (expectations-v1 §16)",
        }
    }

    /// The tests that show the guarantee holds (in both deployments where they are named).
    pub fn shown_by(self) -> &'static str {
        match self {
            Service::HttpRoutes => "`watcher-http/tests/template_routes.rs`, `openapi.rs`",
            Service::Deadlines => "`tests/deployments/scenarios.rs` `lapse_each_kind` (both deployments); `tests/aws_local.rs`; `watcher-lambda/tests/end_to_end/`",
            Service::LateTimers => "`watcher-runtime/tests/fire_due.rs`",
            Service::HandOver => "`watcher-runtime/tests/fire_hand_over.rs`; `bench` burst phase",
            Service::SendOnce => "conformance `outbox_claims_are_exclusive`; `watcher-lambda/tests/submitter_lanes.rs` `two_submitters_woken_for_one_agent_send_each_message_once`; `tests/serve_crash.rs`",
            Service::LostSendLookup => "`watcher-delivery/tests/delivery/exactly_once.rs` `an_ambiguous_lapse_task_behind_500_newer_tasks_is_found_not_sent_again`",
            Service::AgentLanes => "`tests/serve_delivery.rs`; `submitter_lanes.rs` `a_slow_agent_never_delays_another_agents_lapse_task_in_the_batch`",
            Service::Retries => "`submitter_lanes.rs`; `watcher-aws/tests/moto.rs` `a_handed_back_message_returns_when_its_visibility_is_changed`",
            Service::RetryNow => "`watcher-http/tests/delivery_ops.rs` `retry_hands_requeued_lapse_tasks_to_the_deployments_queue_at_once`",
            Service::OriginReconciliation => "`tests/serve_reconcile.rs`; `watcher-lambda/tests/end_to_end/following.rs` `a_cancel_never_pushed_gives_no_lapse_task_on_aws`, `an_origin_followed_in_the_table_is_found_canceled_by_the_sweep`",
            Service::Following => "`tests/serve_reconcile.rs`; `end_to_end/following.rs` `a_lapse_task_never_pushed_follows_get_task_to_completed_at_the_sweep`",
            Service::RateLimit => "`watcher-lambda/tests/aws_rate.rs`",
            Service::CardRefresh => "`tests/serve_agents.rs` `an_unreachable_card_stops_nothing_and_is_retried_then_kept`; `watcher-lambda/tests/aws_cards.rs`",
            Service::Probe => "`tests/serve_reconcile.rs`; `watcher-lambda/tests/aws_probe.rs`",
            Service::Retention => "`tests/serve_retention.rs`; `watcher-store-dynamodb/tests/dynamodb/retention.rs`",
            Service::Metrics => "`tests/serve_metrics.rs`; `watcher-lambda/src/emf.rs` tests",
            Service::Notifications => "`tests/deployments/scenarios/delivery.rs` `notify_a_person` (both deployments: Standard Webhooks, PagerDuty, Opsgenie, a redacted Alertmanager channel); `tests/deployments/scenarios/incidents.rs` `page_and_resolve_through_a_restart` (each paged once and resolved once when the fact comes late, through a restart of what tells them) and `a_grace_swallows_a_short_delay` (both deployments); `watcher-notify/tests/notifier.rs`, `agent_events.rs`, `resolutions.rs`; `tests/serve_notify.rs`, `serve_notify_incidents.rs`, `serve_incidents.rs`; `watcher-lambda/tests/aws_notify.rs`",
            Service::LessonReviews => "`tests/deployments/scenarios.rs` `a_lesson_whose_end_is_noticed` (both deployments); `watcher-runtime/tests/lesson_review.rs`; `learnables/tests/lesson_review.rs`",
        }
    }
}

/// Where a service runs in one deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// It runs, here (a loop of `serve`, a route, a function or a schedule), in the table's
    /// words.
    At(&'static str),
    /// It is not run in this deployment, for this reason.
    NotRun(&'static str),
    /// The deployment runs it, but this configuration turns it off, for this reason (never in
    /// the declared lists: [`serve_as_configured`]).
    Off(&'static str),
    /// Another part of the deployment runs it (an AWS function's cold-start lines, for a
    /// service another function hosts: [`crate::functions::Function::placements`]), never in
    /// the declared lists.
    Elsewhere(&'static str),
}

impl Runs {
    /// The table's cell: where it runs, or `not run: {reason}`.
    pub fn cell(self) -> String {
        match self {
            Runs::At(at) => at.to_owned(),
            Runs::NotRun(reason) => format!("not run: {reason}"),
            Runs::Off(reason) => format!("off: {reason}"),
            Runs::Elsewhere(at) => format!("elsewhere: {at}"),
        }
    }
}

/// One service of one deployment, and where it runs there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The service.
    pub service: Service,
    /// Where it runs in the deployment.
    pub runs: Runs,
}

/// The two deployments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deployment {
    /// `a2a-watcher serve`: one process on SQLite.
    Serve,
    /// The AWS functions (`template.yaml`): DynamoDB, EventBridge Scheduler, SQS.
    Aws,
}

impl Deployment {
    /// The deployment's declared services: [`SERVE`] or [`AWS`].
    pub fn services(self) -> &'static [Placement] {
        match self {
            Deployment::Serve => SERVE,
            Deployment::Aws => AWS,
        }
    }

    /// Where `service` runs in this deployment (every list names every service, so this is
    /// never `None` for a declared service; a test checks it).
    pub fn runs(self, service: Service) -> Option<Runs> {
        self.services()
            .iter()
            .find(|p| p.service == service)
            .map(|p| p.runs)
    }
}

/// `serve`'s services (`watcher_host::serve` composes them).
pub const SERVE: &[Placement] = &[
    Placement {
        service: Service::HttpRoutes,
        runs: Runs::At("axum on the listener"),
    },
    Placement {
        service: Service::Deadlines,
        runs: Runs::At("the timer loop over the deadline index"),
    },
    Placement {
        service: Service::LateTimers,
        runs: Runs::At("the timer loop reads every due timer"),
    },
    Placement {
        service: Service::HandOver,
        runs: Runs::At("the timer loop commits and hands over in groups of 8"),
    },
    Placement {
        service: Service::SendOnce,
        runs: Runs::At("a claim (lease) on the outbox entry before each send; a restarted process takes back its own claims"),
    },
    Placement {
        service: Service::LostSendLookup,
        runs: Runs::At("`ListTasks`, every page (bounded)"),
    },
    Placement {
        service: Service::AgentLanes,
        runs: Runs::At("one lane per agent"),
    },
    Placement {
        service: Service::Retries,
        runs: Runs::At("the lane's own timer"),
    },
    Placement {
        service: Service::RetryNow,
        runs: Runs::At("wakes the agent's lane"),
    },
    Placement {
        service: Service::OriginReconciliation,
        runs: Runs::At("the origin check (`GetTask`) before a lapse task's first send; origin tasks followed in the database"),
    },
    Placement {
        service: Service::Following,
        runs: Runs::At("the lanes poll with `GetTask`"),
    },
    Placement {
        service: Service::RateLimit,
        runs: Runs::At("a token bucket in the process"),
    },
    Placement {
        service: Service::CardRefresh,
        runs: Runs::At("the card refresh loop"),
    },
    Placement {
        service: Service::Probe,
        runs: Runs::At("on registration, with a webhook of its own"),
    },
    Placement {
        service: Service::Retention,
        runs: Runs::At("the retention loop purges in batches"),
    },
    Placement {
        service: Service::Metrics,
        runs: Runs::At("`GET /metrics` (Prometheus)"),
    },
    Placement {
        service: Service::Notifications,
        runs: Runs::At("the notifier loop: each `[[notify]]` channel reads the lapse pages after its cursor, every second"),
    },
    Placement {
        service: Service::LessonReviews,
        runs: Runs::At("the authority's lesson and activate routes tell the watcher in the same process; its timer loop lapses the review"),
    },
];

/// The AWS functions' services ([`crate::aws`] composes their parts; `template.yaml` wires the
/// functions, schedules and queues).
pub const AWS: &[Placement] = &[
    Placement {
        service: Service::HttpRoutes,
        runs: Runs::At("the `api` and `lesson-write` functions behind the HTTP API; every route of the routers is an event of the template"),
    },
    Placement {
        service: Service::Deadlines,
        runs: Runs::At("one schedule per deadline, a minute early, then a message delayed to the instant on the timer queue (`docs/aws-latency.md`)"),
    },
    Placement {
        service: Service::LateTimers,
        runs: Runs::At("the sweep's `timers` duty (`sweep-timers`, every 5 minutes, its own invocation and budget); a timer that fails is skipped, counted (`TimerFailures`) and fired at the next one"),
    },
    Placement {
        service: Service::HandOver,
        runs: Runs::At("each timer invocation enqueues its lapse tasks after its own commit"),
    },
    Placement {
        service: Service::SendOnce,
        runs: Runs::At("the same claim in DynamoDB (`SENDER_LEASE_SECONDS` just above the submitter's timeout), whatever SQS delivers and to however many invocations"),
    },
    Placement {
        service: Service::LostSendLookup,
        runs: Runs::At("the same"),
    },
    Placement {
        service: Service::AgentLanes,
        runs: Runs::At("serve's `Lane`, woken by the lapse queue's wake-ups (one FIFO group per agent, at most one wake-up a second), in 5 s slices; a batch's agents concurrently"),
    },
    Placement {
        service: Service::Retries,
        runs: Runs::At("a wake-up at the agent's next attempt or poll on the timer queue (`wakeLane`, delayed up to 15 minutes)"),
    },
    Placement {
        service: Service::RetryNow,
        runs: Runs::At("the API function wakes the agent's lane on the lapse queue"),
    },
    Placement {
        service: Service::OriginReconciliation,
        runs: Runs::At("the same grouped check in the submitter's lane; origin tasks followed in the table, polled by the sweep's `origins` duty"),
    },
    Placement {
        service: Service::Following,
        runs: Runs::At("the lanes poll with `GetTask`, woken at each poll; the sweep's `follow` duty (every minute) takes what is more than 60 s overdue"),
    },
    Placement {
        service: Service::RateLimit,
        runs: Runs::At("a token bucket item per agent in the table, across every submitter instance"),
    },
    Placement {
        service: Service::CardRefresh,
        runs: Runs::At("the sweep re-reads unreadable and day-old cards, keeps them in the table; every function picks them up; a push reads a card its API instance never read, on `serve`'s backoff"),
    },
    Placement {
        service: Service::Probe,
        runs: Runs::At("in the sweep, its pushes to the deployment's own push route"),
    },
    Placement {
        service: Service::Retention,
        runs: Runs::At("DynamoDB TTL on every item"),
    },
    Placement {
        service: Service::Metrics,
        runs: Runs::At("CloudWatch embedded metrics from each function"),
    },
    Placement {
        service: Service::Notifications,
        runs: Runs::At("the sweep's `notify` duty (`sweep-notify`, every 5 minutes) runs each channel, 5 minutes behind the newest lapse tasks (a settle delay behind time-ordered ids)"),
    },
    Placement {
        service: Service::LessonReviews,
        runs: Runs::At("the `lesson-write` function raises and satisfies reviews in the watcher's table, arming their schedules as the `api` function does; the timer function lapses them"),
    },
];

/// The Markdown table of `docs/deployments.md`: one row per service, with the guarantee, where
/// it runs in `serve` and on AWS, and the tests that show it. Cells hold no `|`.
pub fn table() -> String {
    let mut out =
        String::from("| service | guarantee | `serve` | AWS | shown by |\n|---|---|---|---|---|\n");
    for service in Service::ALL {
        let cell = |d: Deployment| {
            d.runs(service)
                .map(Runs::cell)
                .unwrap_or_else(|| "not declared".to_owned())
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            service.name(),
            service.guarantee(),
            cell(Deployment::Serve),
            cell(Deployment::Aws),
            service.shown_by()
        );
    }
    out
}

/// [`SERVE`] as `config` runs it: a service the configuration turns off is [`Runs::Off`], with
/// the setting as its reason (`retention_days = 0`; `[delivery] reconcile_origins = 0`; no agent
/// with `probe = true`). What `serve` logs at start.
pub fn serve_as_configured(config: &Config) -> Vec<Placement> {
    SERVE
        .iter()
        .map(|p| {
            let off = match p.service {
                Service::Retention if config.retention_days == 0 => {
                    Some("retention_days = 0: every record is kept forever")
                }
                Service::OriginReconciliation if config.delivery.reconcile_origins == 0 => {
                    Some("[delivery] reconcile_origins = 0 turns origin reconciliation off")
                }
                Service::Probe if !config.agents.iter().any(|a| a.probe) => {
                    Some("no agent has probe = true")
                }
                Service::Notifications if config.notify.is_empty() => {
                    Some("no [[notify]] channel is configured")
                }
                _ => None,
            };
            match off {
                Some(reason) => Placement {
                    service: p.service,
                    runs: Runs::Off(reason),
                },
                None => *p,
            }
        })
        .collect()
}

/// [`serve_as_configured`] as `serve` found it at start: the card refresh is off when no
/// agent's card is waiting to be read (`cards_unread` is 0: every card was read, or there is no
/// `[[agents]]` entry). What `serve` logs at start and starts its loops from
/// ([`crate::serve::loops::loops_for`], feature `serve`).
pub fn serve_at_start(config: &Config, cards_unread: usize) -> Vec<Placement> {
    let mut placements = serve_as_configured(config);
    for p in &mut placements {
        if p.service == Service::CardRefresh && cards_unread == 0 {
            p.runs = Runs::Off(if config.agents.is_empty() {
                "no [[agents]] entry: no card to read"
            } else {
                "every agent's card was read at start"
            });
        }
    }
    placements
}

/// Logs every placement of `placements` at start, one line each: `info` for a service that
/// runs (where), runs in another part of the deployment (where) or that the configuration turns
/// off (why), `warn` for one the deployment does not run (why). `deployment` names the deployment in each line.
pub fn log_placements(deployment: &str, placements: &[Placement]) {
    for p in placements {
        match p.runs {
            Runs::At(at) => {
                tracing::info!(
                    deployment,
                    service = p.service.name(),
                    runs = at,
                    "service runs"
                );
            }
            Runs::NotRun(reason) => warn_not_run(deployment, p.service, reason),
            Runs::Off(reason) => tracing::info!(
                deployment,
                service = p.service.name(),
                reason,
                "service off: {reason}"
            ),
            Runs::Elsewhere(at) => tracing::info!(
                deployment,
                service = p.service.name(),
                runs = at,
                "service runs elsewhere: {at}"
            ),
        }
    }
}

/// A function's placements at its cold start, in one `info` line: the services it `runs` here
/// and those that run `elsewhere` (each with the function that hosts it), by name; a `warn`
/// line for each one the deployment does not run. A Lambda function starts many instances,
/// each logging this once: one line each keeps a burst's cold starts readable (twenty lines
/// per instance made some 500 lines at the local stack's start) and costs one log event.
pub fn log_placements_in_one_line(deployment: &str, placements: &[Placement]) {
    let (runs, elsewhere) = placements_in_words(placements);
    tracing::info!(deployment, runs, elsewhere, "services of this function");
    for p in placements {
        if let Runs::NotRun(reason) = p.runs {
            warn_not_run(deployment, p.service, reason);
        }
    }
}

/// The `warn` line of a service `deployment` does not run, with why.
fn warn_not_run(deployment: &str, service: Service, reason: &str) {
    tracing::warn!(
        deployment,
        service = service.name(),
        reason,
        "service not run: {reason}"
    );
}

/// The `runs` and `elsewhere` fields of [`log_placements_in_one_line`]: the names of the
/// services that run here (or that the configuration turns off, with `(off)`), comma-separated,
/// and `name (where)` of each one that runs elsewhere.
fn placements_in_words(placements: &[Placement]) -> (String, String) {
    let mut runs = Vec::new();
    let mut elsewhere = Vec::new();
    for p in placements {
        match p.runs {
            Runs::At(_) => runs.push(p.service.name().to_owned()),
            Runs::Off(_) => runs.push(format!("{} (off)", p.service.name())),
            Runs::Elsewhere(at) => elsewhere.push(format!("{} ({at})", p.service.name())),
            Runs::NotRun(_) => {}
        }
    }
    (runs.join(", "), elsewhere.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function's one cold-start line names each service once: here, or elsewhere with the
    /// function that hosts it.
    #[test]
    fn one_line_names_each_service_once_here_or_elsewhere() {
        let placements = [
            Placement {
                service: Service::HttpRoutes,
                runs: Runs::At("the api function"),
            },
            Placement {
                service: Service::Retention,
                runs: Runs::Off("retention_days = 0"),
            },
            Placement {
                service: Service::Probe,
                runs: Runs::Elsewhere("in the timer function"),
            },
            Placement {
                service: Service::Following,
                runs: Runs::NotRun("no reason"),
            },
        ];
        let (runs, elsewhere) = placements_in_words(&placements);
        assert_eq!(runs, "http-routes, retention (off)");
        assert_eq!(elsewhere, "probe (in the timer function)");
    }

    /// Every deployment declares every service once, in [`Service::ALL`]'s order: a service is
    /// never absent from a deployment, only "not run" with its reason.
    #[test]
    fn every_deployment_declares_every_service_once() {
        for d in [Deployment::Serve, Deployment::Aws] {
            let declared: Vec<Service> = d.services().iter().map(|p| p.service).collect();
            assert_eq!(declared, Service::ALL.to_vec(), "{d:?}");
        }
    }

    #[test]
    fn names_are_distinct_and_cells_hold_no_bar() {
        let mut names: Vec<&str> = Service::ALL.iter().map(|s| s.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Service::ALL.len());
        for line in table().lines().skip(2) {
            assert_eq!(line.matches(" | ").count(), 4, "{line}");
        }
    }

    #[test]
    fn serve_says_which_services_its_configuration_turns_off() {
        let config = Config::from_toml("retention_days = 0\n[delivery]\nreconcile_origins = 0\n")
            .expect("a configuration");
        let off: Vec<Service> = serve_as_configured(&config)
            .into_iter()
            .filter(|p| matches!(p.runs, Runs::Off(_)))
            .map(|p| p.service)
            .collect();
        assert_eq!(
            off,
            [
                Service::OriginReconciliation,
                Service::Probe,
                Service::Retention,
                Service::Notifications
            ]
        );
        let defaults = serve_as_configured(&Config::defaults());
        assert_eq!(defaults.len(), SERVE.len());
    }

    /// The card refresh runs only while a card waits to be read, saying why when it does not.
    #[test]
    fn serve_runs_the_card_refresh_only_while_a_card_is_unread() {
        let card_refresh = |config: &Config, unread| {
            serve_at_start(config, unread)
                .into_iter()
                .find(|p| p.service == Service::CardRefresh)
                .map(|p| p.runs)
        };
        let none = Config::defaults();
        assert_eq!(
            card_refresh(&none, 0),
            Some(Runs::Off("no [[agents]] entry: no card to read"))
        );
        let agent = Config::from_toml(
            "[[agents]]\nid = \"booking\"\ncard = \"card.json\"\npush_token = \"t\"\n",
        )
        .expect("a configuration");
        assert_eq!(
            card_refresh(&agent, 0),
            Some(Runs::Off("every agent's card was read at start"))
        );
        assert_eq!(
            card_refresh(&agent, 1),
            Deployment::Serve.runs(Service::CardRefresh)
        );
    }

    #[test]
    fn a_service_not_run_says_why() {
        assert_eq!(
            Runs::NotRun("retention_days = 0").cell(),
            "not run: retention_days = 0"
        );
    }
}
