//! The operator's web page in a real browser: headless Chromium (Debian's `chromium`, installed
//! by `.ci/run` through infra/chromium.sh) driven over the DevTools protocol. A `serve` child runs
//! the worked example on compressed times; the test logs in through the form (the token goes in
//! a POST body and comes back as an HttpOnly, SameSite=Strict cookie, never in a URL), reads each
//! page's DOM, acknowledges an incident with its button, and saves a screenshot of the subject's
//! page to `target/web-subject.png`.
//!
//! Without Chromium the test fails, unless `A2A_SKIP_CHROMIUM=1` says to skip it (locally).

use crate::common;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use jiff::Timestamp;
use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

use common::*;

const PATIENCE: Duration = Duration::from_secs(20);

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    path.exists().then_some(path)
}

/// Headless Chromium with a DevTools port, killed when dropped.
struct Browser {
    child: Child,
    _profile: tempfile::TempDir,
    port: u16,
    ws_path: String,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Browser {
    fn launch(binary: &Path) -> Browser {
        let profile = tempfile::Builder::new()
            .prefix("a2a-watcher-chromium")
            .tempdir()
            .unwrap();
        let child = Command::new(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--window-size=1280,900",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromium");
        // Chromium writes its DevTools port into the profile once it listens.
        let port_file = profile.path().join("DevToolsActivePort");
        let deadline = Instant::now() + PATIENCE;
        let (port, ws_path) = loop {
            let text = std::fs::read_to_string(&port_file).unwrap_or_default();
            let mut lines = text.lines();
            if let (Some(Ok(port)), Some(path)) =
                (lines.next().map(|l| l.trim().parse::<u16>()), lines.next())
            {
                break (port, path.trim().to_owned());
            }
            assert!(
                Instant::now() < deadline,
                "chromium did not open its DevTools port"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        Browser {
            child,
            _profile: profile,
            port,
            ws_path,
        }
    }

    /// A new page, through the browser's DevTools endpoint (its path is the second line of
    /// `DevToolsActivePort`), attached as one flat session.
    fn page(&self) -> Cdp {
        let ws = format!("ws://127.0.0.1:{}{}", self.port, self.ws_path);
        let (socket, _) = tungstenite::connect(ws).expect("connect to the browser's DevTools");
        let mut cdp = Cdp {
            socket,
            next: 0,
            session: None,
        };
        let target = cdp.call("Target.createTarget", json!({ "url": "about:blank" }));
        let attached = cdp.call(
            "Target.attachToTarget",
            json!({ "targetId": target["targetId"], "flatten": true }),
        );
        cdp.session = Some(
            attached["sessionId"]
                .as_str()
                .expect("a session")
                .to_owned(),
        );
        cdp
    }
}

/// One DevTools session: commands by id, events skipped.
struct Cdp {
    socket: WebSocket<tungstenite::stream::MaybeTlsStream<TcpStream>>,
    next: u64,
    session: Option<String>,
}

impl Cdp {
    /// Calls `method`; panics on an error answer.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let answer = self.try_call(method, params);
        answer.unwrap_or_else(|v| panic!("{method}: {v}"))
    }

    /// Calls `method`: its result, or the whole error answer.
    fn try_call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = &self.session {
            msg["sessionId"] = json!(session);
        }
        self.socket
            .send(Message::text(msg.to_string()))
            .expect("send to DevTools");
        loop {
            let m = self.socket.read().expect("read from DevTools");
            let Message::Text(t) = m else { continue };
            let v: Value = serde_json::from_str(t.as_str()).unwrap();
            if v["id"] == json!(id) {
                return match v.get("error") {
                    None => Ok(v["result"].clone()),
                    Some(_) => Err(v),
                };
            }
        }
    }

    /// Evaluates `expression` in the page and answers its value.
    fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true }),
        );
        r["result"]["value"].clone()
    }

    /// Whether `expression` is true in the page now. A page that navigates while it is being
    /// evaluated (a form just submitted) answers an error that means "not yet": the next
    /// evaluation runs in the new page. Any other error fails the test.
    fn holds(&mut self, expression: &str) -> bool {
        let params = json!({ "expression": expression, "returnByValue": true });
        match self.try_call("Runtime.evaluate", params) {
            Ok(r) => r["result"]["value"] == json!(true),
            Err(v) => {
                let message = v["error"]["message"].as_str().unwrap_or_default();
                assert!(
                    message.contains("navigated or closed")
                        || message.contains("context was destroyed"),
                    "Runtime.evaluate: {v}"
                );
                false
            }
        }
    }

    /// Waits until `expression` is true in the page.
    fn wait_for(&mut self, expression: &str) {
        let deadline = Instant::now() + PATIENCE;
        while !self.holds(expression) {
            assert!(
                Instant::now() < deadline,
                "never true: {expression}\npage: {}",
                self.eval("document.documentElement.outerHTML")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn open(&mut self, url: &str, ready: &str) {
        self.call("Page.navigate", json!({ "url": url }));
        self.wait_for(&format!(
            "document.readyState === 'complete' && location.href === {} && ({ready})",
            json!(url)
        ));
    }

    fn text(&mut self) -> String {
        self.eval("document.body.innerText")
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_page_in_headless_chromium() {
    let Some(binary) = chromium() else {
        if std::env::var_os("A2A_SKIP_CHROMIUM").is_some() {
            skip::skip("no Chromium at /usr/bin/chromium (or $CHROMIUM), and A2A_SKIP_CHROMIUM is set; run infra/chromium.sh to install it");
            return;
        }
        panic!("no Chromium at /usr/bin/chromium (or $CHROMIUM): run infra/chromium.sh, or set A2A_SKIP_CHROMIUM=1 to skip this test locally");
    };

    // The worked example on compressed times: four lapse tasks, all delivered.
    let (_agent, w) = worked_example_delivered(PATIENCE).await;
    // A second shipment, due tomorrow: a subject with an open deadline.
    let due = Timestamp::now() + jiff::SignedDuration::from_hours(24);
    let other = one_expectation("task-2", "exp-OTHER-1", "PA-2026-0902", due, "PT1H");
    assert_eq!(w.push(&other).await.status, 200);

    let base = w.base_url.clone();
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("web-subject.png");
    let shot_for_browser = shot.clone();
    tokio::task::spawn_blocking(move || {
        let browser = Browser::launch(&binary);
        let mut page = browser.page();
        page.call("Page.enable", json!({}));
        page.call("Network.enable", json!({}));

        // Not logged in: the form, and no record.
        page.open(&format!("{base}/ui/lapses"), "!!document.querySelector('#token')");
        let text = page.text();
        assert!(!text.contains("stalled"), "the record before logging in: {text}");

        // A wrong token is refused on the page.
        page.open(&format!("{base}/ui"), "!!document.querySelector('#token')");
        page.eval("document.querySelector('#token').value = 'wrong'; document.querySelector('form').submit(); true");
        page.wait_for("document.readyState === 'complete' && document.body.innerText.includes('not known to this watcher')");

        // Log in through the form.
        page.eval(&format!(
            "document.querySelector('#token').value = {}; document.querySelector('form').submit(); true",
            json!(OPERATOR_TOKEN)
        ));
        page.wait_for(&format!(
            "location.href === {} && document.body.innerText.includes('Log out')",
            json!(format!("{base}/ui"))
        ));
        let cookies = page.call("Network.getCookies", json!({ "urls": [format!("{base}/ui")] }));
        let cookie = cookies["cookies"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == "a2a_watcher_operator"))
            .expect("the session cookie")
            .clone();
        assert_eq!(cookie["httpOnly"], true);
        assert_eq!(cookie["sameSite"], "Strict");
        assert!(!page.eval("document.cookie").as_str().unwrap().contains("a2a_watcher_operator"), "HttpOnly: not readable by script");

        // Lapse tasks with delivery and task state.
        page.open(&format!("{base}/ui/lapses"), "!!document.querySelector('table.lapses')");
        let text = page.text();
        for needle in ["booking", "overdue", "skipped", "stalled", "sent", "exp-01J8Q0MANIFEST", "exp-01J8Q0ARRIVE"] {
            assert!(text.contains(needle), "{needle:?} missing from the lapses page:\n{text}");
        }
        assert_eq!(page.eval("document.querySelectorAll('table.lapses tr').length"), json!(5), "a header and four lapse tasks");

        // Agents' delivery health.
        page.open(&format!("{base}/ui/agents"), "!!document.querySelector('#agents')");
        assert_eq!(page.eval("document.querySelector('#agents tr:nth-child(2) td:nth-child(1)').innerText"), json!("booking"));
        assert_eq!(page.eval("document.querySelector('#agents tr:nth-child(2) td:nth-child(2)').innerText"), json!("ok"));

        // Subjects with open expectations: the second shipment, due tomorrow.
        page.open(&format!("{base}/ui/subjects"), "!!document.querySelector('#subjects')");
        let text = page.text();
        assert!(text.contains("PA-2026-0902") && text.contains("exp-OTHER-1"), "{text}");

        // The subject: its record and its timeline, with the manifest's hole.
        page.open(&format!("{base}/ui/subjects/shipment/{SHIPMENT}"), "!!document.querySelector('#timeline svg')");
        assert_eq!(page.eval("document.querySelectorAll('#timeline svg .step').length"), json!(3));
        assert_eq!(page.eval("document.querySelectorAll('#timeline svg .hole').length"), json!(1));
        for kind in ["overdue", "skipped", "stalled"] {
            assert!(
                page.eval(&format!("document.querySelectorAll('#timeline svg .lapse-{kind}').length")).as_u64() >= Some(1),
                "a {kind} marker"
            );
        }
        assert_eq!(page.eval("document.querySelectorAll('#expectations tr').length"), json!(4));
        let text = page.text();
        assert!(text.contains("shipment.departed:PA-2026-0901") && text.contains("observed"), "{text}");
        let png = page.call("Page.captureScreenshot", json!({ "format": "png" }));
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png["data"].as_str().expect("screenshot data"))
            .unwrap();
        assert!(bytes.starts_with(b"\x89PNG"), "a PNG");
        std::fs::write(&shot_for_browser, bytes).unwrap();

        // Open incidents: the four lapses, oldest first; the browser's own form post of the first
        // one's button (the session cookie, same origin) acknowledges it and comes back to three.
        page.open(&format!("{base}/ui/incidents"), "!!document.querySelector('#incidents')");
        assert_eq!(page.eval("document.querySelectorAll('#incidents tr').length"), json!(5), "a header and four incidents");
        assert_eq!(page.eval("document.querySelector('#incidents tr:nth-child(2) td:nth-child(2)').innerText"), json!("booking"));
        page.eval("document.querySelector('#incidents form').submit(); true");
        page.wait_for(&format!(
            "location.href === {} && document.querySelectorAll('#incidents tr').length === 4",
            json!(format!("{base}/ui/incidents"))
        ));

        // Log out: the cookie is gone and the record with it.
        page.eval("document.querySelector('form[action=\"/ui/logout\"]').submit(); true");
        page.wait_for("!!document.querySelector('#token')");
        page.open(&format!("{base}/ui/lapses"), "!!document.querySelector('#token')");
        // No URL the browser visited carried the token.
        let history = page.call("Page.getNavigationHistory", json!({}));
        assert!(!history.to_string().contains(OPERATOR_TOKEN), "the token in a URL: {history}");
    })
    .await
    .expect("the browser session");
    eprintln!("screenshot: {}", shot.display());
}
