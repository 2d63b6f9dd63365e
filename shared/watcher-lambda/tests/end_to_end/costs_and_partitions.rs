//! What each step costs (docs/costs.md's tables are generated here) and which partitions each input writes.

use super::*;

/// The AWS requests each step of the README's scenario makes, as the functions make them on the
/// emulator, counted by service and operation (`common::Requests`): a push that raises one
/// expectation, a status push of its task, a fact that satisfies it in time, a lapse delivered
/// once (its schedule's early fire, the delayed message's fire, the submitter's send) and one
/// `GetTask` poll of the lapse task by the following sweep; each DynamoDB write request's units
/// from the items just before and after it (each index's entries per request), and the log
/// lines the runs write. Measured with the README's expectation and with `[range]
/// subject_extra_bytes` more of it. The test's own look-ups are left out. `docs/costs.md`'s
/// tables are this count priced (`common::costs`): the test fails when they differ and prints
/// the tables; `UPDATE_DOCS=1` writes them.
#[tokio::test(flavor = "multi_thread")]
async fn the_requests_of_each_step_are_docs_costs_tables() {
    use common::costs::{check_generated, render, render_scale, Prices, Quotas};
    use tracing::instrument::WithSubscriber as _;
    let prices = Prices::load();
    let logs = Logs::default();
    // As `watcher_lambda::init_tracing` formats them at the template's `LogLevel` (`info`).
    // Debug lines carry timings, so their size changes from run to run: not measured here.
    let subscriber = tracing_subscriber::fmt()
        .json()
        .without_time()
        .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
        .with_writer(logs.clone())
        .finish();
    let dispatch = tracing::Dispatch::new(subscriber);
    let [small, large] = prices.range.subject_extra_bytes;
    let low = measure(small, &logs)
        .with_subscriber(dispatch.clone())
        .await;
    let high = measure(large, &logs).with_subscriber(dispatch).await;
    // A larger expectation costs more to write: the measurement sees the size.
    let wru = |s: &common::costs::Steps| -> u64 {
        [&s.push, &s.status, &s.satisfy, &s.lapse, &s.poll]
            .iter()
            .map(|s| s.write_units)
            .sum()
    };
    assert!(
        wru(&high) > wru(&low),
        "{} bytes more, {} WRU against {}",
        large - small,
        wru(&high),
        wru(&low)
    );
    let how =
        "cargo test -p watcher-lambda --test it end_to_end::costs_and_partitions::the_requests";
    check_generated("costs.md", "costs", &render(&low, &high, &prices), how);
    // What each input has of its own: its partitions are not shared with other inputs.
    let own = [
        "PA-2026-0901",
        "task-booking-7f3a",
        "exp-01J8Q0MANIFEST",
        "booking-7f3a",
        // The Task the agent answered the lapse task with: each lapse task gets its own.
        "OUTTASK#default#booking#",
    ];
    let steps = [low.push, low.satisfy, low.lapse];
    let scale = render_scale(&steps, &prices, &Quotas::load(), &own);
    check_generated("costs.md", "scale", &scale, how);
}

/// The README's expectation with `extra` more bytes of `expects` text.
fn sized_push(extra: usize) -> Value {
    let expects = format!(
        "the airline manifest for PA-2026-0901{}",
        " (manifest)".repeat(extra.div_ceil(11))
    );
    json!({ "artifactUpdate": { "taskId": "task-booking-7f3a", "contextId": "ctx-northgate-sep",
        "artifact": { "artifactId": "booking-7f3a", "parts": [{ "text": "Booked" }],
            "metadata": { URI: { "expectations": [{
                "expectationId": "exp-01J8Q0MANIFEST", "kind": "shipment.manifest",
                "subject": { "type": "shipment", "id": "PA-2026-0901" },
                "expects": expects,
                "satisfiedBy": { "factKey": "shipment.manifest.received:PA-2026-0901" },
                "dueAt": "2026-09-10T20:15:00Z", "grace": "PT2H", "basis": "observed" }] } } } } })
}

const PUSH_HEADERS: fn() -> Value =
    || json!({ "content-type": "application/json", "x-a2a-notification-token": "push-1" });

/// The EMF line a run prints for `metrics` (`watcher_lambda::emf`), in bytes with its newline.
fn emf(metrics: &[(&str, &str, f64)]) -> u64 {
    let line = watcher_lambda::emf::emf_line("a2a-watcher-submitter", 1_789_000_000_000, metrics);
    line.to_string().len() as u64 + 1
}

/// Every step of the scenario with `extra` bytes more of expectation, measured.
async fn measure(extra: usize, logs: &Logs) -> common::costs::Steps {
    use common::costs::{Run, Steps};
    let d = deploy_with("e2e-cost", true).await;
    let mut table = Table::of(&d, logs).await;
    d.post_ok(
        "/v1/agents/booking/push",
        PUSH_HEADERS(),
        &sized_push(extra),
    )
    .await;
    let push = table
        .step(&d, "push (raise)", 1, vec![Run::Push], 0, [0, 0])
        .await
        .emf(emf(&[("ExpectationsRaised", "Count", 1.0)]));
    let status = json!({ "statusUpdate": { "taskId": "task-booking-7f3a", "contextId": "ctx-northgate-sep",
        "status": { "state": "TASK_STATE_WORKING", "timestamp": "2026-09-10T01:00:00Z" } } });
    d.post_ok("/v1/agents/booking/push", PUSH_HEADERS(), &status)
        .await;
    let status = table
        .step(&d, "status push of the task", 1, vec![Run::Push], 0, [0, 0])
        .await;
    d.clock.set(t("2026-09-10T10:00:00Z"));
    d.report_manifest().await;
    // The timer function deletes the schedule the fact's commit left to it on the timer queue
    // (its event source's receive, stood in for by the test's, and delete: 1 more request).
    let deferred = d.timer_messages().await;
    assert_eq!(
        d.fire(&deferred, t("2026-09-10T10:00:01Z")).await.disarmed,
        1
    );
    let satisfy = table
        .step(
            &d,
            "fact that satisfies it",
            1,
            vec![Run::Fact, Run::Timer],
            0,
            [1, 0],
        )
        .await
        .emf(emf(&[("FactsMatched", "Count", 1.0)]));

    // An agent that answers the lapse task `working` and pushes nothing: the sweep follows it.
    let agent = CaptureAgent::spawn_keeping_tasks(Behaviour::always(Reply::task(
        "lapse-task-1",
        TaskState::Working,
    )))
    .await
    .expect("capture agent");
    let d = deploy_to("e2e-cost-lapse", true, agent).await;
    d.post_ok(
        "/v1/agents/booking/push",
        PUSH_HEADERS(),
        &sized_push(extra),
    )
    .await;
    let names = d.schedules().await;
    let (input, _) = d.schedule_input(&names[0]).await;
    let mut table = Table::of(&d, logs).await;
    // The schedule fires a minute early: the rest of the wait goes on the timer queue.
    assert_eq!(d.fire(&input, t("2026-09-10T22:14:00Z")).await.lapses, 0);
    // The delayed message arrives at the deadline: the lapse, queued.
    d.clock.set(t("2026-09-10T22:15:00Z"));
    assert_eq!(d.fire(&input, t("2026-09-10T22:15:00Z")).await.lapses, 1);
    let event = d.receive().await;
    d.clock.set(t("2026-09-10T22:15:01Z"));
    assert_eq!(d.submit(event, t("2026-09-10T22:15:01Z")).await, 0);
    assert_eq!(d.delivered(), [OVERDUE]);
    // One schedule fired; the timer-queue message's receive and delete and the lapse message's
    // delete are the event sources' (the test hands both messages over itself). The timer
    // function deletes schedules itself: nothing waits for it.
    let lapse = table
        .step(
            &d,
            "lapse (overdue), delivered once",
            0,
            vec![Run::Timer, Run::Timer, Run::Submitter],
            1,
            [2, 1],
        )
        .await
        .emf(
            emf(&[("LapsesOverdue", "Count", 1.0)])
                + emf(&[
                    ("DeliveryAttempts", "Count", 1.0),
                    ("LapseDeliveryLateness", "Seconds", 1.0),
                ]),
        );
    // The agent finishes the lapse task and pushes nothing: the following sweep past its next
    // poll asks for it with `GetTask` (one poll; the sweep's run is its fixed cost, the poll
    // waits for the agent's answer).
    d.agent.set_task_state("lapse-task-1", TaskState::Completed);
    let poll_at = t("2026-09-10T22:30:00Z");
    d.clock.set(poll_at);
    assert_eq!(
        d.fire(&json!({ "sweep": "follow" }), poll_at)
            .await
            .followed,
        1
    );
    let mut poll = table
        .step(&d, "`GetTask` poll of the lapse task", 0, vec![], 0, [0, 0])
        .await;
    poll.wait_ms = common::costs::Prices::load().assumed.agent_answer_ms;
    // The log bytes as `docs/prices.toml` states them, which the capture must not exceed.
    let stated = &common::costs::Prices::load().logs;
    let mut steps = Steps {
        push,
        status,
        satisfy,
        lapse,
        poll,
    };
    for (step, stated) in [
        (&mut steps.push, stated.push),
        (&mut steps.status, stated.status),
        (&mut steps.satisfy, stated.fact),
        (&mut steps.lapse, stated.lapse),
        (&mut steps.poll, stated.poll),
    ] {
        assert!(
            step.log_bytes <= stated,
            "{}: {} bytes of log lines captured, docs/prices.toml's [logs] says {stated}: write the capture there",
            step.name,
            step.log_bytes
        );
        step.log_bytes = stated;
    }
    steps
}

/// The log lines written since the last take, as the functions write them.
#[derive(Clone, Default)]
struct Logs(Arc<std::sync::Mutex<Vec<u8>>>);

impl Logs {
    /// The bytes written since the last take. Callsites first met by a test running at the same time, while no dispatcher here
    /// wanted them, may keep that cached answer: each take rebuilds the cache, so the next
    /// step's lines all reach this capture.
    fn take(&self) -> u64 {
        tracing::callsite::rebuild_interest_cache();
        std::mem::take(&mut *self.0.lock().expect("logs")).len() as u64
    }
}

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("logs").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;
    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

/// The table between steps: its items and schema, to measure the next step's write units.
struct Table {
    schema: common::units::Schema,
    items: std::collections::BTreeMap<String, common::units::Item>,
    logs: Logs,
}

impl Table {
    /// The deployment's table now; from now on, each write request is measured on its own.
    async fn of(d: &Deployment, logs: &Logs) -> Table {
        let schema = common::units::Schema::of(&d.ddb, &d.group).await;
        d.requests.measure_per_request(&d.group, schema.key_names());
        let items = schema.scan(&d.ddb, &d.group).await;
        d.requests.take_all();
        logs.take();
        Table {
            schema,
            items,
            logs: logs.clone(),
        }
    }

    /// What the deployment's clients did since the last step, and the step's other counts
    /// (`event_source_sqs`: on the timer queue, on the lapse queue).
    async fn step(
        &mut self,
        d: &Deployment,
        name: &'static str,
        api_requests: u64,
        runs: Vec<common::costs::Run>,
        scheduler_invocations: u64,
        event_source_sqs: [u64; 2],
    ) -> common::costs::Step {
        let (requests, measured) = d.requests.take_all();
        let log_bytes = self.logs.take();
        let after = self.schema.scan(&d.ddb, &d.group).await;
        d.requests.take_all();
        let partition_units = self
            .schema
            .partition_units(&measured.writes, &self.items, &after);
        assert!(
            measured.writes.iter().all(|w| w.states.is_some()),
            "every write measured on its own"
        );
        let write_units = partition_units.values().sum();
        self.items = after;
        common::costs::Step {
            name,
            requests,
            read_halves: measured.read_halves,
            write_units,
            api_requests,
            runs,
            scheduler_invocations,
            event_source_standard: event_source_sqs[0],
            event_source_fifo: event_source_sqs[1],
            sqs_standard: measured.sqs_standard,
            partition_units,
            log_bytes,
            wait_ms: 0.0,
        }
    }
}

/// docs/dynamodb.md, "Partitions": no item or index partition is written by every input. Twenty
/// raises and their twenty facts, each on a subject of its own, for one agent: the partitions
/// each input writes are read from the table before and after it, and none is written by more
/// than a quarter of the inputs.
#[tokio::test]
async fn no_partition_is_written_by_every_input() {
    let d = deploy("e2e-partitions").await;
    let schema = common::units::Schema::of(&d.ddb, &d.group).await;
    let mut items = schema.scan(&d.ddb, &d.group).await;
    let mut written: std::collections::BTreeMap<String, usize> = Default::default();
    let inputs = 40;
    for i in 0..inputs {
        let n = i % 20;
        d.requests.take_all();
        if i < 20 {
            let artifact = json!({ "artifactUpdate": { "taskId": format!("task-{n}"), "contextId": format!("ctx-{n}"),
                "artifact": { "artifactId": format!("a-{n}"), "parts": [{ "text": "Booked" }],
                    "metadata": { URI: { "expectations": [{
                        "expectationId": format!("exp-{n}"), "kind": "shipment.manifest",
                        "subject": { "type": "shipment", "id": format!("PA-{n}") },
                        "expects": format!("the airline manifest for PA-{n}"),
                        "satisfiedBy": { "factKey": format!("shipment.manifest.received:PA-{n}") },
                        "dueAt": "2026-09-10T20:15:00Z", "basis": "observed" }] } } } } });
            let body = d.post_ok("/v1/agents/booking/push", json!({ "content-type": "application/json", "x-a2a-notification-token": "push-1" }), &artifact).await;
            assert_eq!(body["rejected"], json!([]), "{body}");
        } else {
            let fact = json!({ "factKey": format!("shipment.manifest.received:PA-{n}"), "observedAt": "2026-09-10T09:59:00Z",
                               "subject": { "type": "shipment", "id": format!("PA-{n}") } });
            d.post_ok(
                "/v1/facts",
                json!({ "authorization": "Bearer src-1", "content-type": "application/json" }),
                &fact,
            )
            .await;
        }
        let (_, measured) = d.requests.take_all();
        let after = schema.scan(&d.ddb, &d.group).await;
        for p in schema.partitions_written(&measured.writes, &items, &after) {
            *written.entry(p).or_default() += 1;
        }
        items = after;
    }
    let mut busiest: Vec<(&String, &usize)> = written.iter().collect();
    busiest.sort_by(|a, b| b.1.cmp(a.1));
    let busiest: Vec<String> = busiest
        .iter()
        .take(8)
        .map(|(p, n)| format!("{p}: {n}"))
        .collect();
    assert!(
        written.values().all(|n| *n * 4 <= inputs),
        "a partition written by more than a quarter of {inputs} inputs; the busiest: {busiest:#?}"
    );
    assert!(written.len() > inputs, "{written:#?}");
}
