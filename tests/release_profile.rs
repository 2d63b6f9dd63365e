//! The release profile (`Cargo.toml`): every Lambda function binary is stripped of its symbols.
//!
//! Cargo gives a package with an override of its own (`[profile.release.package.<name>]`, here
//! `opt-level = "z"` for each function) the default `strip` again, `"debuginfo"`, whatever
//! `[profile.release]` says: the functions' binaries kept their symbol tables, about 2.9 MB of
//! the `api` binary's 15.7 MB (docs/performance.md "Lambda functions"). Each function's override
//! therefore says `strip = true` itself, and this test keeps it so.

use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The package names of the Lambda functions (`functions/*/Cargo.toml`).
fn functions() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("functions"))
        .expect("functions/")
        .filter_map(|e| {
            let manifest = e.ok()?.path().join("Cargo.toml");
            let text = std::fs::read_to_string(manifest).ok()?;
            let value: toml::Value = toml::from_str(&text).ok()?;
            Some(value.get("package")?.get("name")?.as_str()?.to_owned())
        })
        .collect();
    names.sort();
    names
}

#[test]
fn every_function_binary_is_stripped_in_release() {
    let text = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    let manifest: toml::Value = toml::from_str(&text).expect("Cargo.toml parses");
    let release = &manifest["profile"]["release"];
    assert_eq!(release.get("strip"), Some(&toml::Value::Boolean(true)));
    let functions = functions();
    assert_eq!(
        functions.len(),
        4,
        "api, lesson-write, submitter, timer: {functions:?}"
    );
    for name in &functions {
        let Some(own) = release.get("package").and_then(|p| p.get(name)) else {
            continue; // no override of its own: [profile.release]'s strip holds
        };
        assert_eq!(
            own.get("strip"),
            Some(&toml::Value::Boolean(true)),
            "[profile.release.package.{name}] must say strip = true: Cargo resets strip for a \
             package with an override of its own"
        );
    }
}
