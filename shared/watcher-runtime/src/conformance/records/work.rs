//! The conformance checks of cost and order: a step reads the same at 10,000 open expectations as
//! at 1,000 (the store's work counter), and input numbers strictly increase.

use super::*;

/// `next_sequence` keeps its contract ([`Records::next_sequence`](crate::store::Records::next_sequence)), also under concurrency: no
/// number is answered twice, one caller sees strictly increasing numbers, and a number asked
/// for after others were answered (in this process) is greater than them. Numbers need not be
/// dense (the DynamoDB store answers time-ordered ids). A store answering a duplicate fails.
pub async fn sequence_strictly_increases<S: Store + 'static>(store: Arc<S>) {
    let first = store.next_sequence().await.expect("next_sequence");
    let second = store.next_sequence().await.expect("next_sequence");
    assert!(second > first, "{second} > {first}");

    const TASKS: usize = 8;
    const EACH: usize = 50;
    let mut joins = Vec::new();
    for _ in 0..TASKS {
        let store = Arc::clone(&store);
        joins.push(tokio::spawn(async move {
            let mut mine = Vec::with_capacity(EACH);
            for _ in 0..EACH {
                mine.push(store.next_sequence().await.expect("next_sequence"));
            }
            mine
        }));
    }
    let mut all = BTreeSet::new();
    for j in joins {
        let mine = j.await.expect("sequence task");
        assert!(
            mine.windows(2).all(|w| w[0] < w[1]),
            "one caller sees strictly increasing numbers: {mine:?}"
        );
        for n in mine {
            assert!(n > second, "every later number is greater than {second}");
            assert!(all.insert(n), "{n} was handed out twice");
        }
    }
    assert_eq!(all.len(), TASKS * EACH);
    let last = store.next_sequence().await.expect("next_sequence");
    let max = all.last().copied().unwrap_or(second);
    assert!(last > max, "{last} > every number before ({max})");
}

/// Subjects per filler commit: within one DynamoDB transaction (100 items; a filler subject
/// writes three).
const FILL_SUBJECTS: usize = 30;

/// Filler commits in flight at once.
const FILL_AT_ONCE: usize = 8;

/// Grows tenant `t`'s record to `to` open expectations of agent `booking` (one subject each,
/// from `from`) and as many lapse tasks, in commits of [`FILL_SUBJECTS`] subjects, a few at once.
pub(crate) async fn grow<S: Store + ?Sized>(store: &S, t: &Tenant, from: usize, to: usize) {
    use futures_util::StreamExt as _;
    let chunks = (from..to).step_by(FILL_SUBJECTS).map(|i| {
        let end = (i + FILL_SUBJECTS).min(to);
        async move {
            let subjects = (i..end)
                .map(|k| {
                    subject_with_record(t, &format!("FILL-{k}"), &format!("fill-{k}"), k as u64)
                })
                .collect();
            store
                .commit(t, Commit::of_subjects(subjects))
                .await
                .expect("commit filler subjects");
            commit_outbox(store, t, numbered_entries(t, "fill-", i, end - i)).await;
        }
    });
    futures_util::stream::iter(chunks)
        .buffer_unordered(FILL_AT_ONCE)
        .collect::<Vec<()>>()
        .await;
}

/// The work (`Upkeep::work_done`) of one round of request steps at the current size: a push
/// raising one expectation on a new subject (live count, load, commit), a fact satisfying it,
/// a status-update lookup by task id, and the first and a middle page of `GET /v1/lapses`.
pub(crate) async fn one_round<S: Store + 'static>(
    store: &Arc<S>,
    t: &Tenant,
    round: usize,
    open: usize,
) -> Vec<u64> {
    // The §13.2 bound raised above the size measured, so a run past 100,000 open of one agent
    // measures the steps rather than the refusal.
    let settings = Settings {
        max_open_per_agent: Settings::default().max_open_per_agent.max(2 * open as u64),
        ..Settings::default()
    };
    let watcher = Watcher::new(Arc::clone(store), Directory::new(), settings);
    let work = || store.work_done().expect("counted");
    let subject = format!("NEW-{round}");
    let key = format!("manifest:new-{round}");
    let mut costs = Vec::new();

    let before = work();
    let applied = watcher
        .apply(
            t,
            &raise(
                &format!("task-new-{round}"),
                vec![expectation(
                    &format!("new-{round}"),
                    "shipment.manifest",
                    &subject,
                    &key,
                    at(60),
                    Some(at(180)),
                )],
            ),
            t0(),
        )
        .await
        .expect("raise");
    assert!(
        applied
            .effects
            .iter()
            .any(|e| matches!(e, watcher_core::engine::Effect::Raised { .. })),
        "the push raises its expectation: {:?}",
        applied.effects
    );
    costs.push(work() - before);

    let before = work();
    watcher
        .apply(
            t,
            &Input::Facts(vec![ReportedFact {
                fact_key: fact_key(&key),
                observed_at: at(5),
                observed_at_given: None,
                mapping: None,
                subject: Some(shipment(&subject)),
                source: source(),
            }]),
            at(5),
        )
        .await
        .expect("fact");
    costs.push(work() - before);

    let before = work();
    let found = store
        .outbox_by_task(t, &agent("booking"), "task-fill-200")
        .await
        .expect("outbox_by_task");
    assert_eq!(ids(&found), ["lapse:fill-200"]);
    costs.push(work() - before);

    let mut query = LapseQuery {
        limit: 100,
        ..LapseQuery::default()
    };
    let before = work();
    let page = store.lapses_page(t, &query).await.expect("page");
    costs.push(work() - before);
    query.after = page.next;
    query.agent = Some(agent("billing"));
    let before = work();
    let page = store.lapses_page(t, &query).await.expect("page");
    assert_eq!(page.entries.len(), 100);
    assert!(page
        .entries
        .iter()
        .all(|(_, o)| o.agent == agent("billing")));
    costs.push(work() - before);
    costs
}

/// No step reads more than it must (issue 10): the work a store counts (`Upkeep::work_done`:
/// records, index entries or SQLite instructions) for a push raising one expectation, a fact, a
/// status-update lookup by task id and a page of lapse tasks is about the same at 400 and at
/// 4,000 open expectations and lapse tasks of the same agent (at most twice, plus a little; a
/// read of every open expectation or lapse task would cost ten times as much). Not timing.
/// A store that does not count its work (`work_done` is `None`) fails the check: a fixture
/// without a counter would otherwise pass it unchecked (the DynamoDB store's did, once).
pub async fn steps_read_what_they_must<S: Store + 'static>(store: Arc<S>) {
    steps_read_the_same_at(store, 400, 4_000).await;
}

/// [`steps_read_the_same_at`], for a store's own slow test run by hand: checks that the store
/// counted each of the five steps, and prints each step's work at both sizes.
pub async fn print_steps_at<S: Store + 'static>(store: Arc<S>, small: usize, large: usize) {
    let measured = steps_read_the_same_at(store, small, large).await;
    assert_eq!(measured.len(), 5, "the store counts its work");
    for (step, at_small, at_large) in measured {
        println!("{step}: work {at_small} at {small} open, {at_large} at {large}");
    }
}

/// [`steps_read_what_they_must`] at `small` and `large` open expectations (`large` > `small`):
/// each step's work at `large` is at most twice its work at `small` plus 20. Answers each step's
/// name and its work at both sizes. The suite checks 400 against 4,000; a store's own slow test
/// may check larger sizes.
pub async fn steps_read_the_same_at<S: Store + 'static>(
    store: Arc<S>,
    small: usize,
    large: usize,
) -> Vec<(&'static str, u64, u64)> {
    assert!(
        store.work_done().is_some(),
        "steps_read_what_they_must: the store does not count its work (`Upkeep::work_done` is \
         None); give its conformance fixture a counter, or the check would pass unchecked"
    );
    let t = tenant("tenant-a");
    grow(&*store, &t, 0, small).await;
    let at_small = one_round(&store, &t, 0, small).await;
    grow(&*store, &t, small, large).await;
    let at_large = one_round(&store, &t, 1, large).await;
    let names = [
        "push",
        "fact",
        "status update",
        "first page",
        "agent's page",
    ];
    let mut measured = Vec::new();
    for ((name, s), l) in names.iter().zip(&at_small).zip(&at_large) {
        assert!(
            *l <= 2 * s + 20,
            "{name}: work {l} at {large} open vs {s} at {small}: it reads what grows with the record"
        );
        measured.push((*name, *s, *l));
    }
    measured
}
