//! `serve`'s loops, started from its service list: [`crate::services::SERVE`] as the
//! configuration and the start leave it ([`crate::services::serve_at_start`]) says which services
//! run, and `serve` starts exactly the loops those services need ([`loops_for`]), as each AWS
//! function builds what its services need ([`crate::functions::Function::needs`]). A service the
//! list turns off starts nothing; a loop runs only for a service the list runs.

use std::collections::BTreeSet;

use crate::services::{Placement, Runs, Service};

/// One loop of `serve` (the HTTP server counted as one), started when a service it carries runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Loop {
    /// axum on the listener: every route of the API, the Learnables authority's and
    /// `GET /metrics`.
    Http,
    /// The timer loop over the deadline index ([`super::timers`]).
    Timers,
    /// The delivery lanes, one per agent ([`super::lanes`]).
    Lanes,
    /// Origin reconciliation's polling of the origin tasks it follows
    /// (`watcher_delivery::reconcile::Reconciler::run`).
    Reconciler,
    /// The card refresh loop ([`super::cards`]).
    CardRefresh,
    /// The registration probe of each agent with `probe = true` whose card was read at start
    /// (the card refresh loop probes the others when it reads their card).
    Probe,
    /// The retention loop ([`super::retention`]).
    Retention,
    /// The notifier loop over the `[[notify]]` channels (`watcher_notify::Notifier::run`).
    Notifier,
}

impl Loop {
    /// Every loop, in the order `serve` starts them.
    pub const ALL: [Loop; 8] = [
        Loop::Http,
        Loop::Timers,
        Loop::Reconciler,
        Loop::Probe,
        Loop::Retention,
        Loop::CardRefresh,
        Loop::Notifier,
        Loop::Lanes,
    ];

    /// The loop's name, as `serve` logs it (`loops=…`).
    pub fn name(self) -> &'static str {
        match self {
            Loop::Http => "http",
            Loop::Timers => "timers",
            Loop::Lanes => "lanes",
            Loop::Reconciler => "reconciler",
            Loop::CardRefresh => "card-refresh",
            Loop::Probe => "probe",
            Loop::Retention => "retention",
            Loop::Notifier => "notifier",
        }
    }

    /// The services of [`crate::services::SERVE`] this loop carries (in the words of their
    /// placements there); it is started when one of them runs.
    pub fn carries(self) -> &'static [Service] {
        match self {
            Loop::Http => &[
                Service::HttpRoutes,
                Service::Metrics,
                Service::LessonReviews,
            ],
            Loop::Timers => &[
                Service::Deadlines,
                Service::LateTimers,
                Service::HandOver,
                Service::LessonReviews,
            ],
            Loop::Lanes => &[
                Service::SendOnce,
                Service::LostSendLookup,
                Service::AgentLanes,
                Service::Retries,
                Service::RetryNow,
                Service::Following,
                Service::RateLimit,
            ],
            Loop::Reconciler => &[Service::OriginReconciliation],
            Loop::CardRefresh => &[Service::CardRefresh],
            Loop::Probe => &[Service::Probe],
            Loop::Retention => &[Service::Retention],
            Loop::Notifier => &[Service::Notifications],
        }
    }
}

/// The loops `placements` need: every loop that carries a service that runs there
/// ([`Runs::At`]); none for a service that is off or not run.
pub fn loops_for(placements: &[Placement]) -> BTreeSet<Loop> {
    Loop::ALL
        .into_iter()
        .filter(|l| {
            placements
                .iter()
                .any(|p| matches!(p.runs, Runs::At(_)) && l.carries().contains(&p.service))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::{serve_at_start, SERVE};
    use watcher_config::Config;

    /// Every service `serve` declares as running is carried by a loop, and every loop carries a
    /// service: the list and the loops cannot drift apart.
    #[test]
    fn every_service_serve_runs_has_a_loop_and_every_loop_a_service() {
        for p in SERVE {
            assert!(
                Loop::ALL.iter().any(|l| l.carries().contains(&p.service)),
                "{:?} runs in serve but no loop carries it",
                p.service
            );
        }
        for l in Loop::ALL {
            assert!(!l.carries().is_empty(), "{l:?}");
            for s in l.carries() {
                assert!(
                    matches!(
                        crate::services::Deployment::Serve.runs(*s),
                        Some(Runs::At(_))
                    ),
                    "{l:?} carries {s:?}, which serve does not run"
                );
            }
        }
        assert_eq!(loops_for(SERVE), Loop::ALL.into_iter().collect());
    }

    /// A service the configuration turns off starts no loop; a loop shared by services runs
    /// while one of them does.
    #[test]
    fn a_service_turned_off_starts_no_loop() {
        let config = Config::from_toml("retention_days = 0\n[delivery]\nreconcile_origins = 0\n")
            .expect("a configuration");
        let loops = loops_for(&serve_at_start(&config, 0));
        assert_eq!(
            loops,
            [Loop::Http, Loop::Timers, Loop::Lanes]
                .into_iter()
                .collect()
        );
    }
}
