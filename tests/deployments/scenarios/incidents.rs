//! A lapse as an incident in the on-call tools (docs/howto/notifications.md "On-call tools"):
//! opened once on PagerDuty, Opsgenie and Alertmanager, and closed once when its fact arrives
//! late, through a restart of what tells them; and a channel's grace that swallows a short
//! delay. Written once against [`Deployment`] like the others (`scenarios.rs`, whose helpers
//! they use); the receivers are the fixture's vendor stand-ins, each request read by the
//! incident's key ([`about`]).

use super::super::harness::{
    about, decoded, OPSGENIE_API_KEY, PAGERDUTY_ROUTING_KEY, PATIENT_GRACE, PATIENT_ROUTING_KEY,
};
use super::*;
use jiff::SignedDuration;
use watcher_notify::testing::{VendorReceiver, VendorRequest};

/// The lapse's event id: the `webhook-id` the `ops` channel (Standard Webhooks, every lapse)
/// sent for the lapse task `mid`, the key every incident format uses. Waits for it up to
/// `patience`.
async fn event_id_of(d: &Deployment, f: &Fixture, mid: &str, patience: Duration) -> String {
    assert!(
        wait_until(|| async { !f.lapses_told(mid).is_empty() }, patience).await,
        "no notification of {mid} within {patience:?}: {:?}\n{}",
        f.notified.seen(),
        d.log_tail().await
    );
    f.lapses_told(mid)[0].id.clone()
}

/// Waits until each of `vendors` took `n` requests about `key`, then asserts that none takes
/// another for `quiet`.
async fn exactly(
    d: &Deployment,
    vendors: &[(&str, &VendorReceiver)],
    key: &str,
    n: usize,
    patience: Duration,
    quiet: Duration,
) {
    for (name, vendor) in vendors {
        assert!(
            wait_until(|| async { about(vendor, key).len() >= n }, patience).await,
            "{name}: {n} requests about {key} did not arrive within {patience:?}: {:#?}\n{}",
            about(vendor, key),
            d.log_tail().await
        );
    }
    assert!(
        holds_for(
            || async { vendors.iter().all(|(_, v)| about(v, key).len() == n) },
            quiet
        )
        .await,
        "{n} requests about {key} on each receiver, no more: {:#?}",
        vendors
            .iter()
            .map(|(name, v)| (name, about(v, key)))
            .collect::<Vec<_>>()
    );
}

/// An instant the watcher wrote (RFC 3339).
fn instant(v: &Value) -> Timestamp {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{v} is not an instant"))
}

/// A lapse is paged once and resolved once when its fact arrives late, through a restart
/// (issue "a lapse as an incident", "Done when"): agent `tell`'s expectation lapses overdue;
/// the `pager` channel's PagerDuty stand-in gets one Events API v2 `trigger`, the `genie`
/// channel's Opsgenie stand-in one create, the `alerts` channel's Alertmanager stand-in one
/// firing alert, each keyed by the lapse's event id. Then the process holding the notifier is
/// killed (SIGKILL) and started again ([`Deployment::kill_notifier`]: serve itself, on the same
/// database; on AWS every instance of the timer function, whose sweep's `notify` duty tells the
/// channels: new execution environments, cold, so only what the store holds carries over).
/// Then the fact arrives late, and each
/// receiver gets exactly one resolution, as each vendor documents it: PagerDuty
/// `event_action: resolve` with the same `dedup_key`; Opsgenie `POST
/// /v2/alerts/{alias}/close?identifierType=alias` with the create's alias; Alertmanager the same
/// alert (same labels, same `startsAt`) with `endsAt` at or after the fact, not in the future;
/// and nothing more for a few seconds. `GET /v1/incidents` lists it open, then resolved by the
/// fact at the instant the channels told.
pub(super) async fn page_and_resolve_through_a_restart(d: Arc<Deployment>, f: Arc<Fixture>) {
    // Alone, after the others: every channel ran long ago, so a short deadline is told.
    let due = origin(Duration::from_secs(2));
    let (task, id, shipment) = ("task-incident", "exp-incident", "PA-incident");
    raise_one(&d, "tell", (task, id, shipment), due).await;
    let mid = format!("lapse:{id}:overdue:{}", fmt(due));
    let patience = d.patience() + Duration::from_secs(30);
    let key = event_id_of(&d, &f, &mid, patience).await;
    let vendors = [
        ("pager", &f.paged),
        ("genie", &f.opsgenie),
        ("alerts", &f.alerted),
    ];
    // Opened once on each. The quiet second also lets each channel write its cursor after
    // its post: a kill between the two would tell the lapse again (at least once), which is
    // not what this scenario is about.
    exactly(&d, &vendors, &key, 1, patience, Duration::from_secs(1)).await;
    let trigger = &about(&f.paged, &key)[0];
    assert_eq!(trigger.body["event_action"], "trigger", "{trigger:?}");
    let create = &about(&f.opsgenie, &key)[0];
    assert_eq!(create.path, "/v2/alerts", "{create:?}");
    assert_eq!(create.body["alias"], json!(key), "{create:?}");
    let firing = about(&f.alerted, &key)[0].body[0].clone();
    assert_eq!(firing["labels"]["lapse"], json!(key), "{firing:#}");
    let lapsed_at = instant(&firing["startsAt"]);
    let horizon_end = instant(&firing["endsAt"]);
    let open = incident(&d, "open", &mid).await;
    assert!(open.get("resolved").is_none(), "{open:#}");

    d.kill_notifier().await;

    // The fact, late: observed now, well past the deadline (no grace).
    let observed = Timestamp::from_second(Timestamp::now().as_second()).unwrap();
    let fact_key = format!("shipment.manifest.received:{shipment}");
    let a = d
        .report(&json!({
            "factKey": fact_key,
            "observedAt": fmt(observed),
            "subject": { "type": "shipment", "id": shipment },
        }))
        .await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(
        a.body["results"][0]["satisfied"],
        json!([id]),
        "the late fact satisfies the lapsed expectation: {a:?}"
    );
    // Resolved once on each, by the notifier that runs after the restart; then nothing.
    exactly(&d, &vendors, &key, 2, patience, Duration::from_secs(3)).await;
    let seen_by = Timestamp::now();

    // PagerDuty Events API v2: `resolve`, the routing key and the trigger's `dedup_key`.
    let resolve = &about(&f.paged, &key)[1];
    assert_resolve(resolve, &key);

    // Opsgenie Alert API: close by alias (the create's), with the key; `source` and `note`.
    let close = &about(&f.opsgenie, &key)[1];
    assert_eq!(
        decoded(&close.path),
        format!("/v2/alerts/{key}/close?identifierType=alias"),
        "{close:?}"
    );
    assert_eq!(
        close.authorization,
        Some(format!("GenieKey {OPSGENIE_API_KEY}")),
        "{close:?}"
    );
    assert_eq!(close.body["source"], "a2a-watcher", "{close:?}");
    assert!(
        close.body["note"].as_str().is_some_and(|n| !n.is_empty()),
        "{close:?}"
    );
    assert!(close.body.get("alias").is_none(), "{close:?}");

    // Alertmanager: the same alert (labels, startsAt), now ending at the resolution.
    let ended = &about(&f.alerted, &key)[1];
    assert_eq!(ended.path, "/api/v2/alerts", "{ended:?}");
    let alerts = ended.body.as_array().expect("a JSON array of alerts");
    assert_eq!(alerts.len(), 1, "{ended:?}");
    let a = &alerts[0];
    assert_eq!(a["labels"], firing["labels"], "the same alert: {a:#}");
    assert_eq!(instant(&a["startsAt"]), lapsed_at, "{a:#}");
    let ends = instant(&a["endsAt"]);
    assert!(
        ends >= observed && ends <= seen_by && ends < horizon_end,
        "endsAt {ends} at or after the fact ({observed}), not in the future ({seen_by}), before \
         the horizon ({horizon_end}): {a:#}"
    );
    // The resolution the channels told is the one recorded: `GET /v1/incidents` lists the
    // incident resolved by the fact, at the instant Alertmanager was given as `endsAt`.
    let resolved = incident(&d, "resolved", &mid).await;
    assert_eq!(resolved["resolved"]["reason"], "fact", "{resolved:#}");
    assert_eq!(instant(&resolved["resolved"]["at"]), ends, "{resolved:#}");
}

/// The incident of lapse task `mid` (agent `tell`) at `GET /v1/incidents?state={state}`.
async fn incident(d: &Deployment, state: &str, mid: &str) -> Value {
    let a = d
        .get(&format!("/v1/incidents?agent=tell&state={state}&limit=100"))
        .await;
    assert_eq!(a.status, 200, "GET /v1/incidents: {a:?}");
    a.body["incidents"]
        .as_array()
        .and_then(|l| l.iter().find(|i| i["messageId"] == mid).cloned())
        .unwrap_or_else(|| panic!("{mid} is not listed {state}: {a:?}"))
}

/// A PagerDuty Events API v2 resolve of `key`: `routing_key`, `event_action: resolve` and the
/// trigger's `dedup_key`, posted where the trigger was.
fn assert_resolve(r: &VendorRequest, key: &str) {
    assert_eq!(r.path, "/v2/enqueue", "{r:?}");
    assert_eq!(r.content_type.as_deref(), Some("application/json"), "{r:?}");
    assert!(!r.webhook_headers, "{r:?}");
    assert_eq!(r.body["routing_key"], PAGERDUTY_ROUTING_KEY, "{r:?}");
    assert_eq!(r.body["event_action"], "resolve", "{r:?}");
    assert_eq!(r.body["dedup_key"], json!(key), "{r:?}");
}

/// A channel's grace swallows a short delay (docs/howto/notifications.md, `grace`): agent
/// `graced` raises two expectations due at one instant; both lapse overdue, and the `ops`
/// channel (no grace) tells both at once. The fact of the first arrives within the `patient`
/// channel's grace ([`PATIENT_GRACE`]): that channel tells nothing of it, neither the lapse
/// nor its end. The second, still unresolved once the grace has passed, is paged then, not
/// before.
pub(super) async fn a_grace_swallows_a_short_delay(d: Arc<Deployment>, f: Arc<Fixture>) {
    let due = origin(Duration::from_secs(5));
    let (short, long) = ("exp-grace-short", "exp-grace-long");
    let each = [
        (short.to_owned(), "PA-grace-short".to_owned()),
        (long.to_owned(), "PA-grace-long".to_owned()),
    ];
    let a = d
        .push("graced", &expectations_on("task-grace", &each, due, "PT0S"))
        .await;
    assert_eq!(a.body["raised"], json!([short, long]), "{a:?}");

    // The short one's fact, as soon as both lapses are recorded. The grace runs from each
    // lapse's `lapsedAt`: past the deadline when the push itself ended late (on a loaded
    // aws-local the suite's first pushes queue for seconds, and the push lapses them).
    let mut lapsed_at = Vec::new();
    for id in [short, long] {
        let lapse = d
            .lapse_within(
                "graced",
                id,
                |_| true,
                d.patience() + Duration::from_secs(5),
            )
            .await;
        let Some(lapse) = lapse else {
            panic!("{id} did not lapse\n{}", d.log_tail().await)
        };
        lapsed_at.push(instant(&lapse["lapsedAt"]));
    }
    let first = lapsed_at.iter().min().copied().expect("two lapses");
    let grace_ends = first + SignedDuration::try_from(PATIENT_GRACE).expect("a short grace");
    let observed = Timestamp::from_second(Timestamp::now().as_second()).unwrap();
    let a = d
        .report(&json!({
            "factKey": "shipment.manifest.received:PA-grace-short",
            "observedAt": fmt(observed),
            "subject": { "type": "shipment", "id": "PA-grace-short" },
        }))
        .await;
    assert_eq!(a.body["results"][0]["satisfied"], json!([short]), "{a:?}");
    let reported = Timestamp::now();
    assert!(
        reported < grace_ends,
        "inconclusive: the fact was reported at {}, past the channel's grace (it ended at {})",
        fmt(reported),
        fmt(grace_ends)
    );

    let patience = d.patience() + Duration::from_secs(30);
    let short_key = event_id_of(
        &d,
        &f,
        &format!("lapse:{short}:overdue:{}", fmt(due)),
        patience,
    )
    .await;
    let long_key = event_id_of(
        &d,
        &f,
        &format!("lapse:{long}:overdue:{}", fmt(due)),
        patience,
    )
    .await;
    // Within the grace, nothing; once it passed, the long one only, once.
    let within = Duration::try_from(grace_ends.duration_since(Timestamp::now()))
        .unwrap_or(Duration::ZERO)
        .saturating_sub(Duration::from_millis(500));
    assert!(
        holds_for(
            || async {
                about(&f.paged, &short_key).is_empty() && about(&f.paged, &long_key).is_empty()
            },
            within
        )
        .await,
        "told within the grace: {:#?}",
        f.paged.seen()
    );
    let vendors = [("patient", &f.paged)];
    exactly(&d, &vendors, &long_key, 1, patience, Duration::from_secs(2)).await;
    let trigger = &about(&f.paged, &long_key)[0];
    assert_eq!(
        trigger.body["routing_key"], PATIENT_ROUTING_KEY,
        "{trigger:?}"
    );
    assert_eq!(trigger.body["event_action"], "trigger", "{trigger:?}");
    assert!(
        about(&f.paged, &short_key).is_empty(),
        "a lapse resolved within the grace was told: {:#?}",
        about(&f.paged, &short_key)
    );
}
