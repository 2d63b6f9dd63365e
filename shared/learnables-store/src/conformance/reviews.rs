//! Reviews of expiring lessons follow the entry's history (expectations-v1 §16; learnables-v1
//! §10.2, §10.3, §14; docs/interpretation.md "Lessons whose end is noticed"): a property over
//! random sequences of lessons (with and without `expiresAt`), undos, activations, tombstones and
//! time passing, against a [`Model`] small enough to read at a glance.
//!
//! The rule the model states: an entry's value in force is its value in the active version; its
//! expiry is the `expiresAt` of the lesson that last changed the entry in the chain of versions
//! the active one was built from (none when that lesson had none, or the value came with the
//! definition). While a value with an expiry is in force, the entry has one open review (a
//! *period*), due at that expiry; the period ends when another value (or the same value from
//! another lesson) comes into force. A period that comes back, by an undo or an activation,
//! is a new period, named by the history line of the activation
//! (`{definition}/{collection}/{entry}@{version}~{line}`). A review is due exactly when the value
//! in force has an expiry that has passed, and each period is noticed once: at its expiry, or at
//! once when it begins with its expiry already passed ([`Period::noticed_by`]).
//!
//! [`reviews_follow_the_entrys_history`] checks a store against the model (each operation
//! through [`absorb_with_retry`], the state read back after each); the watcher's tests drive the
//! same [`Model`] through the watcher to check that each period is noticed once.

use std::collections::BTreeMap;
use std::sync::Arc;

use learnables::{
    activate, review_changes, teach, tombstone, DefinitionId, DefinitionState, Lesson, LessonDto,
    Registry, Review, TaughtBy, TenantId,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::json;

use super::{definition_with, via, DANA};
use crate::{absorb_with_retry, AbsorbError, DefinitionStore};

/// The entries of the collection `customers` the operations teach into.
pub const ENTRIES: [&str; 3] = ["northgate", "alhamra", "harbour"];

/// One operation of a sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// A lesson into entry `ENTRIES[entry]` with a mark never taught before (so it changes the
    /// entry), expiring `expires_in` minutes after it is taught, or never.
    Teach {
        /// Index into [`ENTRIES`].
        entry: usize,
        /// Minutes from the lesson to its `expiresAt`; `None`: no expiry.
        expires_in: Option<i64>,
    },
    /// Make version `n % versions + 1` active (refused when tombstoned; nothing when active).
    Activate(usize),
    /// Undo: make the version the active one was built from active again.
    Undo,
    /// Tombstone version `n % versions + 1` (refused when active; nothing when tombstoned).
    Tombstone(usize),
    /// Time passes, this many minutes.
    Pass(i64),
}

/// One operation.
pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..ENTRIES.len(), proptest::option::weighted(0.7, 1..240i64))
            .prop_map(|(entry, expires_in)| Op::Teach { entry, expires_in }),
        2 => any::<usize>().prop_map(Op::Activate),
        2 => Just(Op::Undo),
        1 => any::<usize>().prop_map(Op::Tombstone),
        3 => (1..300i64).prop_map(Op::Pass),
    ]
}

/// A sequence of 1 to 24 operations.
pub fn ops() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op(), 1..24)
}

/// What an operation asks of the authority, as the model decides it.
#[derive(Debug, Clone)]
pub enum Request {
    /// Teach this lesson at the model's `now`; it changes the entry.
    Teach(Lesson),
    /// Activate this version: `Some(written)` whether it changes the definition, `None` when
    /// the authority refuses it (tombstoned: 410).
    Activate(u64, Option<bool>),
    /// Tombstone this version: as [`Request::Activate`] (refused when active: 409).
    Tombstone(u64, Option<bool>),
    /// Nothing to ask (time passed, or an undo of version 1).
    Nothing,
}

/// One period of an entry's review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Period {
    /// Index into [`ENTRIES`].
    pub entry: usize,
    /// The version whose lesson taught the expiring value.
    pub version: u64,
    /// The history line (1 = the creation) of the activation that brought the value back, or
    /// `None` when the period began with the lesson.
    pub since: Option<u64>,
    /// The lesson's `expiresAt`.
    pub expires_at: jiff::Timestamp,
    /// When the value left force; `None` while in force.
    pub closed_at: Option<jiff::Timestamp>,
}

impl Period {
    /// Its review's subject id in `definition`.
    pub fn subject_id(&self, definition: &str) -> String {
        let base = format!(
            "{definition}/customers/{}@{}",
            ENTRIES[self.entry], self.version
        );
        match self.since {
            Some(line) => format!("{base}~{line}"),
            None => base,
        }
    }

    /// Whether it is noticed by `now`: its expiry passed while it was in force, or (still in
    /// force) it has passed by `now`. Operations happen at distinct instants, a minute apart,
    /// so "while in force" is `[begun, closed)`.
    pub fn noticed_by(&self, now: jiff::Timestamp) -> bool {
        match self.closed_at {
            None => self.expires_at <= now,
            Some(closed) => self.expires_at < closed,
        }
    }
}

#[derive(Debug, Clone)]
struct Version {
    /// Index of the version it was built from.
    parent: Option<usize>,
    /// The entry its lesson changed, and the lesson's expiry.
    taught: Option<(usize, Option<jiff::Timestamp>)>,
    tombstoned: bool,
}

/// The model: the definition's versions as a tree, the active one, the history's length, the
/// clock, and every review period so far.
#[derive(Debug, Clone)]
pub struct Model {
    versions: Vec<Version>,
    active: usize,
    lines: u64,
    now: jiff::Timestamp,
    periods: Vec<Period>,
    marks: u64,
}

impl Model {
    /// A definition just created at `start` (version 1, one history line), nothing expiring.
    pub fn new(start: jiff::Timestamp) -> Model {
        Model {
            versions: vec![Version {
                parent: None,
                taught: None,
                tombstoned: false,
            }],
            active: 0,
            lines: 1,
            now: start,
            periods: Vec::new(),
            marks: 0,
        }
    }

    /// The model's clock: the instant of the last operation.
    pub fn now(&self) -> jiff::Timestamp {
        self.now
    }

    /// Every period so far, in the order they began.
    pub fn periods(&self) -> &[Period] {
        &self.periods
    }

    /// The open reviews: each period in force, by subject id in `definition`, with its expiry
    /// (RFC 3339, UTC).
    pub fn open_reviews(&self, definition: &str) -> BTreeMap<String, String> {
        self.periods
            .iter()
            .filter(|p| p.closed_at.is_none())
            .map(|p| (p.subject_id(definition), p.expires_at.to_string()))
            .collect()
    }

    /// Applies `op`: the clock moves on (a minute, or the time passing), the model changes as
    /// the operation changes the definition, and the answer says what to ask of the authority.
    pub fn apply(&mut self, op: &Op) -> Request {
        let minutes = match op {
            Op::Pass(m) => *m,
            _ => 1,
        };
        self.now += jiff::SignedDuration::from_mins(minutes);
        let request = match op {
            Op::Pass(_) => Request::Nothing,
            Op::Teach { entry, expires_in } => {
                self.marks += 1;
                let expires_at = expires_in.map(|m| self.now + jiff::SignedDuration::from_mins(m));
                let lesson = Lesson::try_from(LessonDto {
                    collection: "customers".into(),
                    entry: ENTRIES[*entry].into(),
                    value: json!({ "pattern": format!("mark-{}\\.example", self.marks),
                                   "where": "from" }),
                    taught_by: DANA.into(),
                    reason: None,
                    expires_at: expires_at.map(|t| t.to_string()),
                })
                .unwrap_or_else(|e| panic!("a well-formed lesson: {e}"));
                self.versions.push(Version {
                    parent: Some(self.active),
                    taught: Some((*entry, expires_at)),
                    tombstoned: false,
                });
                self.active = self.versions.len() - 1;
                self.lines += 1;
                self.settle(None);
                Request::Teach(lesson)
            }
            Op::Activate(n) => {
                let target = n % self.versions.len();
                self.activate(target)
            }
            Op::Undo => match self.versions[self.active].parent {
                Some(parent) => self.activate(parent),
                None => Request::Nothing,
            },
            Op::Tombstone(n) => {
                let target = n % self.versions.len();
                let number = target as u64 + 1;
                if target == self.active {
                    Request::Tombstone(number, None)
                } else if self.versions[target].tombstoned {
                    Request::Tombstone(number, Some(false))
                } else {
                    self.versions[target].tombstoned = true;
                    self.lines += 1;
                    Request::Tombstone(number, Some(true))
                }
            }
        };
        request
    }

    fn activate(&mut self, target: usize) -> Request {
        let number = target as u64 + 1;
        if self.versions[target].tombstoned {
            return Request::Activate(number, None);
        }
        if target == self.active {
            return Request::Activate(number, Some(false));
        }
        self.active = target;
        self.lines += 1;
        self.settle(Some(self.lines));
        Request::Activate(number, Some(true))
    }

    /// The expiring value of `entry` in force in version `v`: the version whose lesson last
    /// changed it on the chain `v` was built from, and that lesson's expiry.
    fn expiring(&self, v: usize, entry: usize) -> Option<(u64, jiff::Timestamp)> {
        let mut at = Some(v);
        while let Some(i) = at {
            if let Some((e, expiry)) = self.versions[i].taught {
                if e == entry {
                    return expiry.map(|t| (i as u64 + 1, t));
                }
            }
            at = self.versions[i].parent;
        }
        None
    }

    /// After the active version changed: each entry's period goes on while the same expiring
    /// value is in force, ends otherwise, and a new one begins (`since`) for a value that came
    /// into force with an expiry.
    fn settle(&mut self, since: Option<u64>) {
        for entry in 0..ENTRIES.len() {
            let in_force = self.expiring(self.active, entry);
            let open = self
                .periods
                .iter()
                .position(|p| p.entry == entry && p.closed_at.is_none());
            if let Some(i) = open {
                let p = &self.periods[i];
                if in_force == Some((p.version, p.expires_at)) {
                    continue;
                }
                self.periods[i].closed_at = Some(self.now);
            }
            if let Some((version, expires_at)) = in_force {
                self.periods.push(Period {
                    entry,
                    version,
                    since,
                    expires_at,
                    closed_at: None,
                });
            }
        }
    }
}

/// The definition the property starts from, in tenant `tenant_name`: `customers` holding the
/// three [`ENTRIES`] with no marks, created at [`start`].
pub fn starting_definition(tenant_name: &str) -> DefinitionState {
    let entries: serde_json::Map<String, serde_json::Value> = ENTRIES
        .iter()
        .map(|e| {
            (
                (*e).to_owned(),
                json!({ "label": format!("{e} Ltd"), "value": { "marks": [] } }),
            )
        })
        .collect();
    definition_with(
        tenant_name,
        &json!({ "customers": {
            "learnable": "marks", "entry": "customer",
            "teaches": "which customer a message belongs to",
            "entries": entries,
        } }),
        &Registry::builtin(),
    )
}

/// The instant [`starting_definition`] is created at (the suite's `now(0)`), where the
/// [`Model`] starts.
pub fn start() -> jiff::Timestamp {
    super::now(0)
}

/// Carries out `request` on definition `id` of `tenant` in `store` at `now`; answers whether a
/// new state was written, or `None` when the authority refused.
///
/// # Panics
/// When the store fails, or the authority refuses a lesson (the model only teaches lessons that
/// change the entry).
pub async fn carry_out<S: DefinitionStore + ?Sized>(
    store: &S,
    tenant: &TenantId,
    id: &DefinitionId,
    request: &Request,
    now: jiff::Timestamp,
) -> Option<bool> {
    let registry = Registry::builtin();
    let dana = || TaughtBy::parse(DANA).unwrap_or_else(|e| panic!("a person: {e}"));
    let done = match request {
        Request::Nothing => return Some(false),
        Request::Teach(lesson) => absorb_with_retry(store, tenant, id, |s| {
            teach(s, lesson, via(), now, &registry)
        })
        .await
        .map(|a| a.written),
        Request::Activate(n, _) => absorb_with_retry(store, tenant, id, |s| {
            activate(s, *n, dana(), via(), None, now)
        })
        .await
        .map(|a| a.written),
        Request::Tombstone(n, _) => absorb_with_retry(store, tenant, id, |s| {
            tombstone(s, *n, dana(), via(), None, now)
        })
        .await
        .map(|a| a.written),
    };
    match done {
        Ok(written) => Some(written),
        Err(AbsorbError::Authority(_)) => None,
        Err(e) => panic!("the store failed: {e}"),
    }
}

/// What `request` should come to ([`carry_out`]'s answer).
pub fn expected(request: &Request) -> Option<bool> {
    match request {
        Request::Nothing => Some(false),
        Request::Teach(_) => Some(true),
        Request::Activate(_, e) | Request::Tombstone(_, e) => *e,
    }
}

/// The subject ids of `reviews` in `definition`.
pub fn subject_ids(definition: &DefinitionId, reviews: &[Review]) -> Vec<String> {
    let mut ids: Vec<String> = reviews.iter().map(|r| r.subject_id(definition)).collect();
    ids.sort();
    ids
}

/// The property on `store`, for `cases` sequences: after each operation of a sequence, carried
/// out through [`absorb_with_retry`], the stored definition's open reviews are the model's open
/// periods (subject id and expiry), and what the step opened and closed
/// ([`learnables::review_changes`]) is what began and ended in the model. Each sequence works on
/// its own tenant's definition. Runs inside a multi-threaded Tokio runtime.
pub async fn reviews_follow_the_entrys_history_in<S: DefinitionStore + 'static>(
    store: Arc<S>,
    cases: u32,
) {
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let case = std::sync::atomic::AtomicU64::new(0);
    let result = runner.run(&ops(), |ops| {
        let n = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let store = store.clone();
        tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(one_sequence(&*store, n, &ops))
        })
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// One sequence of the property, on tenant `reviews-{n}`.
async fn one_sequence<S: DefinitionStore + ?Sized>(
    store: &S,
    n: u64,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let tenant_name = format!("reviews-{n}");
    let tenant = super::tenant(&tenant_name);
    let id = super::definition_id();
    let first = starting_definition(&tenant_name);
    store
        .create(&tenant, &id, &first)
        .await
        .map_err(|e| TestCaseError::fail(format!("create: {e}")))?;
    let mut model = Model::new(start());
    let mut before = first;
    for (i, op) in ops.iter().enumerate() {
        let periods_before = model.periods().len();
        let open_before: Vec<usize> = (0..periods_before)
            .filter(|p| model.periods()[*p].closed_at.is_none())
            .collect();
        let request = model.apply(op);
        let done = carry_out(store, &tenant, &id, &request, model.now()).await;
        prop_assert_eq!(done, expected(&request), "step {} {:?} of {:?}", i, op, ops);
        let after = store
            .get(&tenant, &id)
            .await
            .map_err(|e| TestCaseError::fail(format!("get: {e}")))?
            .ok_or_else(|| TestCaseError::fail("the definition is gone"))?;
        let stored: BTreeMap<String, String> = after
            .reviews()
            .values()
            .map(|r| (r.subject_id(&id), r.expires_at.to_string()))
            .collect();
        prop_assert_eq!(
            &stored,
            &model.open_reviews(id.as_str()),
            "open reviews after step {} {:?} of {:?}",
            i,
            op,
            ops
        );
        let changes = review_changes(&before, &after);
        let name = |p: &Period| p.subject_id(id.as_str());
        let mut opened: Vec<String> = model.periods()[periods_before..].iter().map(name).collect();
        opened.sort();
        let mut closed: Vec<String> = open_before
            .iter()
            .map(|p| &model.periods()[*p])
            .filter(|p| p.closed_at.is_some())
            .map(name)
            .collect();
        closed.sort();
        prop_assert_eq!(
            (
                subject_ids(&id, &changes.opened),
                subject_ids(&id, &changes.closed)
            ),
            (opened, closed),
            "opened and closed by step {} {:?} of {:?}",
            i,
            op,
            ops
        );
        before = after;
    }
    Ok(())
}

/// [`reviews_follow_the_entrys_history_in`] with 48 sequences: the conformance check.
pub async fn reviews_follow_the_entrys_history<S: DefinitionStore + 'static>(store: Arc<S>) {
    reviews_follow_the_entrys_history_in(store, 48).await;
}
