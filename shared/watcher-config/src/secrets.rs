//! Credentials kept out of the configuration file (issue 12 item 1): beside `token`,
//! `push_token`, `bearer`, `secret`, `url` (a `[[notify]]` channel's URL: Slack and Teams
//! incoming-webhook URLs are credentials), `password` (an email channel's SMTP password),
//! `routing_key` and `api_key` (a PagerDuty or Opsgenie channel's key) and `redact_key` (the key
//! of a channel's redaction hashes),
//! any table may say `<key>_file = "path"` (the file's
//! content, surrounding whitespace trimmed; a relative path is relative to the configuration's
//! folder) or `<key>_env = "NAME"` (the environment variable's value), so the TOML itself holds
//! no secret and can be committed.
//!
//! Resolution happens on the parsed TOML, before [`crate::Config`] is read, so every place that
//! takes a token takes it from a file or the environment alike.

use std::path::Path;

use toml::{Table, Value};

use crate::error::ConfigError;

/// Stops with a [`ConfigError::Secret`] worded by `format!`.
macro_rules! bail {
    ($($t:tt)*) => {
        return Err(ConfigError::Secret(format!($($t)*)))
    };
}

/// A [`ConfigError::Secret`] worded by `format!`.
macro_rules! secret {
    ($($t:tt)*) => {
        ConfigError::Secret(format!($($t)*))
    };
}

/// The keys that hold a credential.
pub const SECRET_KEYS: [&str; 9] = [
    "token",
    "push_token",
    "bearer",
    "secret",
    "url",
    "password",
    "routing_key",
    "api_key",
    "redact_key",
];

/// Replaces every `<key>_file` / `<key>_env` of [`SECRET_KEYS`] in `table` (at any depth) by
/// `<key>` with the value read. Returns whether anything was replaced.
///
/// # Errors
/// Naming the key's path (`agents[0].push_token_file`): both `<key>` and a `_file`/`_env` given,
/// an unreadable or empty file, an unset or empty variable, a value that is not a string.
pub fn resolve(table: &mut Table, base: Option<&Path>) -> Result<bool, ConfigError> {
    resolve_at(table, base, "")
}

fn resolve_at(table: &mut Table, base: Option<&Path>, at: &str) -> Result<bool, ConfigError> {
    let mut changed = false;
    for key in SECRET_KEYS {
        let file_key = format!("{key}_file");
        let env_key = format!("{key}_env");
        let from_file = table.remove(&file_key);
        let from_env = table.remove(&env_key);
        let name = |k: &str| format!("{at}{k}");
        let value = match (from_file, from_env) {
            (None, None) => continue,
            (Some(_), Some(_)) => {
                bail!("{} and {}: give only one", name(&file_key), name(&env_key))
            }
            (Some(path), None) => {
                let path = path
                    .as_str()
                    .ok_or_else(|| secret!("{}: must be a path string", name(&file_key)))?;
                let full = match base {
                    Some(b) if Path::new(path).is_relative() => b.join(path),
                    _ => Path::new(path).to_path_buf(),
                };
                let text = std::fs::read_to_string(&full).map_err(|e| {
                    secret!("{}: cannot read {}: {e}", name(&file_key), full.display())
                })?;
                let text = text.trim().to_owned();
                if text.is_empty() {
                    bail!("{}: the file {} is empty", name(&file_key), full.display());
                }
                text
            }
            (None, Some(var)) => {
                let var = var
                    .as_str()
                    .ok_or_else(|| secret!("{}: must be a variable name", name(&env_key)))?;
                let v = std::env::var(var).map_err(|_| {
                    secret!(
                        "{}: the environment variable {var} is not set",
                        name(&env_key)
                    )
                })?;
                if v.trim().is_empty() {
                    bail!(
                        "{}: the environment variable {var} is empty",
                        name(&env_key)
                    );
                }
                v.trim().to_owned()
            }
        };
        if table.contains_key(key) {
            bail!(
                "{}: give the credential once, as {key} or from a file or variable",
                name(key)
            );
        }
        table.insert(key.to_owned(), Value::String(value));
        changed = true;
    }
    for (k, v) in table.iter_mut() {
        match v {
            Value::Table(t) => changed |= resolve_at(t, base, &format!("{at}{k}."))?,
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    if let Value::Table(t) = item {
                        changed |= resolve_at(t, base, &format!("{at}{k}[{i}]."))?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        text.parse().unwrap()
    }

    /// Why resolving the secrets of `text` (no config directory) fails.
    fn refusal(text: &str) -> String {
        resolve(&mut table(text), None).unwrap_err().to_string()
    }

    #[test]
    #[allow(
        unsafe_code,
        reason = "the test sets the variable it reads; std::env::set_var is unsafe"
    )]
    fn a_file_and_a_variable_become_the_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("push.token"), "s3cret-push\n").unwrap();
        // SAFETY: no other test reads or writes this variable.
        unsafe { std::env::set_var("A2A_TEST_SECRET_SRC", "s3cret-src") };
        let mut t = table(
            r#"
[[agents]]
id = "booking"
push_token_file = "push.token"
[[sources]]
id = "feed"
token_env = "A2A_TEST_SECRET_SRC"
[sources.signature]
header = "X-Sig"
secret_env = "A2A_TEST_SECRET_SRC"
"#,
        );
        assert!(resolve(&mut t, Some(dir.path())).unwrap());
        assert_eq!(t["agents"][0]["push_token"].as_str(), Some("s3cret-push"));
        assert!(t["agents"][0].get("push_token_file").is_none());
        assert_eq!(t["sources"][0]["token"].as_str(), Some("s3cret-src"));
        assert_eq!(
            t["sources"][0]["signature"]["secret"].as_str(),
            Some("s3cret-src")
        );
    }

    #[test]
    fn refusals_name_the_key() {
        let e = refusal("[[operators]]\nid='o'\ntoken='a'\ntoken_env='A2A_TEST_UNSET_1'");
        assert!(e.contains("operators[0].token_env"), "{e}");
        let e = refusal("[[operators]]\nid='o'\ntoken_env='A2A_TEST_UNSET_2'");
        assert_eq!(
            e,
            "operators[0].token_env: the environment variable A2A_TEST_UNSET_2 is not set"
        );
        let e = refusal("[[teachers]]\nid='t'\ntoken_file='/nonexistent/a2a/token'");
        assert!(
            e.starts_with("teachers[0].token_file: cannot read /nonexistent/a2a/token"),
            "{e}"
        );
    }

    /// A notification channel's URL and secret come from a file or the environment too: a
    /// Slack or Teams incoming-webhook URL is a credential.
    #[test]
    #[allow(
        unsafe_code,
        reason = "the test sets the variable it reads; std::env::set_var is unsafe"
    )]
    fn a_notify_channels_url_and_secret_are_read_as_credentials() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notify.secret"), "whsec_abcd\n").unwrap();
        // SAFETY: no other test reads or writes this variable.
        unsafe { std::env::set_var("A2A_TEST_NOTIFY_URL", "https://hooks.slack.test/T/B/x") };
        let mut t = table(
            "[[notify]]\nid = 'ops'\nurl_env = 'A2A_TEST_NOTIFY_URL'\nsecret_file = 'notify.secret'\n",
        );
        assert!(resolve(&mut t, Some(dir.path())).unwrap());
        assert_eq!(
            t["notify"][0]["url"].as_str(),
            Some("https://hooks.slack.test/T/B/x")
        );
        assert_eq!(t["notify"][0]["secret"].as_str(), Some("whsec_abcd"));
    }

    #[test]
    fn a_file_without_secrets_is_unchanged() {
        let mut t = table("[[operators]]\nid='o'\ntoken='a'");
        assert!(!resolve(&mut t, None).unwrap());
    }
}
