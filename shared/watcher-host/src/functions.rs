//! The AWS functions of `template.yaml` and the services of [`crate::services::AWS`] each one
//! hosts, declared once. What a function builds at its cold start follows from its services
//! ([`Function::needs`]): the A2A client and the origin reconciler only where lapse tasks are
//! sent or followed, the shared rate buckets only where they are sent, the agents' cards read
//! over the network only where they are refreshed. Each function logs its services at cold
//! start, and those it leaves to the others, one line each ([`Function::placements`]).

use crate::services::{Placement, Runs, Service, AWS};

/// One function of `template.yaml` built from this crate's parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Function {
    /// `functions/api`: the routes behind the HTTP API.
    Api,
    /// `functions/timer`: the schedules, the timer queue (timers and lanes' wake-ups) and the
    /// sweep's six duties, each on its own schedule.
    Timer,
    /// `functions/submitter`: the lapse queue's consumer.
    Submitter,
    /// `functions/lesson-write`: the Learnables authority's routes, and the reviews of its
    /// lessons given to the watcher (expectations-v1 §16).
    LessonWrite,
}

/// What a function builds at its cold start, from the services it hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Needs {
    /// The A2A client that posts and follows lapse tasks, and the origin reconciler on it
    /// (`SendOnce`, `Following`, `OriginReconciliation`, `Probe`).
    pub a2a_client: bool,
    /// The per-agent rate buckets in the table (`RateLimit`).
    pub rate_buckets: bool,
    /// A handed-back lapse message's visibility set to its next attempt (`Retries`).
    pub redelivery: bool,
    /// Every configured agent's card read over the network at cold start (`CardRefresh`);
    /// otherwise the card kept in the table is used and only an agent with none kept is read.
    pub reads_cards: bool,
    /// Schedules deleted in the function itself: the one the schedules and the sweep fire
    /// (`LateTimers`), on no caller's path; every other function hands its schedule deletes to the timer queue, when
    /// there is one, so its answers do not wait for `DeleteSchedule`.
    pub deletes_schedules: bool,
}

impl Needs {
    /// What either `self` or `other` needs.
    pub fn union(self, other: Needs) -> Needs {
        Needs {
            a2a_client: self.a2a_client || other.a2a_client,
            rate_buckets: self.rate_buckets || other.rate_buckets,
            redelivery: self.redelivery || other.redelivery,
            reads_cards: self.reads_cards || other.reads_cards,
            deletes_schedules: self.deletes_schedules || other.deletes_schedules,
        }
    }
}

impl Function {
    /// The four functions, in the template's order.
    pub const ALL: [Function; 4] = [
        Function::Api,
        Function::Timer,
        Function::Submitter,
        Function::LessonWrite,
    ];

    /// The function's name, as in `functions/` and in its cold-start log lines.
    pub fn name(self) -> &'static str {
        match self {
            Function::Api => "api",
            Function::Timer => "timer",
            Function::Submitter => "submitter",
            Function::LessonWrite => "lesson-write",
        }
    }

    /// The services of [`AWS`] this function hosts. Every service AWS runs is hosted by at
    /// least one function, except `Retention`, which is DynamoDB's TTL (checked below).
    pub fn hosts(self) -> &'static [Service] {
        match self {
            // Ingesting an artifact arms its deadlines' schedules; a deadline already past
            // lapses at once and its lapse task is put on the queue after the commit.
            Function::Api => &[
                Service::HttpRoutes,
                Service::Deadlines,
                Service::HandOver,
                Service::RetryNow,
                Service::Metrics,
            ],
            Function::Timer => &[
                Service::Deadlines,
                Service::LateTimers,
                Service::HandOver,
                Service::OriginReconciliation,
                Service::Following,
                Service::CardRefresh,
                Service::Probe,
                Service::Metrics,
                Service::Notifications,
            ],
            Function::Submitter => &[
                Service::SendOnce,
                Service::LostSendLookup,
                Service::AgentLanes,
                Service::Retries,
                Service::OriginReconciliation,
                Service::RateLimit,
                Service::Metrics,
            ],
            // A review arms its deadline's schedule as a push does; the timer lapses it.
            Function::LessonWrite => &[
                Service::HttpRoutes,
                Service::Deadlines,
                Service::LessonReviews,
                Service::Metrics,
            ],
        }
    }

    /// Whether this function hosts `service`.
    pub fn runs(self, service: Service) -> bool {
        self.hosts().contains(&service)
    }

    /// What the function builds at its cold start, from [`Function::hosts`].
    pub fn needs(self) -> Needs {
        let any = |services: &[Service]| services.iter().any(|s| self.runs(*s));
        Needs {
            a2a_client: any(&[
                Service::SendOnce,
                Service::Following,
                Service::OriginReconciliation,
                Service::Probe,
            ]),
            rate_buckets: any(&[Service::RateLimit]),
            redelivery: any(&[Service::Retries]),
            reads_cards: any(&[Service::CardRefresh]),
            deletes_schedules: any(&[Service::LateTimers]),
        }
    }

    /// Every service of [`AWS`] as this function logs it at cold start: where it runs when the
    /// function hosts it; otherwise [`Runs::Elsewhere`] naming the functions (or the table) that
    /// do.
    pub fn placements(self) -> Vec<Placement> {
        AWS.iter()
            .map(|p| {
                if self.runs(p.service) {
                    *p
                } else {
                    Placement {
                        service: p.service,
                        runs: Runs::Elsewhere(elsewhere(p.service)),
                    }
                }
            })
            .collect()
    }
}

/// Where a service this function leaves to others runs, in a log line's words.
fn elsewhere(service: Service) -> &'static str {
    let hosted: Vec<Function> = Function::ALL
        .into_iter()
        .filter(|f| f.runs(service))
        .collect();
    match hosted.as_slice() {
        [] => "in DynamoDB (TTL), no function",
        [Function::Api] => "in the api function",
        [Function::LessonWrite] => "in the lesson-write function",
        [Function::Timer] => "in the timer function",
        [Function::Submitter] => "in the submitter function",
        [Function::Api, Function::Timer] => "in the api and timer functions",
        [Function::Api, Function::LessonWrite] => "in the api and lesson-write functions",
        [Function::Api, Function::Timer, Function::LessonWrite] => {
            "in the api, timer and lesson-write functions"
        }
        [Function::Timer, Function::Submitter] => "in the timer and submitter functions",
        _ => "in the other functions",
    }
}

/// The Markdown table of `docs/deployments.md` "Which function runs what": one row per
/// function, with the services it hosts and what it builds at its cold start. Cells hold no `|`.
pub fn table() -> String {
    let mut out = String::from("| function | services | builds at cold start |\n|---|---|---|\n");
    for f in Function::ALL {
        let services: Vec<String> = f
            .hosts()
            .iter()
            .map(|s| format!("`{}`", s.name()))
            .collect();
        let n = f.needs();
        let mut builds = vec!["DynamoDB, Scheduler and SQS clients (its watcher's effects)"];
        if n.a2a_client {
            builds.push("the A2A client and the origin reconciler");
        }
        if n.rate_buckets {
            builds.push("the rate buckets in the table");
        }
        if n.redelivery {
            builds.push("the lapse queue's visibility changes");
        }
        builds.push(if n.reads_cards {
            "every agent's card read over the network"
        } else {
            "the cards kept in the table (an agent with none kept is read)"
        });
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            f.name(),
            services.join(", "),
            builds.join("; ")
        ));
    }
    out
}

/// What every function in `functions` needs, together (tests build one set of parts for all).
pub fn needs_of(functions: &[Function]) -> Needs {
    functions
        .iter()
        .fold(Needs::default(), |n, f| n.union(f.needs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every service AWS runs is hosted by some function, `Retention` (DynamoDB's TTL) alone
    /// by none; the metrics by each.
    #[test]
    fn every_service_aws_runs_is_hosted_by_a_function() {
        for p in AWS {
            let hosts: Vec<Function> = Function::ALL
                .into_iter()
                .filter(|f| f.runs(p.service))
                .collect();
            match p.service {
                Service::Retention => assert!(hosts.is_empty()),
                Service::Metrics => assert_eq!(hosts, Function::ALL),
                _ => assert!(
                    matches!(p.runs, Runs::At(_)) && !hosts.is_empty(),
                    "{:?}",
                    p.service
                ),
            }
        }
    }

    #[test]
    fn the_api_builds_no_a2a_client_and_reads_no_card_the_timer_reads_them() {
        assert_eq!(Function::Api.needs(), Needs::default());
        assert_eq!(Function::LessonWrite.needs(), Needs::default());
        assert_eq!(
            Function::Timer.needs(),
            Needs {
                a2a_client: true,
                reads_cards: true,
                deletes_schedules: true,
                ..Needs::default()
            }
        );
        assert_eq!(
            Function::Submitter.needs(),
            Needs {
                a2a_client: true,
                rate_buckets: true,
                redelivery: true,
                reads_cards: false,
                deletes_schedules: false,
            }
        );
        // Together (as `serve`-like tests build them), the timer's deletes are made at once.
        assert!(needs_of(&Function::ALL).deletes_schedules);
    }

    #[test]
    fn a_function_logs_every_service_and_where_the_others_run() {
        let api = Function::Api.placements();
        assert_eq!(api.len(), AWS.len());
        let retries = api
            .iter()
            .find(|p| p.service == Service::Retries)
            .map(|p| p.runs);
        assert_eq!(retries, Some(Runs::Elsewhere("in the submitter function")));
        let retention = api
            .iter()
            .find(|p| p.service == Service::Retention)
            .map(|p| p.runs);
        assert_eq!(
            retention,
            Some(Runs::Elsewhere("in DynamoDB (TTL), no function"))
        );
    }
}
