//! A receiver's redirect is not followed: a 301, 302, 307 or 308 is a failure named as a
//! redirect (in the channel's last error, shown by `/ui`, and as the `redirected` outcome of the
//! metrics), the cursor stays, and the channel retries it like any other failure. The URL
//! redirected to gets nothing.

use std::sync::{Arc, Mutex};

use watcher_core::record::LapseKind;
use watcher_notify::testing::redirecting;
use watcher_notify::transport::{HttpTransport, PostError, Transport};
use watcher_notify::{Channel, Notifier, NotifyRecorder};
use watcher_runtime::clock::{Clock, FakeClock};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::Notifications;

use crate::common::{at, channel_config, lapse_task, record, Receiver};

/// The host and port of `url` (`127.0.0.1:4321`).
fn authority(url: &str) -> &str {
    url.trim_start_matches("http://").split('/').next().unwrap()
}

#[tokio::test]
async fn no_redirect_is_followed_and_each_is_named() {
    let elsewhere = Receiver::start().await;
    let transport = HttpTransport::new().unwrap();
    for status in [301, 302, 307, 308] {
        let url = redirecting(status, &format!("{}?token=secret", elsewhere.url)).await;
        let e = transport
            .post(&url, &[], b"{}".to_vec(), std::time::Duration::from_secs(5))
            .await
            .unwrap_err();
        let to = format!("http://{}/…", authority(&elsewhere.url));
        assert_eq!(
            e,
            PostError::Redirect {
                status,
                location: Some(to.clone())
            }
        );
        assert_eq!(e.outcome(), "redirected");
        assert_eq!(
            e.to_string(),
            format!("redirect ({status}) to {to} not followed; give the channel the URL the receiver redirects to")
        );
    }
    assert!(
        elsewhere.seen().is_empty(),
        "the URL redirected to got nothing: {:?}",
        elsewhere.seen()
    );

    // A relative Location resolves against the channel's URL; none at all is said too.
    let url = redirecting(308, "/moved").await;
    let e = transport
        .post(&url, &[], b"{}".to_vec(), std::time::Duration::from_secs(5))
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "redirect (308) to http://{}/… not followed; give the channel the URL the receiver redirects to",
            authority(&url)
        )
    );
}

/// Counts each notification's outcome, as `/metrics` does.
#[derive(Default)]
struct Outcomes(Mutex<Vec<(String, &'static str)>>);

impl NotifyRecorder for Outcomes {
    fn notified(&self, channel: &str, outcome: &'static str) {
        self.0.lock().unwrap().push((channel.to_owned(), outcome));
    }
}

#[tokio::test]
async fn a_redirect_is_a_failure_kept_in_the_channel_and_retried() {
    let elsewhere = Receiver::start().await;
    let url = redirecting(301, &elsewhere.url).await;
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::new(at(0)));
    let outcomes = Arc::new(Outcomes::default());
    let n = Notifier::new(
        store.clone(),
        vec![Channel::from_config(&channel_config(&url, &[])).unwrap()],
        Arc::new(HttpTransport::new().unwrap()),
        clock.clone() as Arc<dyn Clock>,
        None,
    )
    .with_recorder(outcomes.clone());
    n.round().await;
    record(
        &store,
        vec![lapse_task(
            "booking",
            "exp-1",
            LapseKind::Overdue,
            "PA-1",
            at(1),
        )],
    )
    .await;
    clock.set(at(2));
    let r = n.round().await[0];
    assert_eq!((r.delivered, r.failed), (0, 1));
    let tenant = watcher_core::ids::Tenant::parse("default").unwrap();
    let state = store.channel_state(&tenant, "ops").await.unwrap().unwrap();
    assert_eq!(
        state.last_error.as_deref(),
        Some(
            format!(
                "redirect (301) to http://{}/… not followed; give the channel the URL the receiver redirects to",
                authority(&elsewhere.url)
            )
            .as_str()
        )
    );
    assert_eq!(state.failing_since, Some(at(2)));
    assert_eq!(state.delivered, 0);
    assert!(elsewhere.seen().is_empty(), "not followed");

    // Retried as any failure: after the backoff, the next round tries again.
    clock.set(at(2 + 2));
    assert_eq!(n.round().await[0].failed, 1);
    assert_eq!(
        *outcomes.0.lock().unwrap(),
        [
            ("ops".to_owned(), "redirected"),
            ("ops".to_owned(), "redirected")
        ]
    );
    assert_eq!(
        store
            .channel_state(&tenant, "ops")
            .await
            .unwrap()
            .unwrap()
            .failures,
        2
    );
    assert!(elsewhere.seen().is_empty(), "never followed");
}
