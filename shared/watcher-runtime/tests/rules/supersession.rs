//! Supersession and lineage (expectations-v1 §10.3).

use super::*;

#[test]
fn supersession_withdraws_the_predecessor() {
    let out = raised(&[exp("A", &t("10T02:00"))])
        .raise_in_lapse_task(&t("10T03:00"), &[exp("B", &t("10T06:00")).succeeds("A")])
        .run();
    let a = out.record("A");
    assert_eq!(a["status"], "withdrawn");
    assert_eq!(a["supersededBy"], "B");
    assert_eq!(a["withdrawal"]["withdrawnAt"], t("10T03:00"));
    assert_eq!(
        a["withdrawal"]["reason"],
        "superseded by B (expectations-v1 §8.1, §10.3)"
    );
    let b = out.record("B");
    assert_eq!(b["lineage"], json!(1));
    assert_eq!(b["supersedes"], "A");
    assert_eq!(b["status"], "open");
    assert_eq!(
        out.lapses(),
        [
            lapse("A", "overdue", &t("10T02:00")),
            lapse("B", "overdue", &t("10T06:00"))
        ]
    );
    assert_eq!(out.lapse_blocks()[1]["lineage"], json!(1));
    let message = &out.lapse_tasks()[1]["request"]["message"];
    assert_eq!(message["referenceTaskIds"], json!(["task-lapse"]));
    assert_eq!(message["contextId"], CTX);
}

fn chain(n: usize) -> Vec<(String, String)> {
    // A0 due 02:00, A1 supersedes A0 due 03:00, ... each raised once the previous lapsed.
    (0..n)
        .map(|i| (format!("A{i}"), t(&format!("10T{:02}:00", 2 + i))))
        .collect()
}

#[test]
fn lineage_four_is_refused() {
    let mut sc = scenario();
    let links = chain(5);
    for (i, (id, due)) in links.iter().enumerate() {
        let mut e = exp(id, due).key("done:chain");
        if i > 0 {
            e = e.supersedes(&links[i - 1].0);
        }
        sc = sc.raise(&t(&format!("10T{:02}:30", 1 + i)), &[e]);
    }
    let out = sc.run();
    for (i, (id, _)) in links.iter().take(4).enumerate() {
        assert_eq!(out.record(id)["lineage"], json!(i), "{id}");
    }
    assert_eq!(
        out.rejection("A4"),
        "lineage 4 exceeds the bound 3 (expectations-v1 §10.3)"
    );
    assert!(!out.recorded("A4"));
    assert_eq!(
        out.record("A3")["status"],
        "open",
        "the refusal disturbs nothing"
    );
    assert_eq!(out.record("A3")["supersededBy"], Value::Null);
}

#[test]
fn an_identical_re_raise_in_the_lineage_is_refused() {
    let out = raised(&[exp("A", &t("10T02:00"))])
        // Same kind, subject, factKey and dueAt as its predecessor.
        .raise(&t("10T03:00"), &[exp("B", &t("10T02:00")).succeeds("A")])
        .raise(&t("10T03:10"), &[exp("C", &t("10T05:00")).succeeds("A")])
        // Back to the first due time, two generations on.
        .raise(
            &t("10T03:20"),
            &[exp("D", &t("10T02:00")).key(&key_of("A")).supersedes("C")],
        )
        .run();
    for id in ["B", "D"] {
        let reason = out.rejection(id);
        assert!(
            reason.starts_with(
                "field `dueAt`: identical in kind, subject, satisfiedBy and dueAt to A"
            ),
            "{id}: {reason}"
        );
        assert!(reason.contains("§10.3"), "{reason}");
        assert!(!out.recorded(id));
    }
    assert_eq!(out.record("C")["lineage"], json!(1));
    assert_eq!(out.record("C")["status"], "open");
}
