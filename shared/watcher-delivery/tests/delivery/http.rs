//! HTTP on the way: 4xx and 429 with `Retry-After`, non-JSON-RPC answers, redirects, transport failures, timeouts, public card endpoints.

use super::*;

#[tokio::test]
async fn http_4xx_is_permanent_but_429_is_retried_after_the_agent_asks() {
    let agent = spawn_capture_agent(Behaviour::sequence(vec![
        Reply::Http {
            status: 429,
            headers: vec![("retry-after".into(), "120".into())],
            body: String::new(),
        },
        Reply::http(401, "unknown token"),
    ]))
    .await;
    let (entry, store) = one_lapse_task("exp-auth").await;
    let endpoints = endpoints(agent.endpoint(Some("wrong".into())));
    let sub = submitter(RetryPolicy::default(), None);

    let r = pass(&sub, &store, &endpoints, t0()).await;
    assert_eq!(r.retried, 1);
    let e = get(&store, &entry).await;
    assert_eq!(e.next_attempt_at, plus_secs(t0(), 120));

    let r = pass(&sub, &store, &endpoints, e.next_attempt_at).await;
    assert_eq!(r.failed, 1);
    let e = get(&store, &entry).await;
    assert_eq!(e.delivery, DeliveryState::Failed);
    let error = e.last_error.unwrap();
    assert!(
        error.contains("401") && error.contains("unknown token"),
        "{error}"
    );
}

/// `Retry-After` as an HTTP-date (RFC 9110 §10.2.3): the lapse task waits until that date, an
/// hour away, not the backoff's second.
#[tokio::test]
async fn an_http_date_retry_after_is_waited_for() {
    let in_an_hour = std::time::SystemTime::now() + Duration::from_secs(3600);
    let agent = spawn_capture_agent(Behaviour::always(Reply::Http {
        status: 503,
        headers: vec![("retry-after".into(), httpdate::fmt_http_date(in_an_hour))],
        body: String::new(),
    }))
    .await;
    let (entry, store) = one_lapse_task("exp-date").await;
    let sub = submitter(RetryPolicy::default(), None);
    let r = pass(&sub, &store, &endpoints(agent.endpoint(None)), t0()).await;
    assert_eq!(r.retried, 1);
    let e = get(&store, &entry).await;
    // The date has whole seconds and the answer took a moment: within a few seconds of an hour.
    assert!(
        e.next_attempt_at > plus_secs(t0(), 3590) && e.next_attempt_at <= plus_secs(t0(), 3600),
        "{} after {}",
        e.next_attempt_at,
        t0()
    );
}

#[tokio::test]
async fn a_2xx_that_is_not_json_rpc_fails() {
    let agent = spawn_capture_agent(Behaviour::always(Reply::http(200, "<html>ok</html>"))).await;
    let (entry, store) = one_lapse_task("exp-html").await;
    let sub = submitter(RetryPolicy::default(), None);
    let r = pass(&sub, &store, &endpoints(agent.endpoint(None)), t0()).await;
    assert_eq!(r.failed, 1);
    let error = get(&store, &entry).await.last_error.unwrap();
    assert!(error.contains("not a JSON-RPC response"), "{error}");
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let elsewhere = spawn_capture_agent(Behaviour::accept()).await;
    let agent = spawn_capture_agent(Behaviour::always(Reply::Http {
        status: 307,
        headers: vec![("location".into(), elsewhere.url())],
        body: String::new(),
    }))
    .await;
    let (entry, store) = one_lapse_task("exp-redirect").await;
    let sub = submitter(RetryPolicy::default(), None);
    let r = pass(&sub, &store, &endpoints(agent.endpoint(None)), t0()).await;
    assert_eq!(r.failed, 1);
    assert_eq!(elsewhere.request_count(), 0);
    let error = get(&store, &entry).await.last_error.unwrap();
    assert!(error.contains("not followed"), "{error}");
}

#[tokio::test]
async fn transport_failures_are_retried() {
    // A port with nothing listening.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let (entry, store) = one_lapse_task("exp-refused").await;
    let sub = submitter(RetryPolicy::default(), None);
    let ep = AgentEndpoint::configured(format!("http://{closed}/"), None);
    let r = pass(&sub, &store, &endpoints(ep), t0()).await;
    assert_eq!(r.retried, 1);
    let error = get(&store, &entry).await.last_error.unwrap();
    assert!(error.contains("could not connect"), "{error}");
}

#[tokio::test]
async fn a_silent_agent_times_out_and_is_retried() {
    let agent = spawn_capture_agent(Behaviour::always(Reply::Hang)).await;
    let client = A2aClient::new(&ClientConfig {
        connect_timeout: Duration::from_secs(2),
        request_timeout: Duration::from_millis(300),
        ..ClientConfig::default()
    })
    .unwrap();
    let (entry, store) = one_lapse_task("exp-silent").await;
    let sub = Submitter::new(
        client,
        watcher_delivery::SubmitterConfig {
            retry: RetryPolicy::default(),
            rate_limit: RateLimit::unlimited(),
        },
    );
    let r = pass(&sub, &store, &endpoints(agent.endpoint(None)), t0()).await;
    assert_eq!(r.retried, 1);
    assert_eq!(agent.request_count(), 1);
    let error = get(&store, &entry).await.last_error.unwrap();
    assert!(error.contains("did not answer in time"), "{error}");
}

#[tokio::test]
async fn card_endpoints_must_be_public() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let port = agent.addr().port();
    for url in [
        agent.url(),                         // an IP literal on loopback
        format!("http://localhost:{port}/"), // a name resolving to loopback
    ] {
        let (entry, store) = one_lapse_task("exp-ssrf").await;
        let sub = submitter(RetryPolicy::default(), None);
        let ep = AgentEndpoint::from_card(url.clone(), None);
        let r = pass(&sub, &store, &endpoints(ep), t0()).await;
        assert_eq!(r.failed, 1, "{url}");
        let error = get(&store, &entry).await.last_error.unwrap();
        assert!(error.contains("outbound address policy"), "{url}: {error}");
    }
    assert_eq!(agent.request_count(), 0);
}
