//! The sweep duties' schedules in `template.yaml` (docs/aws-latency.md, "The sweep's duties"):
//! one schedule per [`Duty`], each at its period, and staggered so that no two 5-minute duties
//! start in the same minute. EventBridge Scheduler starts a `rate()` schedule at its creation, so
//! six `rate()` duties created by one deploy start together: six invocations at once, past the
//! timer function's reserve beside its queue source, throttle four of them. A fixed minute
//! needs `cron()`; with the `follow` duty every minute, each minute then starts two duties.

use std::collections::BTreeSet;

use watcher_lambda::timer_event::Duty;

/// One `AWS::Scheduler::Schedule` resource of the template: its `Name`, `ScheduleExpression`
/// and `Target.Input`.
#[derive(Debug, Default)]
struct Schedule {
    name: String,
    expression: String,
    input: String,
}

/// The template's text.
fn template() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml");
    std::fs::read_to_string(path).expect("template.yaml beside the workspace")
}

/// The value of `key: value` on `line` (indentation ignored), quotes kept.
fn value_of<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.trim_start()
        .strip_prefix(key)
        .and_then(|rest| rest.strip_prefix(':'))
        .map(str::trim)
}

/// Every top-level entry (a parameter or a resource: two spaces of indentation) with the lines
/// below it, in the template's order.
fn sections(text: &str) -> Vec<(String, Vec<&str>)> {
    let mut out: Vec<(String, Vec<&str>)> = Vec::new();
    for line in text.lines() {
        let top = line.strip_prefix("  ").filter(|l| !l.starts_with(' '));
        match top.and_then(|l| l.strip_suffix(':')) {
            Some(key) if !key.starts_with('#') && !key.contains(' ') => {
                out.push((key.to_owned(), Vec::new()));
            }
            _ => {
                if let Some((_, lines)) = out.last_mut() {
                    lines.push(line);
                }
            }
        }
    }
    out
}

/// The template's schedules named `sweep-…`.
fn sweep_schedules(text: &str) -> Vec<Schedule> {
    sections(text)
        .into_iter()
        .filter(|(_, lines)| {
            lines
                .iter()
                .any(|l| value_of(l, "Type") == Some("AWS::Scheduler::Schedule"))
        })
        .map(|(_, lines)| {
            let mut s = Schedule::default();
            for line in lines {
                if let Some(v) = value_of(line, "Name") {
                    s.name = v.to_owned();
                } else if let Some(v) = value_of(line, "ScheduleExpression") {
                    s.expression = v.to_owned();
                } else if let Some(v) = value_of(line, "Input") {
                    s.input = v.trim_matches('\'').to_owned();
                }
            }
            s
        })
        .filter(|s| s.name.starts_with("sweep-"))
        .collect()
}

/// The `Default` of the template parameter `name`.
fn parameter_default(text: &str, name: &str) -> u32 {
    let (_, lines) = sections(text)
        .into_iter()
        .find(|(key, _)| key == name)
        .unwrap_or_else(|| panic!("template.yaml has no parameter {name}"));
    lines
        .iter()
        .find_map(|l| value_of(l, "Default"))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} has no numeric Default"))
}

/// The minutes of the hour (0–59) in the minutes field of an EventBridge cron expression:
/// comma-separated `*`, `n` or `a-b`, each with an optional `/step`.
fn minutes(field: &str) -> Result<BTreeSet<u32>, String> {
    let mut out = BTreeSet::new();
    for item in field.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((r, s)) => (r, s.parse::<u32>().map_err(|_| format!("step {s:?}"))?),
            None => (item, 1),
        };
        let number = |s: &str| s.parse::<u32>().map_err(|_| format!("minute {s:?}"));
        let (first, last) = match range.split_once('-') {
            _ if range == "*" => (0, 59),
            Some((a, b)) => (number(a)?, number(b)?),
            // `n/step` runs from n to the end of the hour; a bare `n` is that minute.
            None if item.contains('/') => (number(range)?, 59),
            None => (number(range)?, number(range)?),
        };
        if step == 0 || first > last || last > 59 {
            return Err(format!("{item:?} is not a minute range"));
        }
        out.extend((first..=last).step_by(step as usize));
    }
    Ok(out)
}

/// The minutes of every hour at which `expression` starts its duty: a `cron()` with a fixed
/// minutes field, every hour of every day. A `rate()` starts at the schedule's creation (every
/// duty created by one deploy at the same instant), so its minute is nobody's choice.
fn start_minutes(expression: &str) -> Result<BTreeSet<u32>, String> {
    let fields = expression
        .strip_prefix("cron(")
        .and_then(|e| e.strip_suffix(')'))
        .ok_or_else(|| {
            format!("{expression} is not cron(): it starts when the deploy creates it")
        })?;
    match fields.split(' ').collect::<Vec<_>>()[..] {
        [m, "*", "*", "*", "?", "*"] | [m, "*", "?", "*", "*", "*"] => minutes(m),
        _ => Err(format!("{expression}: expected cron(<minutes> * * * ? *)")),
    }
}

#[test]
fn each_duty_has_one_schedule_at_its_period_and_no_two_five_minute_duties_share_a_minute() {
    let text = template();
    let schedules = sweep_schedules(&text);
    // The minutes each duty starts at, in the order of Duty::ALL.
    let mut starts: Vec<Option<BTreeSet<u32>>> = vec![None; Duty::ALL.len()];
    for s in &schedules {
        let input: serde_json::Value = serde_json::from_str(&s.input)
            .unwrap_or_else(|e| panic!("{}'s Input {:?}: {e}", s.name, s.input));
        let i = Duty::ALL
            .iter()
            .position(|d| input["sweep"] == d.name())
            .unwrap_or_else(|| panic!("{}'s Input {} names no duty", s.name, s.input));
        let duty = Duty::ALL[i];
        assert_eq!(s.name, format!("sweep-{duty}"), "the schedule of {duty}");
        let minutes = start_minutes(&s.expression).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        assert!(
            starts[i].replace(minutes).is_none(),
            "{duty} has two schedules"
        );
    }
    let starts: Vec<(Duty, BTreeSet<u32>)> = Duty::ALL
        .into_iter()
        .zip(starts)
        .map(|(d, s)| (d, s.unwrap_or_else(|| panic!("{d} has no schedule"))))
        .collect();

    // Each at its period (docs/aws-latency.md): follow every minute, the others every 5.
    for (duty, minutes) in &starts {
        let every: u32 = if *duty == Duty::Follow { 1 } else { 5 };
        let first = *minutes.first().expect("at least one minute");
        let expected: BTreeSet<u32> = (first..60).step_by(every as usize).collect();
        assert!(first < every, "{duty} starts at minute {first}");
        assert_eq!(minutes, &expected, "{duty} every {every} min");
    }

    // No two 5-minute duties share a minute.
    let five: Vec<&(Duty, BTreeSet<u32>)> =
        starts.iter().filter(|(d, _)| *d != Duty::Follow).collect();
    for (i, (a, ma)) in five.iter().enumerate() {
        for (b, mb) in five[i + 1..].iter() {
            let shared: Vec<_> = ma.intersection(mb).collect();
            assert!(
                shared.is_empty(),
                "{a} and {b} both start at minutes {shared:?}"
            );
        }
    }

    // At most two duties start in any minute, within the timer function's reserve beside its
    // queue source (TimerConcurrency − TimerQueueConcurrency, 2 with the defaults).
    let most = (0..60)
        .map(|m| starts.iter().filter(|(_, s)| s.contains(&m)).count())
        .max()
        .unwrap_or(0);
    let reserve = parameter_default(&text, "TimerConcurrency")
        .checked_sub(parameter_default(&text, "TimerQueueConcurrency"))
        .expect("TimerQueueConcurrency within TimerConcurrency");
    assert_eq!(most, 2, "duties starting in the busiest minute");
    assert!(
        most <= reserve as usize,
        "{most} at once, reserve {reserve}"
    );
}

#[test]
fn the_minutes_field_reads_as_eventbridge_says() {
    let set = |v: &[u32]| v.iter().copied().collect::<BTreeSet<u32>>();
    assert_eq!(
        minutes("0/5").unwrap(),
        set(&[0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55])
    );
    assert_eq!(
        minutes("3/5").unwrap(),
        set(&[3, 8, 13, 18, 23, 28, 33, 38, 43, 48, 53, 58])
    );
    assert_eq!(minutes("*").unwrap().len(), 60);
    assert_eq!(minutes("1,2,10-12").unwrap(), set(&[1, 2, 10, 11, 12]));
    assert_eq!(minutes("7").unwrap(), set(&[7]));
    for bad in ["60", "5-1", "0/0", "x", ""] {
        assert!(minutes(bad).is_err(), "{bad:?}");
    }
    assert!(start_minutes("rate(5 minutes)").is_err());
    assert!(
        start_minutes("cron(0/5 12 * * ? *)").is_err(),
        "one hour only"
    );
    assert_eq!(start_minutes("cron(2/5 * * * ? *)").unwrap().len(), 12);
}
