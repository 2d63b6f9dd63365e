//! Notification channels in `serve` (issue 25; expectations-v1 §13.1): a lapse is told to a real
//! local receiver, signed, once, through a kill -9 and a restart; `/metrics` counts it; and
//! `a2a-watcher notify test` sends a sample through the same channel.

use crate::common;

use std::process::Command;
use std::time::Duration;

use jiff::Timestamp;
use watcher_delivery::testing::{spawn_capture_agent, Behaviour, Reply};
use watcher_notify::testing::{Receiver, SECRET};

use common::*;

const PATIENCE: Duration = Duration::from_secs(30);

fn channel(receiver: &Receiver) -> String {
    format!(
        "public_url = \"http://watcher.test\"\n\n[[notify]]\nid = \"ops\"\nurl = \"{}\"\nsecret = \"{SECRET}\"\n",
        receiver.url
    )
}

#[tokio::test]
async fn a_lapse_is_told_once_signed_through_a_kill_and_restart() {
    let receiver = Receiver::start().await;
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let mut w = spawn_watcher(&agent, &channel(&receiver)).await;
    let due = plus(Timestamp::now(), 2);
    let push = one_expectation("task-n1", "exp-n1", "PA-N1", due, "PT0S");
    assert_eq!(w.push(&push).await.status, 200);

    assert!(
        wait_until(|| async { !receiver.accepted().is_empty() }, PATIENCE).await,
        "no notification within {PATIENCE:?}:\n{}",
        w.log()
    );
    let got = receiver.accepted();
    assert_eq!(got.len(), 1, "{got:?}");
    let n = &got[0];
    assert!(
        n.verified,
        "the notification is signed with the channel's secret"
    );
    assert_eq!(n.body["type"], "lapse.recorded");
    let data = &n.body["data"];
    assert_eq!(data["agent"], "booking");
    assert_eq!(data["lapse"], "overdue");
    assert_eq!(
        data["messageId"],
        format!("lapse:exp-n1:overdue:{}", fmt(due))
    );
    assert_eq!(data["block"]["expectationId"], "exp-n1");
    assert_eq!(data["block"]["subject"]["id"], "PA-N1");
    assert_eq!(
        data["links"]["operator"],
        "http://watcher.test/ui/subjects/shipment/PA%2DN1"
    );
    let counted = "a2a_watcher_notifications_total{channel=\"ops\",outcome=\"delivered\"} 1\n";
    let scrape = || async {
        let res = w.http().get(w.url("/metrics")).send().await.unwrap();
        res.text().await.unwrap()
    };
    assert!(
        wait_until(|| async { scrape().await.contains(counted) }, PATIENCE).await,
        "{}",
        scrape().await
    );

    // kill -9 and a restart: the channel's cursor is in the database; nothing is told again.
    w.restart().await;
    assert!(
        holds_for(
            || async { receiver.seen().len() == 1 },
            Duration::from_secs(3)
        )
        .await,
        "told again after the restart: {:?}",
        receiver.seen()
    );
}

#[tokio::test]
async fn notify_test_sends_a_signed_sample_and_fails_on_a_refusal() {
    let receiver = Receiver::start().await;
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, &channel(&receiver)).await;
    let config = w.dir.path().join("watcher.toml");
    let run = move || {
        Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
            .args(["notify", "test", "--channel", "ops", "--config"])
            .arg(&config)
            .output()
            .expect("run a2a-watcher notify test")
    };
    let out = tokio::task::spawn_blocking(run.clone()).await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8_lossy(&out.stdout).to_string();
    let seen = receiver.seen();
    let sample = seen
        .iter()
        .find(|r| r.body["type"] == "notify.test")
        .expect("the sample arrived");
    assert!(sample.verified);
    assert_eq!(sample.body["data"]["channel"], "ops");
    assert_eq!(printed.trim(), format!("sent {} to channel ops", sample.id));

    receiver.answer(500);
    let out = tokio::task::spawn_blocking(run).await.unwrap();
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "a2a-watcher notify test: channel \"ops\": HTTP 500 from the receiver"
    );
}

/// The local SMTP server (`infra/smtp_sink.py`, aiosmtpd in `.venv`), or `None` with the reason
/// printed when it cannot run here. Under `CI=true` a missing aiosmtpd fails the test, unless
/// `A2A_SKIP_SMTP` is set (infra/test-all.sh sets it, with the reason in its summary, when the
/// venv could not be made).
struct SmtpSink {
    port: u16,
    child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl SmtpSink {
    async fn start(auth: &str) -> Option<SmtpSink> {
        use tokio::io::AsyncBufReadExt;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let python = root.join(".venv/bin/python");
        let has_it = Command::new(&python)
            .args(["-c", "import aiosmtpd"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !has_it {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true");
            assert!(
                !ci || std::env::var_os("A2A_SKIP_SMTP").is_some(),
                "aiosmtpd is missing in .venv: run `bash infra/moto.sh` (CI=true makes this a failure)"
            );
            skip::skip("aiosmtpd is missing in .venv; run `bash infra/moto.sh`");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = tokio::process::Command::new(&python)
            .arg(root.join("infra/smtp_sink.py"))
            .arg(port.to_string())
            .args(["--auth", auth])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start infra/smtp_sink.py");
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = tokio::time::timeout(PATIENCE, lines.next_line())
            .await
            .expect("the SMTP sink starts")
            .unwrap();
        assert_eq!(ready.as_deref(), Some("ready"));
        Some(SmtpSink { port, child, lines })
    }

    /// The next message the sink accepted.
    async fn next(&mut self) -> serde_json::Value {
        let line = tokio::time::timeout(PATIENCE, self.lines.next_line())
            .await
            .expect("a message within the patience")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).unwrap()
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// An email channel: the lapse reaches a local SMTP server as a plain-text message, logged in
/// with the password from a file, with the lapse task's words, the facts and the links.
#[tokio::test]
async fn a_lapse_is_mailed_through_smtp_with_the_password_from_a_file() {
    let Some(mut sink) = SmtpSink::start("watcher:s3cret-smtp").await else {
        return;
    };
    let secrets = tempfile::tempdir().unwrap();
    let password = secrets.path().join("smtp.password");
    std::fs::write(&password, "s3cret-smtp\n").unwrap();
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let extra = format!(
        "public_url = \"http://watcher.test\"\n\n[[notify]]\nid = \"ops-mail\"\nformat = \"email\"\nurl = \"smtp://127.0.0.1:{}\"\ntls = \"none\"\nfrom = \"a2a-watcher <watcher@example.test>\"\nto = [\"Ops desk <ops@example.test>\"]\nusername = \"watcher\"\npassword_file = \"{}\"\n",
        sink.port,
        password.display()
    );
    let w = spawn_watcher(&agent, &extra).await;
    let due = plus(Timestamp::now(), 2);
    let push = one_expectation("task-m1", "exp-m1", "PA-M1", due, "PT0S");
    assert_eq!(w.push(&push).await.status, 200);

    let mail = sink.next().await;
    assert_eq!(mail["from"], "watcher@example.test");
    assert_eq!(mail["to"], serde_json::json!(["ops@example.test"]));
    assert_eq!(
        mail["subject"],
        "[a2a-watcher] Overdue: shipment.manifest for shipment PA-M1 (agent booking)"
    );
    assert_eq!(mail["contentType"], "text/plain");
    let message_id = mail["messageId"].as_str().unwrap();
    assert!(
        message_id.starts_with("<msg_") && message_id.ends_with("@a2a-watcher>"),
        "{message_id}"
    );
    // SMTP's line ends are CRLF.
    let body = mail["body"].as_str().unwrap().replace("\r\n", "\n");
    let lapse_task = format!("lapse:exp-m1:overdue:{}", fmt(due));
    for line in [
        "Overdue: the airline manifest for PA-M1 was due by",
        "Agent: booking\n",
        "Subject: shipment PA-M1\n",
        "Expected: the airline manifest for PA-M1\n",
        &format!("Lapse task: {lapse_task}\n"),
        "Operator page: http://watcher.test/ui/subjects/shipment/PA%2DM1\n",
    ] {
        assert!(body.contains(line), "{line:?} in\n{body}");
    }
}

/// An agent that refuses its lapse task: the channel tells the lapse, then the agent's failing
/// delivery, once each, naming the agent's answer (the agents' events, issue 25).
#[tokio::test]
async fn an_agent_refusing_its_lapse_task_is_told_as_failing_delivery() {
    let receiver = Receiver::start().await;
    let agent = spawn_capture_agent(Behaviour::always(Reply::rpc_error(
        -32602,
        "the agent refuses this message",
    )))
    .await;
    let w = spawn_watcher(&agent, &channel(&receiver)).await;
    let due = plus(Timestamp::now(), 2);
    let push = one_expectation("task-n2", "exp-n2", "PA-N2", due, "PT0S");
    assert_eq!(w.push(&push).await.status, 200);

    let told = |kind: &'static str| {
        let r = &receiver;
        async move {
            r.accepted()
                .iter()
                .filter(|n| n.body["type"] == kind)
                .count()
        }
    };
    assert!(
        wait_until(|| async { told("delivery.failing").await == 1 }, PATIENCE).await,
        "no delivery.failing within {PATIENCE:?}: {:?}\n{}",
        receiver.seen(),
        w.log()
    );
    let failing = receiver
        .accepted()
        .into_iter()
        .find(|n| n.body["type"] == "delivery.failing")
        .unwrap();
    assert!(failing.verified);
    let data = &failing.body["data"];
    assert_eq!(data["agent"], "booking");
    assert_eq!(
        data["lapseTask"]["messageId"],
        format!("lapse:exp-n2:overdue:{}", fmt(due))
    );
    assert!(
        data["error"].as_str().unwrap_or("").contains("-32602"),
        "{data}"
    );
    assert_eq!(data["link"], "http://watcher.test/ui/agents");
    assert!(
        holds_for(
            || async { told("delivery.failing").await == 1 && told("lapse.recorded").await == 1 },
            Duration::from_secs(3)
        )
        .await,
        "each told once: {:?}",
        receiver.seen()
    );
}

/// An agent that answers its lapse task with a Task asking for input: the channel tells that
/// the lapse task needs a person, once (expectations-v1 §10.2).
#[tokio::test]
async fn a_lapse_task_asking_for_input_is_told_as_needing_a_person() {
    let receiver = Receiver::start().await;
    let agent = spawn_capture_agent(Behaviour::always(Reply::task(
        "task-ask",
        a2a_types::TaskState::InputRequired,
    )))
    .await;
    let w = spawn_watcher(&agent, &channel(&receiver)).await;
    let due = plus(Timestamp::now(), 2);
    let push = one_expectation("task-n3", "exp-n3", "PA-N3", due, "PT0S");
    assert_eq!(w.push(&push).await.status, 200);

    let told = || {
        receiver
            .accepted()
            .into_iter()
            .filter(|n| n.body["type"] == "lapse_task.needs_person")
            .collect::<Vec<_>>()
    };
    assert!(
        wait_until(|| async { !told().is_empty() }, PATIENCE).await,
        "no lapse_task.needs_person within {PATIENCE:?}: {:?}\n{}",
        receiver.seen(),
        w.log()
    );
    let n = &told()[0];
    assert!(n.verified);
    let data = &n.body["data"];
    assert_eq!(data["agent"], "booking");
    assert_eq!(
        data["lapseTask"]["messageId"],
        format!("lapse:exp-n3:overdue:{}", fmt(due))
    );
    assert!(
        data["text"]
            .as_str()
            .unwrap_or("")
            .contains("its task task-ask asks for input"),
        "{data}"
    );
    assert!(
        holds_for(|| async { told().len() == 1 }, Duration::from_secs(3)).await,
        "told once: {:?}",
        receiver.seen()
    );
}

/// A channel to a receiver that answers a redirect: not followed (the URL redirected to gets
/// nothing), and a failure named as a redirect in `/ui/notifications` and in the metrics'
/// `redirected` outcome; `a2a-watcher notify test` fails saying so.
#[tokio::test]
async fn a_redirect_is_not_followed_and_is_named_in_ui_metrics_and_notify_test() {
    let elsewhere = Receiver::start().await;
    let url = watcher_notify::testing::redirecting(301, &elsewhere.url).await;
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let extra = format!("[[notify]]\nid = \"ops\"\nurl = \"{url}\"\nsecret = \"{SECRET}\"\n");
    let w = spawn_watcher(&agent, &extra).await;
    let to = format!(
        "http://{}/…",
        elsewhere
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/hook")
    );
    let said = format!(
        "redirect (301) to {to} not followed; give the channel the URL the receiver redirects to"
    );

    let config = w.dir.path().join("watcher.toml");
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
            .args(["notify", "test", "--channel", "ops", "--config"])
            .arg(&config)
            .output()
            .expect("run a2a-watcher notify test")
    })
    .await
    .unwrap();
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        format!("a2a-watcher notify test: channel \"ops\": {said}")
    );

    let due = plus(Timestamp::now(), 2);
    let push = one_expectation("task-r1", "exp-r1", "PA-R1", due, "PT0S");
    assert_eq!(w.push(&push).await.status, 200);
    let counted = "a2a_watcher_notifications_total{channel=\"ops\",outcome=\"redirected\"} 1\n";
    let scrape = || async {
        let res = w.http().get(w.url("/metrics")).send().await.unwrap();
        res.text().await.unwrap()
    };
    assert!(
        wait_until(|| async { scrape().await.contains(counted) }, PATIENCE).await,
        "{}\n{}",
        scrape().await,
        w.log()
    );
    let page = w
        .http()
        .get(w.url("/ui/notifications"))
        .bearer_auth(OPERATOR_TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains(&said), "{said:?} not in\n{page}");
    assert!(
        elsewhere.seen().is_empty(),
        "followed: {:?}",
        elsewhere.seen()
    );
}

/// Two channels, the first to a receiver that takes the request and never answers: the second
/// gets each lapse before the first channel's request has ended (its failure is not yet
/// counted), for the first lapse and for one recorded after it (each channel runs in its own
/// loop).
#[tokio::test]
async fn a_hanging_channel_does_not_hold_up_another() {
    let hang = watcher_notify::testing::Hanging::start().await;
    let ok = Receiver::start().await;
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let extra = format!(
        "[[notify]]\nid = \"hang\"\nurl = \"{}\"\ntimeout_secs = 120\n\n[[notify]]\nid = \"ok\"\nurl = \"{}\"\nsecret = \"{SECRET}\"\n",
        hang.url, ok.url
    );
    let w = spawn_watcher(&agent, &extra).await;
    let scrape = || async {
        let res = w.http().get(w.url("/metrics")).send().await.unwrap();
        res.text().await.unwrap()
    };
    let not_failed = "a2a_watcher_notifications_total{channel=\"hang\",outcome=\"failed\"} 0\n";
    for (i, exp) in ["exp-h1", "exp-h2"].into_iter().enumerate() {
        let due = plus(Timestamp::now(), 2);
        let push = one_expectation(&format!("task-{exp}"), exp, exp, due, "PT0S");
        assert_eq!(w.push(&push).await.status, 200);
        assert!(
            wait_until(|| async { ok.accepted().len() == i + 1 }, PATIENCE).await,
            "the healthy channel did not get {exp}: {:?}\n{}",
            ok.seen(),
            w.log()
        );
        assert!(
            wait_until(|| async { hang.held() == 1 }, PATIENCE).await,
            "the hanging receiver holds the first lapse's request"
        );
        let text = scrape().await;
        assert!(
            text.contains(not_failed),
            "the hanging channel's request ended before the healthy channel got {exp}:\n{text}"
        );
    }
}

/// Agent text reaches a Slack channel as text: a subject id holding a broadcast mention and a
/// Markdown link is escaped in the message's `text` and blocks, and its URL is defanged.
#[tokio::test]
async fn agent_text_reaches_slack_escaped() {
    let receiver = Receiver::start().await;
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let extra = format!(
        "[[notify]]\nid = \"ops-slack\"\nformat = \"slack\"\nurl = \"{}\"\n",
        receiver.url
    );
    let w = spawn_watcher(&agent, &extra).await;
    let subject = "<!channel> [re-confirm](https://evil.example)";
    let due = plus(Timestamp::now(), 2);
    let push = one_expectation("task-s1", "exp-s1", subject, due, "PT0S");
    assert_eq!(w.push(&push).await.status, 200);
    assert!(
        wait_until(|| async { !receiver.accepted().is_empty() }, PATIENCE).await,
        "no notification within {PATIENCE:?}:\n{}",
        w.log()
    );
    let body = &receiver.accepted()[0].body;
    let shown = "&lt;!channel&gt; [re-confirm](https[:]//evil[.]example)";
    assert_eq!(
        body["text"],
        format!("Overdue: shipment.manifest for shipment {shown} (agent booking)")
    );
    assert_eq!(body["mrkdwn"], false);
    assert_eq!(
        body["blocks"][0]["text"],
        serde_json::json!({ "type": "plain_text", "text": format!("Overdue: shipment.manifest for shipment {shown}") })
    );
    let all = body.to_string();
    assert!(
        !all.contains("<!channel>") && !all.contains("https://evil"),
        "{all}"
    );
}

/// A channel whose `agents` filter names no agent of its tenant stops `serve` at start, naming
/// the channel, the key and the closest agent id.
#[tokio::test]
async fn serve_refuses_a_channel_naming_an_unknown_agent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watcher.toml");
    std::fs::write(
        &path,
        "listen = \"127.0.0.1:0\"\ndatabase = \"w.db\"\n[[agents]]\nid = \"booking\"\ncard = \"card.json\"\npush_token = \"p\"\n[[notify]]\nid = \"ops\"\nurl = \"https://hooks.example/h\"\nagents = [\"bookng\"]\n",
    )
    .unwrap();
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
        .arg("serve")
        .arg("--config")
        .arg(&path)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    // A serve that accepted the configuration runs until killed: dropped (and killed) here.
    let out = tokio::time::timeout(PATIENCE, run)
        .await
        .expect("serve started with the channel instead of refusing it")
        .expect("run serve");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "serve started:\n{stderr}");
    assert!(
        stderr.contains(
            "notify: channel \"ops\": agents: \"bookng\" is not an agent of tenant \"default\" (did you mean \"booking\"?)"
        ),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("listening on"));
}
