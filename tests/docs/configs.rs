//! The configuration files the docs hand out: every whole configuration in the repository
//! (`examples/**/watcher*.toml`, `infra/aws_local/example.toml`) is read by the watcher's own
//! reader (`watcher_config::Config::load`, `from_toml` for the AWS ones) without an error, an
//! unknown key or a gap; the AWS ones hold nothing Lambda cannot read (a card from a file, a
//! credential from a file); the deploy guide shows `examples/watcher-aws.toml` as it is; and
//! every file a document hands to a command as `file://PATH` is in the repository or made by a
//! `cp` the same document shows.

use std::path::{Path, PathBuf};

use super::{documents, root};

/// The whole configurations of the repository, and whether each is for the AWS deployment.
fn configurations() -> Vec<(PathBuf, bool)> {
    let mut out = Vec::new();
    let mut stack = vec![root().join("examples")];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("a readable folder").flatten() {
            let p = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if p.is_dir() && name != "node_modules" && !name.starts_with('.') {
                stack.push(p);
            } else if name.starts_with("watcher") && name.ends_with(".toml") {
                let aws = name.contains("aws");
                out.push((p, aws));
            }
        }
    }
    out.push((root().join("infra/aws_local/example.toml"), true));
    out.sort();
    out
}

/// What is wrong with the configuration at `path`, one line each: what the reader refuses, an
/// unknown key, a gap (no agent, no operator); for the AWS deployment, a card that is neither a
/// URL nor inline JSON, and a credential read from a file.
fn problems(path: &Path, aws: bool) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("a readable configuration");
    let mut out = Vec::new();
    match watcher_config::keys::unknown_keys(&text) {
        Ok(keys) => out.extend(keys.into_iter().map(|k| format!("unknown key `{k}`"))),
        Err(e) => out.push(format!("{e}")),
    }
    let config = if aws {
        watcher_config::Config::from_toml(&text)
    } else {
        watcher_config::Config::load(path)
    };
    match config {
        Err(e) => out.push(format!("{e}")),
        Ok(c) => out.extend(c.gaps()),
    }
    if aws {
        let table: toml::Table = text.parse().unwrap_or_default();
        let agents = table.get("agents").and_then(|a| a.as_array());
        for a in agents.into_iter().flatten() {
            let id = a.get("id").and_then(|v| v.as_str()).unwrap_or("?");
            let card = a.get("card").and_then(|v| v.as_str()).unwrap_or("");
            let card = card.trim_start();
            let readable = card.starts_with("https://")
                || card.starts_with("http://")
                || card.starts_with('{');
            if !readable {
                out.push(format!(
                    "agent {id}: card {card:?} is a file, and Lambda has no files"
                ));
            }
        }
        let file_key = regex::Regex::new(r"(?m)^\s*([a-z_]+_file)\s*=").expect("regex");
        for c in file_key.captures_iter(&text) {
            out.push(format!("`{}`: Lambda has no files", &c[1]));
        }
    }
    out
}

#[test]
fn every_configuration_in_the_repository_reads_without_a_warning() {
    let configs = configurations();
    assert!(
        configs.len() >= 5,
        "the scan must find the example configurations: {configs:?}"
    );
    let mut bad = Vec::new();
    for (path, aws) in &configs {
        for p in problems(path, *aws) {
            let name = path.strip_prefix(root()).unwrap_or(path).display();
            bad.push(format!("{name}: {p}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(
        configs
            .iter()
            .any(|(p, aws)| *aws && p.ends_with("examples/watcher-aws.toml")),
        "the deploy guide's configuration, examples/watcher-aws.toml, is in the repository"
    );
}

#[test]
fn the_configuration_check_finds_what_lambda_cannot_read() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("watcher-aws.toml");
    std::fs::write(
        &path,
        "listen_on = 1\n[[agents]]\nid = \"a\"\ncard = \"card.json\"\npush_token = \"p\"\n\
         [[operators]]\nid = \"o\"\ntoken = \"t\"\n",
    )
    .expect("write");
    let found = problems(&path, true);
    assert!(
        found.iter().any(|p| p.contains("unknown key `listen_on`")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|p| p.contains("card \"card.json\" is a file")),
        "{found:?}"
    );
    std::fs::write(
        &path,
        "[[agents]]\nid = \"a\"\ncard = \"https://a.example/\"\npush_token_file = \"push.token\"\n",
    )
    .expect("write");
    let found = problems(&path, true);
    assert!(
        found.iter().any(|p| p.contains("`push_token_file`")),
        "{found:?}"
    );
    std::fs::write(&path, "[[operators]]\nid = \"o\"\ntoken = \"t\"\n").expect("write");
    assert!(
        problems(&path, false)
            .iter()
            .any(|p| p.contains("no [[agents]]")),
        "a configuration without an agent has a gap"
    );
}

/// The deploy guide's configuration is the file it tells the reader to copy.
#[test]
fn the_deploy_guide_shows_the_example_configuration_as_it_is() {
    let guide = std::fs::read_to_string(root().join("docs/howto/deploy-aws.md"))
        .expect("docs/howto/deploy-aws.md");
    let example = std::fs::read_to_string(root().join("examples/watcher-aws.toml"))
        .expect("examples/watcher-aws.toml");
    assert!(
        guide.contains(&format!("```toml\n{example}```\n")),
        "docs/howto/deploy-aws.md must show examples/watcher-aws.toml as it is, in a ```toml block"
    );
    assert!(guide.contains("cp examples/watcher-aws.toml watcher-aws.toml"));
}

/// `(line, path)` of every `file://PATH` in `text`, and the destinations of its `cp SRC DEST`
/// commands whose source is in the repository.
fn handed_files(text: &str) -> (Vec<(usize, String)>, Vec<String>) {
    let file = regex::Regex::new(r"file://([A-Za-z0-9_./-]+)").expect("regex");
    let cp = regex::Regex::new(r"(?m)^\s*cp ([A-Za-z0-9_./-]+) ([A-Za-z0-9_./-]+)").expect("regex");
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    let handed = file
        .captures_iter(text)
        .map(|c| (line_of(c.get(0).expect("match").start()), c[1].to_owned()))
        .collect();
    let made = cp
        .captures_iter(text)
        .filter(|c| root().join(&c[1]).is_file())
        .map(|c| c[2].to_owned())
        .collect();
    (handed, made)
}

#[test]
fn every_file_a_document_hands_to_a_command_is_in_the_repository() {
    let mut missing = Vec::new();
    let mut seen = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("a readable document");
        let (handed, made) = handed_files(&text);
        for (line, path) in handed {
            seen += 1;
            if !root().join(&path).is_file() && !made.contains(&path) {
                let name = doc
                    .strip_prefix(root())
                    .unwrap_or(&doc)
                    .display()
                    .to_string();
                missing.push(format!("{name}:{line}: file://{path}"));
            }
        }
    }
    assert!(
        seen >= 2,
        "the scan must find the docs' file:// paths; found {seen}"
    );
    assert!(
        missing.is_empty(),
        "files the docs hand to a command that are neither in the repository nor copied from it \
         in the same document:\n{}",
        missing.join("\n")
    );
    let (handed, made) = handed_files(
        "cp examples/watcher-aws.toml mine.toml\naws x --secret-string file://mine.toml\n\
         cp no/such.toml other.toml\n",
    );
    assert_eq!(handed, [(2, "mine.toml".to_owned())]);
    assert_eq!(made, ["mine.toml"]);
}
