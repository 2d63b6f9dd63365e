//! The first guess at what a step must load; the engine asks for the rest through [`Need`].

use super::{Input, PushItem, ReportedFact};
use crate::ids::{ExpectationRef, TaskRef};
use crate::settings::Settings;
use crate::slice::{Need, Scope};

/// What `input` obviously touches: its subjects, the ids it names, its fact keys, its task, and
/// the agent's live count: below `settings`' §13.2 bound less what the input may raise, a count
/// of at most that is as good as the exact one ([`Scope::live_enough`]).
pub fn initial_scope(input: &Input, settings: &Settings) -> Scope {
    let mut scope = Scope::default();
    match input {
        Input::Push { agent, items } => {
            // Each item raises at most its expectations and, for a question, one more.
            let may_raise: u64 = items
                .iter()
                .map(|item| match item {
                    PushItem::Raise {
                        expectations,
                        question_at,
                        ..
                    } => expectations.len() as u64 + u64::from(question_at.is_some()),
                    _ => 0,
                })
                .sum();
            if may_raise > 0 {
                scope.live_enough.insert(
                    agent.id.clone(),
                    settings.max_open_per_agent.saturating_sub(may_raise),
                );
            }
            for item in items {
                match item {
                    PushItem::Raise {
                        origin,
                        expectations,
                        ..
                    } => {
                        scope.add(Need::Task(TaskRef {
                            agent: agent.id.clone(),
                            task_id: origin.task_id.clone(),
                        }));
                        scope.add(Need::AgentLive(agent.id.clone()));
                        for e in expectations.iter().flatten() {
                            scope.add(Need::Subject(e.subject.clone()));
                            let named = std::iter::once(&e.expectation_id)
                                .chain(e.supersedes.iter())
                                .chain(e.anchor.iter().map(|a| &a.expectation_id))
                                .chain(e.after.iter());
                            for id in named {
                                scope.add(Need::Expectation(ExpectationRef {
                                    agent: agent.id.clone(),
                                    id: id.clone(),
                                }));
                            }
                        }
                    }
                    PushItem::Lineage { origin, parent } => {
                        for task_id in [&origin.task_id, parent] {
                            scope.add(Need::Task(TaskRef {
                                agent: agent.id.clone(),
                                task_id: task_id.clone(),
                            }));
                        }
                    }
                    PushItem::Withdraw { ids, .. } => {
                        for id in ids {
                            scope.add(Need::Expectation(ExpectationRef {
                                agent: agent.id.clone(),
                                id: id.clone(),
                            }));
                        }
                    }
                    PushItem::Facts(facts) => add_facts(&mut scope, facts),
                    PushItem::Status { origin, .. } => {
                        scope.add(Need::Task(TaskRef {
                            agent: agent.id.clone(),
                            task_id: origin.task_id.clone(),
                        }));
                    }
                    PushItem::Malformed { .. } | PushItem::Ignored { .. } => {}
                }
            }
        }
        Input::Facts(facts) => add_facts(&mut scope, facts),
        Input::Timer(key) => {
            scope.add(Need::Subject(key.subject.clone()));
        }
    }
    scope
}

/// What reporting `facts` touches: each fact's unplaced subject, its key and its subject if named.
fn add_facts(scope: &mut Scope, facts: &[ReportedFact]) {
    for f in facts {
        scope.add(Need::Subject(super::facts::unplaced_subject(&f.fact_key)));
        scope.add(Need::FactKey(f.fact_key.clone()));
        if let Some(s) = &f.subject {
            scope.add(Need::Subject(s.clone()));
        }
    }
}
