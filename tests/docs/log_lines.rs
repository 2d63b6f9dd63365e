//! Every log line the docs quote (`# ... INFO watcher_host::deployment: agent registered
//! agent=python …`, the format `serve`'s text log prints: instant or `...`, level, target,
//! message, fields) is one the code emits: its target is a module of the workspace, and that
//! module has a `tracing` call of that level whose message reads as quoted and which names
//! every field quoted.

use std::path::{Path, PathBuf};

use super::{documents, root};

/// A log line quoted in a document.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Quoted {
    level: String,
    target: String,
    message: String,
    fields: Vec<String>,
}

/// `(line, quoted)` of every line of `text` in the log's text format, after an optional `# `:
/// an RFC 3339 instant or `...`, the level, `target:` and the message with its `key=value`
/// fields.
fn quoted(text: &str) -> Vec<(usize, Quoted)> {
    let line = regex::Regex::new(
        r"^\s*(?:#\s*)?(?:\.\.\.|\d{4}-\d\d-\d\dT[0-9:.]+Z)\s+(TRACE|DEBUG|INFO|WARN|ERROR)\s+([a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)*):\s(.*)$",
    )
    .expect("regex");
    let field = regex::Regex::new(r"(?:^|\s)([a-z_][a-z0-9_.]*)=").expect("regex");
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let Some(c) = line.captures(l) else { continue };
        let rest = &c[3];
        let at = field.find(rest).map_or(rest.len(), |m| m.start());
        out.push((
            i + 1,
            Quoted {
                level: c[1].to_owned(),
                target: c[2].to_owned(),
                message: rest[..at].trim().to_owned(),
                fields: field
                    .captures_iter(&rest[at..])
                    .map(|f| f[1].to_owned())
                    .collect(),
            },
        ));
    }
    out
}

/// The source folder of the workspace crate whose library or binary is named `krate`
/// (`a2a_watcher`: `src/`; `watcher_host`: `shared/watcher-host/src`).
fn crate_src(krate: &str) -> Option<PathBuf> {
    if krate == "a2a_watcher" {
        return Some(root().join("src"));
    }
    let name = regex::Regex::new(r#"(?m)^name\s*=\s*"([^"]+)""#).expect("regex");
    for group in ["shared", "functions"] {
        for entry in std::fs::read_dir(root().join(group)).ok()?.flatten() {
            let manifest = std::fs::read_to_string(entry.path().join("Cargo.toml"));
            let Ok(manifest) = manifest else { continue };
            let named = name
                .captures(&manifest)
                .is_some_and(|c| c[1].replace('-', "_") == krate);
            if named {
                return Some(entry.path().join("src"));
            }
        }
    }
    None
}

/// The file of module `target` (`watcher_host::serve::cards`), if the workspace has it.
fn module_file(target: &str) -> Option<PathBuf> {
    let mut parts = target.split("::");
    let src = crate_src(parts.next()?)?;
    let rest: Vec<&str> = parts.collect();
    let candidates: Vec<PathBuf> = if rest.is_empty() {
        vec![src.join("lib.rs"), src.join("main.rs")]
    } else {
        let p = rest.join("/");
        vec![src.join(format!("{p}.rs")), src.join(p).join("mod.rs")]
    };
    candidates.into_iter().find(|p| p.is_file())
}

/// The argument text of every `level!(…)` call in `source` (`info!`, `tracing::info!`).
fn calls<'a>(source: &'a str, level: &str) -> Vec<&'a str> {
    let open = format!("{}!(", level.to_lowercase());
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = source[from..].find(&open) {
        let start = from + at + open.len();
        let (mut depth, mut in_str, mut escaped, mut end) = (1, false, false, source.len());
        for (i, ch) in source[start..].char_indices() {
            match (in_str, escaped, ch) {
                (true, true, _) => escaped = false,
                (true, false, '\\') => escaped = true,
                (_, false, '"') => in_str = !in_str,
                (false, _, '(') => depth += 1,
                (false, _, ')') => {
                    depth -= 1;
                    if depth == 0 {
                        end = start + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push(&source[start..end]);
        from = end;
    }
    out
}

/// Whether `literal` (a format string as written in the source) prints `message`: each
/// `{…}` any text, `{{` and `}}` a brace.
fn prints(literal: &str, message: &str) -> bool {
    let mut pattern = String::from("^");
    let mut rest = literal.replace("\\\"", "\"");
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("{{") {
            pattern.push_str(r"\{");
            rest = r.to_owned();
        } else if let Some(r) = rest.strip_prefix("}}") {
            pattern.push_str(r"\}");
            rest = r.to_owned();
        } else if rest.starts_with('{') {
            let close = rest.find('}').map_or(rest.len(), |i| i + 1);
            pattern.push_str(".*?");
            rest = rest[close..].to_owned();
        } else {
            let ch = rest.chars().next().expect("a character");
            pattern.push_str(&regex::escape(&ch.to_string()));
            rest = rest[ch.len_utf8()..].to_owned();
        }
    }
    pattern.push('$');
    regex::Regex::new(&pattern).is_ok_and(|r| r.is_match(message))
}

/// Why `q` is not a line the code emits, if it is not.
fn not_emitted(q: &Quoted) -> Option<String> {
    let Some(file) = module_file(&q.target) else {
        return Some(format!(
            "no module {} in the workspace (the log's target is the module that logs)",
            q.target
        ));
    };
    let source = std::fs::read_to_string(&file).expect("a readable source file");
    let literal = regex::Regex::new(r#""((?:[^"\\]|\\.)*)""#).expect("regex");
    for call in calls(&source, &q.level) {
        if !literal
            .captures_iter(call)
            .any(|c| prints(&c[1], &q.message))
        {
            continue;
        }
        let missing: Vec<&String> = q
            .fields
            .iter()
            .filter(|f| {
                let name = regex::Regex::new(&format!(r"\b{}\b", regex::escape(f))).expect("regex");
                !name.is_match(call)
            })
            .collect();
        return (!missing.is_empty()).then(|| {
            format!(
                "the {} call in {} has no field {missing:?}",
                q.level,
                rel(&file)
            )
        });
    }
    Some(format!(
        "{} has no {} line reading {:?}",
        rel(&file),
        q.level,
        q.message
    ))
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

#[test]
fn every_log_line_the_docs_quote_is_one_the_code_emits() {
    let mut wrong = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("a readable document");
        for (line, q) in quoted(&text) {
            if let Some(why) = not_emitted(&q) {
                wrong.push(format!("{}:{line}: {why}", rel(&doc)));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "log lines the docs quote that the code does not print (run the command and copy \
         what it prints):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_log_line_check_reads_the_log_format_and_the_code() {
    let found = quoted(
        "```sh\ncargo run -q -- serve --config x.toml\n\
         # ... INFO watcher_host::deployment: agent registered agent=python endpoint=\"http://127.0.0.1:9998/a2a/jsonrpc\" keeps_time=false\n\
         2026-12-06T04:02:06.977933Z  INFO watcher_host::serve: a2a-watcher serving addr=127.0.0.1:8080\n```\n",
    );
    let registered = Quoted {
        level: "INFO".into(),
        target: "watcher_host::deployment".into(),
        message: "agent registered".into(),
        fields: vec!["agent".into(), "endpoint".into(), "keeps_time".into()],
    };
    let serving = Quoted {
        level: "INFO".into(),
        target: "watcher_host::serve".into(),
        message: "a2a-watcher serving".into(),
        fields: vec!["addr".into()],
    };
    assert_eq!(found, [(3, registered), (4, serving)]);
    for (_, q) in &found {
        assert_eq!(not_emitted(q), None, "{q:?}");
    }
    let moved = Quoted {
        target: "a2a_watcher::cards".into(),
        ..found[0].1.clone()
    };
    assert!(not_emitted(&moved).is_some_and(|w| w.contains("no module a2a_watcher::cards")));
    let reworded = Quoted {
        message: "the agent card was read; the agent is served".into(),
        ..found[0].1.clone()
    };
    assert!(not_emitted(&reworded).is_some());
    let other_field = Quoted {
        fields: vec!["agent".into(), "tenant_of_agent".into()],
        ..found[0].1.clone()
    };
    assert!(not_emitted(&other_field).is_some_and(|w| w.contains("tenant_of_agent")));
    let warned = Quoted {
        level: "WARN".into(),
        ..found[0].1.clone()
    };
    assert!(not_emitted(&warned).is_some());
    assert!(prints(
        "unknown key `{key}` in {origin}",
        "unknown key `x` in a.toml"
    ));
    assert!(!prints("unknown key `{key}`", "unknown keys"));
}
