//! Safe deploys in `template.yaml` (docs/howto/deploy-aws.md, "Safe deploys"): every function
//! publishes its `live` alias and moves it with CodeDeploy, rolled back on alarms of the
//! template that watch that function; the default canary lasts long enough for those alarms to
//! fire; and every invocation path (the event source mappings, the schedules, the schedules the
//! functions arm at run time, the scheduler role's grant, Lambda's asynchronous settings)
//! names the alias, never `$LATEST`. What SAM generates from this (the HTTP API's integrations
//! on the aliases) is checked after SAM's own transform in infra/aws_local/test_units.py
//! (`SafeDeploysTest`).

use std::collections::BTreeMap;

/// The alias every function publishes (`AutoPublishAlias`).
const ALIAS: &str = "live";

/// The template's text.
fn template() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml");
    std::fs::read_to_string(path).expect("template.yaml beside the workspace")
}

/// The value of `key: value` on `line` (indentation and a list dash ignored), without a
/// trailing `# comment`.
fn value_of<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let rest = line
        .trim_start()
        .trim_start_matches("- ")
        .strip_prefix(key)?
        .strip_prefix(':')?;
    Some(rest.split(" #").next().unwrap_or("").trim())
}

/// Every top-level entry of the template (a parameter, a resource, an output: two spaces of
/// indentation), by name, with the lines below it.
fn sections(text: &str) -> BTreeMap<String, Vec<&str>> {
    let mut out: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if indent == 0 {
            current = None;
        } else if indent == 2 && trimmed.ends_with(':') {
            let name = trimmed.trim_end_matches(':').to_owned();
            out.insert(name.clone(), Vec::new());
            current = Some(name);
        } else if let Some(name) = &current {
            out.get_mut(name).expect("section").push(line);
        }
    }
    out
}

fn get<'a>(lines: &[&'a str], key: &str) -> Option<&'a str> {
    lines.iter().find_map(|l| value_of(l, key))
}

fn all<'a>(lines: &[&'a str], key: &str) -> Vec<&'a str> {
    lines.iter().filter_map(|l| value_of(l, key)).collect()
}

fn of_type<'a, 'b>(
    all_sections: &'b BTreeMap<String, Vec<&'a str>>,
    kind: &str,
) -> Vec<(&'b str, &'b [&'a str])> {
    all_sections
        .iter()
        .filter(|(_, lines)| get(lines, "Type") == Some(kind))
        .map(|(name, lines)| (name.as_str(), lines.as_slice()))
        .collect()
}

/// The alarms of a function's `DeploymentPreference` (`- !Ref X` under its `Alarms:`).
fn deployment_alarms<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    let Some(start) = lines
        .iter()
        .position(|l| l.trim() == "DeploymentPreference:")
    else {
        return Vec::new();
    };
    let indent = |l: &str| l.len() - l.trim_start().len();
    let base = indent(lines[start]);
    let block: Vec<&str> = lines[start + 1..]
        .iter()
        .take_while(|l| indent(l) > base)
        .copied()
        .collect();
    let Some(alarms) = block.iter().position(|l| l.trim() == "Alarms:") else {
        return Vec::new();
    };
    block[alarms + 1..]
        .iter()
        .map(|l| l.trim())
        .take_while(|l| l.starts_with("- "))
        .filter_map(|l| l.strip_prefix("- !Ref "))
        .collect()
}

#[test]
fn every_function_publishes_its_alias_and_deploys_on_alarms_that_watch_it() {
    let text = template();
    let all_sections = sections(&text);
    let functions = of_type(&all_sections, "AWS::Serverless::Function");
    assert_eq!(functions.len(), 4, "api, timer, submitter, lesson-write");
    for (function, lines) in functions {
        assert_eq!(get(lines, "AutoPublishAlias"), Some(ALIAS), "{function}");
        // A change of configuration alone publishes a version too; else `live` would keep
        // running the old environment.
        assert_eq!(
            get(lines, "AutoPublishAliasAllProperties"),
            Some("true"),
            "{function}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.trim() == "Type: !Ref DeploymentType"),
            "{function}: the deployment type is the parameter"
        );
        let alarms = deployment_alarms(lines);
        for alarm in &alarms {
            let alarm_lines = all_sections
                .get(*alarm)
                .unwrap_or_else(|| panic!("{function}: alarm {alarm} is not in the template"));
            // A metric alarm: CodeDeploy reads alarms with DescribeAlarms' default type, which
            // leaves composite alarms out.
            assert_eq!(
                get(alarm_lines, "Type"),
                Some("AWS::CloudWatch::Alarm"),
                "{alarm}"
            );
        }
        // The function's own Lambda errors and throttles alarms are among them.
        let own: Vec<&str> = of_type(&all_sections, "AWS::CloudWatch::Alarm")
            .into_iter()
            .filter(|(_, l)| {
                get(l, "Namespace") == Some("AWS/Lambda")
                    && all(l, "Value").contains(&format!("!Ref {function}").as_str())
            })
            .map(|(name, _)| name)
            .collect();
        let metrics: Vec<&str> = own
            .iter()
            .filter_map(|a| get(&all_sections[*a], "MetricName"))
            .collect();
        assert_eq!(metrics.len(), 2, "{function}: {own:?}");
        assert!(
            metrics.contains(&"Errors") && metrics.contains(&"Throttles"),
            "{function}: {metrics:?}"
        );
        for alarm in own {
            assert!(
                alarms.contains(&alarm),
                "{function} deploys without {alarm}"
            );
        }
    }
    // The deadline functions also roll back on failed timers and on the lateness SLO's fast
    // window.
    for function in ["TimerFunction", "SubmitterFunction"] {
        assert!(deployment_alarms(&all_sections[function]).contains(&"LapseSloFastShortWindow"));
    }
    assert!(deployment_alarms(&all_sections["TimerFunction"]).contains(&"TimerFailuresAlarm"));
}

/// Minutes of a CodeDeploy Lambda configuration's first step: 15 for
/// `Canary10Percent15Minutes`, 3 for `Linear10PercentEvery3Minutes`, 0 for `AllAtOnce`.
fn bake_minutes(config: &str) -> u64 {
    let digits: String = config
        .trim_end_matches("Minutes")
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    if config == "AllAtOnce" {
        0
    } else {
        digits.parse().expect("a configuration ending in N Minutes")
    }
}

#[test]
fn the_default_canary_lasts_until_its_alarms_can_fire() {
    let text = template();
    let all_sections = sections(&text);
    let parameter = &all_sections["DeploymentType"];
    let default = get(parameter, "Default").expect("a default");
    assert!(default.starts_with("Canary10Percent"), "{default}");
    let allowed: Vec<&str> = parameter
        .iter()
        .map(|l| l.trim())
        .filter_map(|l| l.strip_prefix("- "))
        .collect();
    assert!(allowed.contains(&"AllAtOnce"), "a dev stack's choice");
    assert!(allowed.contains(&default));
    assert_eq!(bake_minutes("Linear10PercentEvery3Minutes"), 3);
    assert_eq!(bake_minutes("AllAtOnce"), 0);
    // The longest an alarm of a deployment needs to go to ALARM: its periods to alarm
    // (DatapointsToAlarm, else EvaluationPeriods) times its period.
    let mut longest = 0;
    for (function, lines) in of_type(&all_sections, "AWS::Serverless::Function") {
        for alarm in deployment_alarms(lines) {
            let a = &all_sections[alarm];
            let period: u64 = get(a, "Period")
                .and_then(|p| p.parse().ok())
                .expect("Period");
            let periods: u64 = get(a, "DatapointsToAlarm")
                .or_else(|| get(a, "EvaluationPeriods"))
                .and_then(|p| p.parse().ok())
                .expect("periods");
            longest = longest.max(period * periods);
            assert!(period * periods > 0, "{function}: {alarm}");
        }
    }
    assert_eq!(longest, 600, "two 5-minute periods");
    assert!(
        bake_minutes(default) * 60 > longest,
        "{default} ends before an alarm needing {longest} s can fire"
    );
}

#[test]
fn every_invocation_names_the_alias_not_latest() {
    let text = template();
    let all_sections = sections(&text);
    let alias_arn = "!Ref TimerFunction.Alias";
    let schedules = of_type(&all_sections, "AWS::Scheduler::Schedule");
    assert_eq!(schedules.len(), 6, "the sweep's duties");
    for (name, lines) in schedules {
        assert_eq!(get(lines, "Arn"), Some(alias_arn), "{name}");
    }
    let mappings = of_type(&all_sections, "AWS::Lambda::EventSourceMapping");
    assert_eq!(mappings.len(), 2);
    for (name, lines) in mappings {
        let function = get(lines, "FunctionName").expect("FunctionName");
        assert!(
            function.starts_with("!Ref ") && function.ends_with("Function.Alias"),
            "{name}: {function}"
        );
    }
    // Lambda's asynchronous settings apply to the qualifier they name: the alias Scheduler
    // invokes.
    for (name, lines) in of_type(&all_sections, "AWS::Lambda::EventInvokeConfig") {
        assert_eq!(get(lines, "Qualifier"), Some(ALIAS), "{name}");
    }
    // The schedules the functions arm at run time target TIMER_FUNCTION_ARN; the scheduler role
    // may invoke that ARN alone; `a2a-watcher rearm` reads it from the output.
    let qualified = format!("-timer:{ALIAS}\"");
    let env = text
        .lines()
        .find_map(|l| value_of(l, "TIMER_FUNCTION_ARN"))
        .expect("TIMER_FUNCTION_ARN");
    assert!(env.ends_with(&qualified), "{env}");
    let role = &all_sections["SchedulerRole"];
    let invoke = role
        .iter()
        .position(|l| value_of(l, "Sid") == Some("InvokeTimer"))
        .expect("InvokeTimer");
    let resource = role[invoke..]
        .iter()
        .find_map(|l| value_of(l, "Resource"))
        .expect("its Resource");
    assert!(resource.ends_with(&qualified), "{resource}");
    assert_eq!(
        get(&all_sections["TimerFunctionArn"], "Value"),
        Some(alias_arn)
    );
    // Nothing else invokes a function by its unqualified ARN, or names $LATEST.
    for line in text.lines() {
        let code = line.split('#').next().unwrap_or("");
        assert!(!code.contains("$LATEST"), "{line}");
        for function in ["Api", "Timer", "Submitter", "LessonWrite"] {
            assert!(!code.contains(&format!("{function}Function.Arn")), "{line}");
        }
    }
}
