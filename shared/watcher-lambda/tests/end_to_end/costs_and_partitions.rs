//! What each step costs (docs/costs.md's tables are generated here) and which partitions each input writes.

use super::*;

/// The AWS requests each step of the README's scenario makes, as the functions make them on the
/// emulator, counted by service and operation (`common::Requests`): a push that raises one
/// expectation, a fact that satisfies it in time, and a lapse delivered once (its schedule's
/// early fire, the delayed message's fire, the submitter's send). The test's own look-ups are
/// left out. `docs/costs.md`'s table of measured requests is this count: the test fails when
/// they differ and prints the table; `UPDATE_DOCS=1` writes it.
#[tokio::test(flavor = "multi_thread")]
async fn the_requests_of_each_step_are_docs_costs_tables() {
    use common::costs::{check_generated, render, render_scale, Prices, Quotas, Run, Step};
    let d = deploy_with("e2e-cost", true).await;
    let mut table = Table::of(&d).await;
    d.push_booking("").await;
    let push = table
        .step(&d, "push (raise)", 1, vec![Run::Push], 0, 0)
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
            1,
        )
        .await;

    let d = deploy_with("e2e-cost-lapse", true).await;
    d.push_booking("").await;
    let names = d.schedules().await;
    let (input, _) = d.schedule_input(&names[0]).await;
    let mut table = Table::of(&d).await;
    // The schedule fires a minute early: the rest of the wait goes on the timer queue.
    assert_eq!(d.fire(&input, t("2026-09-10T22:14:00Z")).await.lapses, 0);
    // The delayed message arrives at the deadline: the lapse, queued.
    assert_eq!(d.fire(&input, t("2026-09-10T22:15:00Z")).await.lapses, 1);
    let event = d.receive().await;
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
            3,
        )
        .await;
    let steps = [push, satisfy, lapse];
    let how =
        "cargo test -p watcher-lambda --test it end_to_end::costs_and_partitions::the_requests";
    check_generated("costs.md", "costs", &render(&steps, &Prices::load()), how);
    // What each input has of its own: its partitions are not shared with other inputs.
    let own = [
        "PA-2026-0901",
        "task-booking-7f3a",
        "exp-01J8Q0MANIFEST",
        "booking-7f3a",
        // The Task the agent answered the lapse task with: each lapse task gets its own.
        "OUTTASK#default#booking#task-",
    ];
    let scale = render_scale(&steps, &Prices::load(), &Quotas::load(), &own);
    check_generated("costs.md", "scale", &scale, how);

    /// The table between steps: its items and schema, to measure the next step's write units.
    struct Table {
        schema: common::units::Schema,
        items: std::collections::BTreeMap<String, common::units::Item>,
    }
    impl Table {
        async fn of(d: &Deployment) -> Table {
            let schema = common::units::Schema::of(&d.ddb, &d.group).await;
            let items = schema.scan(&d.ddb, &d.group).await;
            d.requests.take_all();
            Table { schema, items }
        }
        /// What the deployment's clients did since the last step, and the step's other counts.
        async fn step(
            &mut self,
            d: &Deployment,
            name: &'static str,
            api_requests: u64,
            runs: Vec<Run>,
            scheduler_invocations: u64,
            event_source_sqs: u64,
        ) -> Step {
            let (requests, measured) = d.requests.take_all();
            let after = self.schema.scan(&d.ddb, &d.group).await;
            d.requests.take_all();
            let partition_units =
                self.schema
                    .partition_units(&measured.writes, &self.items, &after);
            let write_units = partition_units.values().sum();
            self.items = after;
            Step {
                name,
                requests,
                read_halves: measured.read_halves,
                write_units,
                api_requests,
                runs,
                scheduler_invocations,
                event_source_sqs,
                partition_units,
            }
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
