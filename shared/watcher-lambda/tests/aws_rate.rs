//! The rate limit per agent holds across submitter instances (expectations-v1 §13.2; docs/
//! dynamodb.md "Rate buckets"): two submitters sharing the agent's bucket in the table, each
//! woken for the agent at the same moment, send no more than `burst` at once together. Needs the
//! emulator (`bash infra/moto.sh`, `AWS_ENDPOINT_URL`).

use crate::common::emulator_table;
use crate::common::submitting::{self, lanes, queued, stored, t0, wake_event};

use std::collections::HashMap;
use std::sync::Arc;

use a2a_types::TaskState;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_delivery::testing::{spawn_capture_agent, Behaviour, Reply};
use watcher_delivery::{AgentEndpoint, RateBuckets, RateLimit, Submitter};
use watcher_lambda::rate::DynamoRateBuckets;
use watcher_lambda::submitter::{After, LaneRun};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::OutboxEntry;

const LIMIT: RateLimit = RateLimit {
    per_minute: 1,
    burst: 3,
};

fn entry(id: &str) -> OutboxEntry {
    queued("busy", id, &format!("exp-{id}"))
}

fn submitter(buckets: Arc<dyn RateBuckets>) -> Submitter {
    submitting::submitter(LIMIT).with_rate_buckets(buckets)
}

/// `instances` each woken for the agent at `at`, at the same moment.
async fn both(
    store: &MemoryStore,
    instances: [&Submitter; 2],
    endpoints: &HashMap<(Tenant, AgentId), AgentEndpoint>,
    at: Instant,
) -> (Vec<LaneRun>, Vec<LaneRun>) {
    let [one, two] = instances;
    let (one, two) = (lanes(store, one, endpoints), lanes(store, two, endpoints));
    tokio::join!(
        submitting::run_at(&one, wake_event(&["busy"]), at),
        submitting::run_at(&two, wake_event(&["busy"]), at),
    )
}

/// Two submitter instances woken for one agent with ten lapse tasks, at the same instant: three
/// go (the burst), not three each; both lanes ask to be woken when a token is free (a minute
/// later at one a minute), and then exactly one more goes.
#[tokio::test]
async fn two_submitters_sharing_the_bucket_never_exceed_burst() {
    let (ddb, name) = emulator_table("rate-two").await;
    let agent =
        spawn_capture_agent(Behaviour::always(Reply::task("t", TaskState::Completed))).await;
    let ids: Vec<String> = (0..10).map(|n| format!("m{n}")).collect();
    let store = stored(ids.iter().map(|id| entry(id)).collect()).await;
    let mut endpoints = HashMap::new();
    endpoints.insert(
        (Tenant::default_tenant(), AgentId::parse("busy").unwrap()),
        AgentEndpoint::configured(agent.url(), None),
    );
    // Each instance its own client and bucket handle, as two Lambda instances would have.
    let one = submitter(Arc::new(DynamoRateBuckets::new(ddb.clone(), &name, LIMIT)));
    let two = submitter(Arc::new(DynamoRateBuckets::new(ddb.clone(), &name, LIMIT)));
    let (a, b) = both(&store, [&one, &two], &endpoints, t0()).await;
    assert_eq!(agent.request_count(), 3, "the burst, across both instances");
    // Each lane waits for the next free token: a minute.
    let minute = Instant::parse("2026-09-10T12:01:00Z").unwrap();
    for runs in [&a, &b] {
        assert_eq!(runs[0].after, After::WakeAt(minute), "{runs:?}");
    }
    // A minute on, one token is free for the whole deployment.
    let (_, _) = both(&store, [&one, &two], &endpoints, minute).await;
    assert_eq!(agent.request_count(), 4);
}

/// Twenty concurrent takers on two handles of one agent's bucket: exactly `burst` tokens are
/// granted, each refusal naming when the next is free; another agent's bucket is untouched.
#[tokio::test]
async fn concurrent_takers_get_exactly_burst_tokens() {
    let (ddb, name) = emulator_table("rate-race").await;
    let handles = [
        DynamoRateBuckets::new(ddb.clone(), &name, LIMIT),
        DynamoRateBuckets::new(ddb.clone(), &name, LIMIT),
    ];
    let t = Tenant::default_tenant();
    let busy = AgentId::parse("busy").unwrap();
    let results = futures_util::future::join_all(
        (0..20).map(|n| handles[n % 2].try_acquire(&t, &busy, t0())),
    )
    .await;
    let granted = results.iter().filter(|r| matches!(r, Ok(Ok(())))).count();
    assert_eq!(granted, 3);
    for r in &results {
        match r {
            Ok(Ok(())) => {}
            Ok(Err(at)) => assert!(*at > t0(), "a refusal names a later instant"),
            Err(e) => panic!("bucket failed: {e}"),
        }
    }
    let other = AgentId::parse("quiet").unwrap();
    assert!(matches!(
        handles[0].try_acquire(&t, &other, t0()).await,
        Ok(Ok(()))
    ));
}

/// A token costs no read: an agent sent to less often than its rate takes one with one
/// `PutItem`; within a burst, the failed write tells the stored `tat` and a second write takes
/// the token from it; an empty bucket answers after the failed write alone, taking nothing.
#[tokio::test]
async fn a_token_is_taken_without_reading_the_bucket() {
    let e = crate::common::emulator("rate-requests").await;
    let buckets = DynamoRateBuckets::new(e.ddb.clone(), &e.name, LIMIT);
    let t = Tenant::default_tenant();
    let busy = AgentId::parse("busy").unwrap();
    e.requests.take();
    let count = |requests: std::collections::BTreeMap<String, u64>| -> Vec<(String, u64)> {
        requests.into_iter().collect()
    };
    let put = |n: u64| vec![("DynamoDB PutItem".to_owned(), n)];
    assert!(matches!(
        buckets.try_acquire(&t, &busy, t0()).await,
        Ok(Ok(()))
    ));
    assert_eq!(
        count(e.requests.take()),
        put(1),
        "an idle bucket: one write"
    );
    for _ in 0..2 {
        assert!(matches!(
            buckets.try_acquire(&t, &busy, t0()).await,
            Ok(Ok(()))
        ));
        assert_eq!(
            count(e.requests.take()),
            put(2),
            "within the burst: two writes"
        );
    }
    let refused = buckets.try_acquire(&t, &busy, t0()).await;
    assert!(matches!(refused, Ok(Err(at)) if at > t0()), "{refused:?}");
    assert_eq!(
        count(e.requests.take()),
        put(1),
        "empty: the failed write alone"
    );
    // Three minutes on, at one a minute, the bucket is idle again.
    let later = Instant::parse("2026-09-10T12:03:00Z").unwrap();
    assert!(matches!(
        buckets.try_acquire(&t, &busy, later).await,
        Ok(Ok(()))
    ));
    assert_eq!(count(e.requests.take()), put(1));
}

/// A batch's tokens for an agent are taken at once (the submitter's lanes): an idle bucket
/// grants up to `burst` with one `PutItem`, a bucket in use with two; concurrent takers of
/// several tokens each are granted exactly `burst` in all.
#[tokio::test]
async fn many_tokens_are_taken_with_one_write_and_never_beyond_burst() {
    let e = crate::common::emulator("rate-many").await;
    let buckets = DynamoRateBuckets::new(e.ddb.clone(), &e.name, LIMIT);
    let t = Tenant::default_tenant();
    let busy = AgentId::parse("busy").unwrap();
    e.requests.take();
    let puts = |n: u64| vec![("DynamoDB PutItem".to_owned(), n)];
    let taken = buckets.try_acquire_many(&t, &busy, 2, t0()).await;
    assert!(matches!(taken, Ok(Ok(2))), "{taken:?}");
    assert_eq!(e.requests.take().into_iter().collect::<Vec<_>>(), puts(1));
    // One left of the burst of three: asking five takes it, with the failed write and one more.
    let taken = buckets.try_acquire_many(&t, &busy, 5, t0()).await;
    assert!(matches!(taken, Ok(Ok(1))), "{taken:?}");
    assert_eq!(e.requests.take().into_iter().collect::<Vec<_>>(), puts(2));
    let refused = buckets.try_acquire_many(&t, &busy, 5, t0()).await;
    assert!(matches!(refused, Ok(Err(at)) if at > t0()), "{refused:?}");

    let handles = [
        DynamoRateBuckets::new(e.ddb.clone(), &e.name, LIMIT),
        DynamoRateBuckets::new(e.ddb.clone(), &e.name, LIMIT),
    ];
    let racing = AgentId::parse("racing").unwrap();
    let results = futures_util::future::join_all(
        (0..12).map(|n| handles[n % 2].try_acquire_many(&t, &racing, 2, t0())),
    )
    .await;
    let granted: u32 = results
        .iter()
        .map(|r| match r {
            Ok(Ok(k)) => *k,
            Ok(Err(at)) => {
                assert!(*at > t0(), "a refusal names a later instant");
                0
            }
            Err(e) => panic!("bucket failed: {e}"),
        })
        .sum();
    assert_eq!(granted, LIMIT.burst, "exactly the burst across every taker");
}

/// Makes the next `n` writes of a take conditional on a stored `tat` (`tat = :old`) lose their
/// race, as when another instance has just moved the `tat`: their `:old` is changed to a `tat` no
/// bucket holds before the request is built, so DynamoDB refuses the write and answers the
/// stored item, exactly as for a real lost race. Counts every `PutItem` too.
#[derive(Debug, Clone, Default)]
struct LoseRaces {
    to_lose: Arc<std::sync::atomic::AtomicU32>,
    puts: Arc<std::sync::atomic::AtomicU32>,
}

impl LoseRaces {
    /// The next `n` conditional writes on a known `tat` lose.
    fn lose(&self, n: u32) {
        self.to_lose.store(n, std::sync::atomic::Ordering::SeqCst);
    }

    /// The `PutItem`s sent since the last call.
    fn puts(&self) -> u32 {
        self.puts.swap(0, std::sync::atomic::Ordering::SeqCst)
    }
}

impl aws_smithy_runtime_api::client::interceptors::Intercept for LoseRaces {
    fn name(&self) -> &'static str {
        "lose-races"
    }

    fn modify_before_serialization(
        &self,
        context: &mut aws_smithy_runtime_api::client::interceptors::context::BeforeSerializationInterceptorContextMut<'_>,
        _: &aws_smithy_runtime_api::client::runtime_components::RuntimeComponents,
        _: &mut aws_smithy_types::config_bag::ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        use std::sync::atomic::Ordering::SeqCst;
        let Some(put) = context
            .input_mut()
            .downcast_mut::<aws_sdk_dynamodb::operation::put_item::PutItemInput>()
        else {
            return Ok(());
        };
        self.puts.fetch_add(1, SeqCst);
        if let Some(old) = put
            .expression_attribute_values
            .as_mut()
            .and_then(|values| values.get_mut(":old"))
        {
            if self
                .to_lose
                .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                *old = aws_sdk_dynamodb::types::AttributeValue::N("-1".into());
            }
        }
        Ok(())
    }
}

/// A take that loses its conditional write again and again waits before each next round, with
/// the one retry policy (`watcher_runtime::retry`, `Backoff::CONFLICT`: full jitter, the wait
/// before retry n drawn from [0, 5 ms × 2^(n−1)], capped at 320 ms). The first failed write of a
/// take (the idle guess, answered with the stored `tat`) does not wait, nor does the last lost
/// race: after `MAX_ROUNDS` (8) writes the take gives up, naming the next token's instant (a
/// minute on, at one a minute).
#[tokio::test]
async fn lost_races_wait_with_growing_bounded_backoff() {
    use std::time::Duration;
    use watcher_lambda::rate::MAX_ROUNDS;
    use watcher_runtime::retry::{Backoff, RecordingSleeper, Retry};
    const ROOMY: RateLimit = RateLimit {
        per_minute: 1,
        burst: 100,
    };
    // The ceilings of retries 1 to 6 under `Backoff::CONFLICT`.
    let ceilings = [5, 10, 20, 40, 80, 160].map(Duration::from_millis);

    let (_, name) = emulator_table("rate-backoff").await;
    let races = LoseRaces::default();
    let ddb = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&crate::common::emulator_config().await)
            .interceptor(races.clone())
            .build(),
    );
    let sleeper = Arc::new(RecordingSleeper::new());
    let buckets = DynamoRateBuckets::new(ddb, &name, ROOMY).with_retry(Retry::with_sleeper(
        Backoff::CONFLICT.with_attempts(MAX_ROUNDS as u32),
        sleeper.clone(),
    ));
    let t = Tenant::default_tenant();
    let busy = AgentId::parse("busy").unwrap();
    let mut seen = 0;
    let mut waits = || {
        let all = sleeper.waits();
        let new = all[seen..].to_vec();
        seen = all.len();
        new
    };

    // An idle bucket: one write, no wait.
    assert!(matches!(
        buckets.try_acquire(&t, &busy, t0()).await,
        Ok(Ok(()))
    ));
    assert_eq!((races.puts(), waits()), (1, vec![]));
    // In use: the idle guess fails (the ordinary path, not a lost race), the write from the
    // stored `tat` takes the token. No wait.
    assert!(matches!(
        buckets.try_acquire(&t, &busy, t0()).await,
        Ok(Ok(()))
    ));
    assert_eq!((races.puts(), waits()), (2, vec![]));
    // One race lost: one wait, of at most the first ceiling, before the write that takes it.
    races.lose(1);
    assert!(matches!(
        buckets.try_acquire(&t, &busy, t0()).await,
        Ok(Ok(()))
    ));
    assert_eq!(races.puts(), 3);
    let once = waits();
    assert!(once.len() == 1 && once[0] <= ceilings[0], "{once:?}");

    // Six lost (the most a take can lose and still take, in 8 rounds): six waits, the n-th at
    // most the n-th ceiling. Over 24 takes, the longest n-th wait exceeds the (n−1)-th ceiling
    // (which a wait at retry n − 1 never could), for each n: the waits grow with the races lost.
    // (Each of those 5 comparisons fails by chance with probability 2^-24: every draw in the
    // lower half of its range.)
    let mut longest = [Duration::ZERO; 6];
    for _ in 0..24 {
        races.lose(6);
        let taken = buckets.try_acquire(&t, &busy, t0()).await;
        assert!(matches!(taken, Ok(Ok(()))), "{taken:?}");
        assert_eq!(races.puts(), MAX_ROUNDS as u32);
        let six = waits();
        assert_eq!(six.len(), 6, "{six:?}");
        for (n, wait) in six.iter().enumerate() {
            assert!(*wait <= ceilings[n], "retry {}: {six:?}", n + 1);
            longest[n] = longest[n].max(*wait);
        }
    }
    for n in 1..6 {
        assert!(longest[n] > ceilings[n - 1], "retry {}: {longest:?}", n + 1);
    }

    // Every race lost: 8 writes, 6 waits (none after the first failed write, none after the
    // last), then the caller is told to wait a token's interval.
    races.lose(u32::MAX);
    let refused = buckets.try_acquire(&t, &busy, t0()).await;
    let minute_on = Instant::parse("2026-09-10T12:01:00Z").unwrap();
    assert!(
        matches!(refused, Ok(Err(at)) if at == minute_on),
        "{refused:?}"
    );
    assert_eq!(races.puts(), MAX_ROUNDS as u32);
    let all_lost = waits();
    assert_eq!(all_lost.len(), 6, "{all_lost:?}");
    assert!(
        all_lost.iter().zip(ceilings).all(|(w, c)| *w <= c),
        "{all_lost:?}"
    );
}
