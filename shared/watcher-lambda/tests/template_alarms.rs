//! The operations side of `template.yaml` (docs/howto/operating-aws.md, "Alarms"): every alarm
//! notifies the alarm topic, each signal has its alarm on the metric it needs (the product's
//! own, emitted by [`watcher_lambda::emf`], and AWS's), every function and table is covered, the
//! lapse lateness SLO has its two burn-rate pairs, the dashboard is valid JSON over the right
//! metrics, and X-Ray is on for every function.

use std::collections::BTreeSet;

use watcher_lambda::emf;
use watcher_runtime::metrics::{AttemptOutcome, Tally};

/// The template's text.
fn template() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml");
    std::fs::read_to_string(path).expect("template.yaml beside the workspace")
}

/// The value of `key: value` on `line` (indentation and a list dash ignored), quotes kept.
fn value_of<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.trim_start()
        .trim_start_matches("- ")
        .strip_prefix(key)
        .and_then(|rest| rest.strip_prefix(':'))
        .map(str::trim)
}

/// One top-level entry of the template (a parameter, a resource, an output: two spaces of
/// indentation) with the lines below it.
struct Section<'a> {
    name: String,
    lines: Vec<&'a str>,
}

impl Section<'_> {
    /// The first value of `key` in the section.
    fn get(&self, key: &str) -> Option<&str> {
        self.lines.iter().find_map(|l| value_of(l, key))
    }

    /// Every value of `key` in the section, in order.
    fn all(&self, key: &str) -> Vec<&str> {
        self.lines.iter().filter_map(|l| value_of(l, key)).collect()
    }

    fn kind(&self) -> &str {
        self.get("Type").unwrap_or("")
    }

    /// `(Namespace, MetricName)` of every metric the section names, each metric name with the
    /// namespace last given above it.
    fn metrics(&self) -> Vec<(String, String)> {
        let mut namespace = String::new();
        let mut out = Vec::new();
        for line in &self.lines {
            if let Some(ns) = value_of(line, "Namespace") {
                namespace = ns.to_owned();
            } else if let Some(m) = value_of(line, "MetricName") {
                out.push((namespace.clone(), m.to_owned()));
            }
        }
        out
    }

    /// `(Name, Value)` of every dimension, in either form the template uses: `- Name: N` with
    /// `Value: V` on the next line, or `- { Name: N, Value: V }`.
    fn dimensions(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (i, line) in self.lines.iter().enumerate() {
            let t = line.trim_start();
            if let Some(inner) = t
                .strip_prefix("- {")
                .and_then(|r| r.trim_end().strip_suffix('}'))
            {
                let (name, value) = inner.split_once(',').expect("Name, Value");
                let name = value_of(name, "Name").expect("Name").to_owned();
                let value = value_of(value, "Value").expect("Value").to_owned();
                out.push((name, value));
            } else if let Some(name) = t.strip_prefix("- Name:") {
                if let Some(value) = self.lines.get(i + 1).and_then(|l| value_of(l, "Value")) {
                    out.push((name.trim().to_owned(), value.to_owned()));
                }
            }
        }
        out
    }

    fn has_dimension(&self, name: &str, value: &str) -> bool {
        self.dimensions()
            .iter()
            .any(|(n, v)| n == name && v == value)
    }

    /// Whether both `AlarmActions` and `OKActions` are exactly the alarm topic.
    fn notifies_alarm_topic(&self) -> bool {
        self.get("AlarmActions") == Some("[!Ref AlarmTopic]")
            && self.get("OKActions") == Some("[!Ref AlarmTopic]")
    }
}

fn sections(text: &str) -> Vec<Section<'_>> {
    let mut out: Vec<Section<'_>> = Vec::new();
    for line in text.lines() {
        let top = line.strip_prefix("  ").filter(|l| !l.starts_with(' '));
        match top.and_then(|l| l.strip_suffix(':')) {
            Some(key) if !key.starts_with('#') && !key.contains(' ') => out.push(Section {
                name: key.to_owned(),
                lines: Vec::new(),
            }),
            _ => {
                if let Some(s) = out.last_mut() {
                    s.lines.push(line);
                }
            }
        }
    }
    out
}

fn section<'a>(all: &'a [Section<'a>], name: &str) -> &'a Section<'a> {
    all.iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("template.yaml has no {name}"))
}

fn alarms<'a>(all: &'a [Section<'a>]) -> Vec<&'a Section<'a>> {
    all.iter()
        .filter(|s| s.kind() == "AWS::CloudWatch::Alarm")
        .collect()
}

/// The alarms named in the `AlarmRule` of a composite alarm: `ALARM("${Name}")`.
fn composite_members(composite: &Section<'_>) -> Vec<String> {
    let rule = composite.get("AlarmRule").expect("an AlarmRule");
    rule.split("ALARM(\"${")
        .skip(1)
        .map(|rest| rest.split('}').next().unwrap_or("").to_owned())
        .collect()
}

/// The metric names the functions emit in [`emf::NAMESPACE`].
fn emitted() -> BTreeSet<&'static str> {
    let mut names = BTreeSet::new();
    let delivered = emf::attempt_metrics(AttemptOutcome::Delivered, Some(90.0), 60.0);
    let failed = emf::attempt_metrics(AttemptOutcome::Failed, None, 60.0);
    let mut tally = Tally {
        raised: 1,
        refused: 1,
        facts_matched: 1,
        facts_unmatched: 1,
        ..Tally::default()
    };
    tally
        .lapses
        .insert(watcher_core::record::LapseKind::Overdue, 1);
    for (name, _, _) in delivered
        .into_iter()
        .chain(failed)
        .chain(emf::tally_metrics(&tally))
        .chain(emf::timer_failure_metrics())
    {
        names.insert(name);
    }
    names
}

/// Every alarm with no action of its own is one window of a composite (burn-rate) alarm; every
/// other alarm, and every composite, notifies AlarmTopic when it fires and when it clears.
#[test]
fn every_alarm_notifies_the_alarm_topic() {
    let text = template();
    let all = sections(&text);
    let composites: Vec<&Section<'_>> = all
        .iter()
        .filter(|s| s.kind() == "AWS::CloudWatch::CompositeAlarm")
        .collect();
    let windows: BTreeSet<String> = composites
        .iter()
        .flat_map(|c| composite_members(c))
        .collect();
    for c in &composites {
        assert!(c.notifies_alarm_topic(), "{} notifies no one", c.name);
        assert!(
            c.get("AlarmDescription").is_some(),
            "{} says nothing",
            c.name
        );
    }
    let alarms = alarms(&all);
    assert!(alarms.len() >= 24, "only {} alarms", alarms.len());
    for a in alarms {
        let description = a.lines.join(" ");
        assert!(
            description.contains("AlarmDescription: >-"),
            "{} has no description",
            a.name
        );
        if windows.contains(&a.name) {
            assert!(
                a.get("AlarmActions").is_none() && a.get("OKActions").is_none(),
                "{} is a window of a composite alarm, which notifies for it",
                a.name
            );
        } else {
            assert!(
                a.notifies_alarm_topic(),
                "{} does not notify AlarmTopic",
                a.name
            );
        }
    }
}

/// Each signal the runbook names has its alarm, on the metric and dimension it needs.
#[test]
fn each_signal_has_its_alarm_on_its_metric() {
    let text = template();
    let all = sections(&text);
    let expect = [
        // (alarm, namespace, metric, dimension, value)
        (
            "TimerFailuresAlarm",
            "a2a-watcher",
            "TimerFailures",
            "Function",
            "!Sub \"${AWS::StackName}-timer\"",
        ),
        (
            "LapseLatenessAlarm",
            "a2a-watcher",
            "LapseDeliveryLateness",
            "Function",
            "!Ref SubmitterFunction",
        ),
        (
            "LapseDeliveryFailuresAlarm",
            "a2a-watcher",
            "DeliveryFailures",
            "Function",
            "!Ref SubmitterFunction",
        ),
        (
            "LapseQueueAgeAlarm",
            "AWS/SQS",
            "ApproximateAgeOfOldestMessage",
            "QueueName",
            "!GetAtt LapseQueue.QueueName",
        ),
        (
            "TimerQueueAgeAlarm",
            "AWS/SQS",
            "ApproximateAgeOfOldestMessage",
            "QueueName",
            "!GetAtt TimerQueue.QueueName",
        ),
        (
            "LapseDeadLetterAlarm",
            "AWS/SQS",
            "ApproximateNumberOfMessagesVisible",
            "QueueName",
            "!GetAtt LapseDeadLetterQueue.QueueName",
        ),
        (
            "SchedulerDeadLetterAlarm",
            "AWS/SQS",
            "ApproximateNumberOfMessagesVisible",
            "QueueName",
            "!GetAtt SchedulerDeadLetterQueue.QueueName",
        ),
        (
            "SchedulerTargetErrorsAlarm",
            "AWS/Scheduler",
            "TargetErrorCount",
            "ScheduleGroup",
            "!Ref TimerScheduleGroup",
        ),
        (
            "SchedulerDroppedAlarm",
            "AWS/Scheduler",
            "InvocationDroppedCount",
            "ScheduleGroup",
            "!Ref TimerScheduleGroup",
        ),
        (
            "SchedulerThrottlesAlarm",
            "AWS/Scheduler",
            "InvocationThrottleCount",
            "ScheduleGroup",
            "!Ref TimerScheduleGroup",
        ),
    ];
    for (name, namespace, metric, dimension, value) in expect {
        let a = section(&all, name);
        assert_eq!(a.kind(), "AWS::CloudWatch::Alarm", "{name}");
        assert_eq!(
            a.metrics(),
            [(namespace.to_owned(), metric.to_owned())],
            "{name}'s metric"
        );
        assert!(
            a.has_dimension(dimension, value),
            "{name}: no dimension {dimension} = {value} in {:?}",
            a.dimensions()
        );
        assert!(a.notifies_alarm_topic(), "{name}");
    }
    // The ScheduleGroup dimension is the group's name, which is what its Ref gives.
    assert_eq!(
        section(&all, "TimerScheduleGroup").get("Name"),
        Some("!Sub \"${AWS::StackName}-timers\"")
    );
}

/// The product's metrics the alarms and the dashboard read are ones the functions emit, in the
/// functions' namespace.
#[test]
fn the_product_metrics_alarmed_on_are_emitted() {
    let text = template();
    let all = sections(&text);
    let emitted = emitted();
    let mut read = BTreeSet::new();
    for a in alarms(&all) {
        for (namespace, metric) in a.metrics() {
            if namespace == emf::NAMESPACE {
                read.insert(metric);
            }
        }
    }
    for metric in [
        "TimerFailures",
        "LapseDeliveryLateness",
        "DeliveryFailures",
        "LapseTasksDelivered",
        "LapseTasksDeliveredLate",
    ] {
        assert!(read.contains(metric), "no alarm reads {metric}");
    }
    for metric in &read {
        assert!(
            emitted.contains(metric.as_str()),
            "an alarm reads {metric}, which no function emits"
        );
    }
    let dashboard = section(&all, "OperationsDashboard").lines.join("\n");
    for quoted in dashboard.split("[\"a2a-watcher\", \"").skip(1) {
        let metric = quoted.split('"').next().unwrap_or("");
        assert!(
            emitted.contains(metric),
            "the dashboard reads {metric}, which no function emits"
        );
    }
}

/// Every function has an Errors and a Throttles alarm, and every table a throttle alarm over its
/// read and write throttle events and its ThrottledRequests: a function or table added without
/// them fails here.
#[test]
fn every_function_and_table_is_alarmed() {
    let text = template();
    let all = sections(&text);
    let functions: Vec<&Section<'_>> = all
        .iter()
        .filter(|s| s.kind() == "AWS::Serverless::Function")
        .collect();
    assert_eq!(functions.len(), 4);
    let alarms = alarms(&all);
    for f in functions {
        let value = format!("!Ref {}", f.name);
        for metric in ["Errors", "Throttles"] {
            let found = alarms.iter().any(|a| {
                a.metrics() == [("AWS/Lambda".to_owned(), metric.to_owned())]
                    && a.has_dimension("FunctionName", &value)
                    && a.notifies_alarm_topic()
            });
            assert!(found, "{} has no {metric} alarm", f.name);
        }
    }
    let tables: Vec<&Section<'_>> = all
        .iter()
        .filter(|s| s.kind() == "AWS::DynamoDB::Table")
        .collect();
    assert_eq!(tables.len(), 2);
    for t in tables {
        let value = format!("!Ref {}", t.name);
        let alarm = alarms
            .iter()
            .find(|a| {
                a.has_dimension("TableName", &value)
                    && a.metrics().iter().all(|(ns, _)| ns == "AWS/DynamoDB")
            })
            .unwrap_or_else(|| panic!("{} has no throttle alarm", t.name));
        let metrics: BTreeSet<String> = alarm.metrics().into_iter().map(|(_, m)| m).collect();
        for m in [
            "ReadThrottleEvents",
            "WriteThrottleEvents",
            "ThrottledRequests",
        ] {
            assert!(metrics.contains(m), "{}: no {m}", alarm.name);
        }
        assert_eq!(alarm.get("Expression"), Some("SUM(METRICS())"));
        assert!(
            alarm.has_dimension("Operation", "PutItem"),
            "{}",
            alarm.name
        );
        assert!(alarm.notifies_alarm_topic(), "{}", alarm.name);
    }
}

/// The lapse lateness SLO: two composite alarms, fast (1 h and 5 min at 14.4x) and slow (6 h and
/// 30 min at 6x), each window the late share of deliveries over the error budget, from the
/// counts the functions emit against the objective the template gives them.
#[test]
fn the_lateness_slo_has_fast_and_slow_burn_rate_pairs() {
    let text = template();
    let all = sections(&text);
    for (composite, windows, burn) in [
        ("LapseSloFastBurnAlarm", [3600, 300], "14.4"),
        ("LapseSloSlowBurnAlarm", [21600, 1800], "6"),
    ] {
        let c = section(&all, composite);
        assert_eq!(c.kind(), "AWS::CloudWatch::CompositeAlarm");
        assert!(c
            .get("AlarmRule")
            .is_some_and(|r| r.contains(") AND ALARM(")));
        let members = composite_members(c);
        assert_eq!(members.len(), 2, "{composite}: {members:?}");
        for (member, period) in members.iter().zip(windows) {
            let w = section(&all, member);
            assert_eq!(w.get("Threshold"), Some(burn), "{member}");
            assert_eq!(
                w.get("ComparisonOperator"),
                Some("GreaterThanOrEqualToThreshold")
            );
            assert_eq!(w.get("EvaluationPeriods"), Some("1"), "{member}");
            let period = period.to_string();
            assert_eq!(
                w.all("Period"),
                [period.as_str(), period.as_str()],
                "{member}"
            );
            assert_eq!(
                w.get("Expression"),
                Some("!Sub \"100 * late / delivered / (100 - ${LapseLatenessObjectivePercent})\""),
                "{member}"
            );
            let late = (
                "a2a-watcher".to_owned(),
                "LapseTasksDeliveredLate".to_owned(),
            );
            let delivered = ("a2a-watcher".to_owned(), "LapseTasksDelivered".to_owned());
            assert_eq!(w.metrics(), [late, delivered], "{member}");
            assert!(w.has_dimension("Function", "!Ref SubmitterFunction"));
        }
    }
    // The objective: parameters with the SLO's defaults, handed to every function under the name
    // the recorder reads.
    assert_eq!(
        section(&all, "LapseLatenessObjectiveSeconds").get("Default"),
        Some("60")
    );
    assert_eq!(
        section(&all, "LapseLatenessObjectivePercent").get("Default"),
        Some("99")
    );
    assert_eq!(
        section(&all, "LapseLatenessObjectivePercent").get("MaxValue"),
        Some("99.99"),
        "a 100% objective leaves no budget to divide by"
    );
    assert!(
        text.contains(&format!(
            "        {}: !Ref LapseLatenessObjectiveSeconds\n",
            emf::LATENESS_OBJECTIVE_ENV
        )),
        "Globals gives no function the objective"
    );
    assert_eq!(
        emf::lateness_objective(Some("60")),
        Ok(emf::DEFAULT_LATENESS_OBJECTIVE_SECS)
    );
}

/// The queue-age thresholds: the timer queue's messages wait out a delay of up to
/// `MAX_DELAY_SECS` by design, so its alarm's least threshold is above that.
#[test]
fn the_timer_queue_age_alarm_is_past_the_longest_delay() {
    let text = template();
    let all = sections(&text);
    let p = section(&all, "TimerQueueAgeAlarmSeconds");
    let min: i64 = p
        .get("MinValue")
        .and_then(|v| v.parse().ok())
        .expect("MinValue");
    let default: i64 = p
        .get("Default")
        .and_then(|v| v.parse().ok())
        .expect("Default");
    assert!(min > watcher_aws::MAX_DELAY_SECS, "{min}");
    assert!(default >= min);
    assert_eq!(
        section(&all, "TimerQueueAgeAlarm").get("Threshold"),
        Some("!Ref TimerQueueAgeAlarmSeconds")
    );
}

/// The dashboard's body is JSON once CloudFormation has substituted it, with a widget each for
/// lapse lateness, its burn rate, sends by outcome, backlog per queue and throttles.
#[test]
fn the_dashboard_is_json_over_the_operations_metrics() {
    let text = template();
    let all = sections(&text);
    let d = section(&all, "OperationsDashboard");
    assert_eq!(d.kind(), "AWS::CloudWatch::Dashboard");
    let start = d
        .lines
        .iter()
        .position(|l| l.trim() == "DashboardBody: !Sub |")
        .expect("DashboardBody: !Sub |");
    let body: String = d.lines[start + 1..]
        .iter()
        .take_while(|l| l.starts_with("        ") || l.trim().is_empty())
        .map(|l| format!("{}\n", l.get(8..).unwrap_or("")))
        .collect();
    // Each ${…} stands in for a name or a number: 1 reads as either in the JSON below.
    let substituted = substitute(&body);
    let json: serde_json::Value =
        serde_json::from_str(&substituted).expect("the dashboard body is JSON");
    let titles: Vec<String> = json["widgets"]
        .as_array()
        .expect("widgets")
        .iter()
        .map(|w| {
            w["properties"]["title"]
                .as_str()
                .unwrap_or("")
                .to_lowercase()
        })
        .collect();
    for wanted in [
        "lapse lateness (s)",
        "burn rate",
        "sends by outcome",
        "backlog per queue",
        "throttles",
    ] {
        assert!(
            titles.iter().any(|t| t.contains(wanted)),
            "no widget for {wanted}: {titles:?}"
        );
    }
    for queue in [
        "LapseQueue",
        "TimerQueue",
        "LapseDeadLetterQueue",
        "SchedulerDeadLetterQueue",
    ] {
        assert!(
            body.contains(&format!("\"${{{queue}.QueueName}}\"")),
            "the backlog has no {queue}"
        );
    }
}

/// `text` with every `${…}` replaced by `1`.
fn substitute(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        let end = after.find('}').expect("a closed ${…}");
        out.push('1');
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// X-Ray on every function: `Tracing: Active` in Globals, overridden by none.
#[test]
fn every_function_is_traced() {
    let text = template();
    let globals = text
        .split("\nGlobals:\n")
        .nth(1)
        .and_then(|g| g.split("\nResources:\n").next())
        .expect("a Globals section");
    assert!(
        globals.lines().any(|l| l == "    Tracing: Active"),
        "Globals.Function has no Tracing: Active"
    );
    let all = sections(&text);
    for f in all
        .iter()
        .filter(|s| s.kind() == "AWS::Serverless::Function")
    {
        assert_eq!(
            f.all("Tracing"),
            Vec::<&str>::new(),
            "{} overrides Tracing",
            f.name
        );
    }
}
