//! `[[notify]]` channels of the incident formats (`pagerduty`, `opsgenie`, `alertmanager`) and
//! `redact`: what is accepted, and the words each bad value is refused with.

use watcher_config::Config;

const AGENTS: &str = "[[agents]]\nid = \"booking\"\ncard = \"x\"\npush_token = \"p1\"\n";

fn toml(keys: &str) -> String {
    format!("{AGENTS}[[notify]]\nid = \"ops\"\n{keys}")
}

fn refused(keys: &str) -> String {
    Config::from_toml(&toml(keys))
        .expect_err("refused")
        .to_string()
}

fn accepted(keys: &str) -> Config {
    Config::from_toml(&toml(keys)).expect("accepted")
}

const PD: &str = "format = \"pagerduty\"\nrouting_key = \"R0UT1NGKEY0000000000000000000000\"\n";
const OG: &str = "format = \"opsgenie\"\napi_key = \"genie\"\n";
const AM: &str = "format = \"alertmanager\"\nurl = \"http://127.0.0.1:9093\"\n";

#[test]
fn the_incident_formats_are_accepted_with_their_keys() {
    let pd = accepted(&format!(
        "{PD}severity = {{ overdue = \"critical\", skipped = \"info\" }}\n"
    ));
    assert_eq!(pd.notify[0].format, "pagerduty");
    assert_eq!(
        pd.notify[0].url, "",
        "the vendor's endpoint, filled in when built"
    );
    assert_eq!(pd.notify[0].severity["overdue"], "critical");
    accepted(&format!(
        "{OG}url = \"https://api.eu.opsgenie.com\"\npriority = {{ stalled = \"P1\" }}\n"
    ));
    let am = accepted(&format!(
        "{AM}horizon = \"PT6H\"\nseverity = {{ stalled = \"critical\" }}\n"
    ));
    assert_eq!(am.notify[0].horizon.as_ref().unwrap().as_str(), "PT6H");
    accepted(&format!("{AM}redact = [\"subject\", \"fact_key\", \"agent_text\", \"expectation\"]\nredact_key = \"k\"\n"));
    accepted("url = \"https://hooks.example/h\"\nredact = [\"subject\"]\n");
}

#[test]
fn each_bad_value_is_refused_with_its_key_and_reason() {
    let p = "notify: channel \"ops\": ";
    for (keys, why) in [
        ("format = \"pagerduty\"\n".to_owned(), "routing_key: a channel of format \"pagerduty\" needs it (give routing_key, routing_key_file or routing_key_env)"),
        ("format = \"opsgenie\"\n".to_owned(), "api_key: a channel of format \"opsgenie\" needs it (give api_key, api_key_file or api_key_env)"),
        ("format = \"alertmanager\"\n".to_owned(), "url: required (format = \"alertmanager\")"),
        (format!("{PD}routing_key = \" \"\n").replacen("routing_key = \"R0UT1NGKEY0000000000000000000000\"\n", "", 1), "routing_key: must not be empty or hold spaces"),
        (format!("{AM}routing_key = \"k\"\n"), "routing_key: only a channel of format \"pagerduty\" takes it (this channel's format is \"alertmanager\")"),
        (format!("{PD}api_key = \"k\"\n"), "api_key: only a channel of format \"opsgenie\" takes it (this channel's format is \"pagerduty\")"),
        (format!("{PD}severity = {{ overdue = \"high\" }}\n"), "severity.overdue: \"high\" is not one of critical, error, warning, info"),
        (format!("{PD}severity = {{ late = \"error\" }}\n"), "severity: \"late\" is not a lapse (overdue, skipped, stalled)"),
        (format!("{OG}severity = {{ overdue = \"error\" }}\n"), "severity: only a channel of format \"pagerduty\" or \"alertmanager\" takes it (this channel's format is \"opsgenie\")"),
        (format!("{OG}priority = {{ overdue = \"P0\" }}\n"), "priority.overdue: \"P0\" is not one of P1, P2, P3, P4, P5"),
        (format!("{PD}priority = {{ overdue = \"P1\" }}\n"), "priority: only a channel of format \"opsgenie\" takes it (this channel's format is \"pagerduty\")"),
        (format!("{AM}horizon = \"PT0S\"\n"), "horizon: must be longer than zero"),
        (format!("{PD}horizon = \"PT1H\"\n"), "horizon: only a channel of format \"alertmanager\" takes it (this channel's format is \"pagerduty\")"),
        (format!("{AM}digest = \"PT15M\"\n"), "digest: a channel of format \"alertmanager\" tells each lapse as its own incident; remove digest"),
        (format!("{PD}secret = \"k\"\n"), "secret: a channel of format \"pagerduty\" is not signed; remove the secret"),
        (format!("{AM}redact = [\"subjet\"]\n"), "redact: \"subjet\" is not one of subject, fact_key, agent_text, expectation (did you mean \"subject\"?)"),
        (format!("{AM}redact = [\"subject\", \"subject\"]\n"), "redact: \"subject\" is named twice"),
        (format!("{AM}redact_key = \"k\"\n"), "redact_key: hashes the fields named in redact, but redact is empty; name them or remove redact_key"),
        (format!("{AM}redact = [\"subject\"]\nredact_key = \"\"\n"), "redact_key: must not be empty; remove it to leave redacted fields out"),
        ("url = \"https://hooks.example/h\"\nformat = \"pagerdutyy\"\n".to_owned(), "format: \"pagerdutyy\" is not one of standard-webhooks, slack, teams, email, sns, pagerduty, opsgenie, alertmanager"),
    ] {
        assert_eq!(refused(&keys), format!("{p}{why}"), "{keys}");
    }
    // No url on a format that has no vendor default: the words name the format.
    assert_eq!(
        refused(""),
        format!("{p}url: required (format = \"standard-webhooks\")")
    );
}

#[test]
fn vendor_keys_come_from_files_or_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("pd.key"),
        "R0UT1NGKEY0000000000000000000000\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("redact.key"), "hash me\n").unwrap();
    let path = dir.path().join("watcher.toml");
    std::fs::write(
        &path,
        toml("format = \"pagerduty\"\nrouting_key_file = \"pd.key\"\nredact = [\"subject\"]\nredact_key_file = \"redact.key\"\n"),
    )
    .unwrap();
    let c = Config::load(&path).expect("accepted");
    assert_eq!(
        c.notify[0].routing_key.as_deref(),
        Some("R0UT1NGKEY0000000000000000000000")
    );
    assert_eq!(c.notify[0].redact_key.as_deref(), Some("hash me"));
}
