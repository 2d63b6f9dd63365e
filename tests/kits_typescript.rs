//! The TypeScript agent author's kit (kits/typescript, `@a2a-watcher/kit`), the way it is used:
//!
//! - its wire types (src/models.ts) are what docs/schemas and docs/openapi.json give, and the
//!   check fails when a schema changes and the kit does not follow (node only);
//! - `tsc --strict` over the kit, its unit tests and its end-to-end test; the unit tests
//!   (`node --test`); and the end-to-end test: an agent on `@a2a-js/sdk` raises through the kit
//!   against `a2a-watcher serve`, receives its lapse tasks through the kit, and the kit's client
//!   reads what the watcher recorded (kits/typescript/e2e/serve.test.ts).
//!
//! The node_modules come from `bash infra/kit-typescript.sh` (which also packs the kit and
//! installs the tarball offline). Without node, or without those node_modules, the tests skip
//! with a message, except under `CI=true`, where they fail; `A2A_SKIP_NODE` or `A2A_SKIP_KIT_TS`
//! (set by infra/test-all.sh when it could not install them, with the reason in its summary)
//! skips them under `CI=true` too.

use crate::common::skip;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn kit() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kits/typescript")
}

/// Whether `CI=true` and nothing told the tests to skip the kit.
fn required() -> bool {
    let ci = std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    ci && std::env::var_os("A2A_SKIP_NODE").is_none()
        && std::env::var_os("A2A_SKIP_KIT_TS").is_none()
}

/// Skips (after saying why) when `missing` is `Some`; `true` when the test can go on.
///
/// # Panics
/// When something is missing and [`required`].
fn ready(missing: Option<String>) -> bool {
    let Some(why) = missing else { return true };
    assert!(!required(), "CI=true and {why}");
    skip::skip(&format!("{why} (CI=true makes this a failure)"));
    false
}

/// `node` and its major version, or why not (Node.js 20 or later is needed).
fn node_missing() -> Option<String> {
    match Command::new("node")
        .args(["-p", "process.versions.node.split('.')[0]"])
        .output()
    {
        Ok(out) if out.status.success() => {
            let major: u32 = String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse()
                .unwrap_or(0);
            (major < 20).then(|| format!("node is older than 20 (major {major})"))
        }
        _ => Some("node is not installed (Node.js 20 or later)".to_owned()),
    }
}

/// Runs `node args…` in the kit's folder with `envs`.
fn node(args: &[&str], envs: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new("node");
    cmd.args(args).current_dir(kit());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output()
        .unwrap_or_else(|e| panic!("run node {args:?}: {e}"))
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The number after `# {what} ` in node's test runner's closing lines (TAP).
fn tap_count(out: &str, what: &str) -> Option<u32> {
    out.lines()
        .rev()
        .find_map(|l| l.strip_prefix(&format!("# {what} ")))
        .and_then(|n| n.trim().parse().ok())
}

#[test]
fn the_typescript_kit_models_follow_the_schemas() {
    if !ready(node_missing()) {
        return;
    }
    let out = node(&["scripts/generate.mjs", "--check"], &[]);
    assert!(
        out.status.success(),
        "kits/typescript/src/models.ts does not follow docs/schemas: {}",
        text(&out)
    );
}

/// The check above can fail: a schema with one more member than src/models.ts has.
#[test]
fn a_schema_change_the_typescript_kit_does_not_follow_fails_the_check() {
    if !ready(node_missing()) {
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary folder");
    let schemas = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/schemas");
    for entry in std::fs::read_dir(&schemas).expect("docs/schemas") {
        let path = entry.expect("an entry").path();
        std::fs::copy(&path, dir.path().join(path.file_name().expect("a name")))
            .expect("copy a schema");
    }
    let file = dir.path().join("Expectation.json");
    let mut schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("Expectation.json"))
            .expect("JSON");
    schema["properties"]["priority"] = serde_json::json!({
        "type": "integer",
        "description": "A member the kit does not know: priority."
    });
    std::fs::write(&file, schema.to_string()).expect("write Expectation.json");

    let out = node(&["scripts/generate.mjs", "--check", "--schemas"], &[]);
    // `--schemas` needs its value: a wrong call is exit 2, saying so.
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("--schemas needs a value"),
        "{}",
        text(&out)
    );

    let dir_arg = dir.path().to_str().expect("a UTF-8 path");
    let out = node(
        &["scripts/generate.mjs", "--check", "--schemas", dir_arg],
        &[],
    );
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("does not follow the schemas"), "{said}");
    assert!(
        said.contains("priority"),
        "the first difference is the new member: {said}"
    );
    assert!(said.contains("npm run generate"), "{said}");
}

/// `tsc --strict` over the kit and its tests, the unit tests, then the end-to-end test against
/// `serve` (this crate's binary).
#[test]
fn the_typescript_kit_type_checks_passes_its_unit_tests_and_works_against_serve() {
    let modules = kit().join("node_modules");
    let missing = node_missing().or_else(|| {
        ["typescript", "@a2a-js/sdk", "express"]
            .iter()
            .find(|m| !modules.join(m).exists())
            .map(|m| {
                format!(
                    "kits/typescript/node_modules/{m} is missing; run `bash infra/kit-typescript.sh`"
                )
            })
    });
    if !ready(missing) {
        return;
    }
    let out = node(
        &[
            "node_modules/typescript/bin/tsc",
            "-p",
            "tsconfig.test.json",
        ],
        &[],
    );
    assert!(out.status.success(), "tsc --strict: {}", text(&out));

    let out = node(&["--test", "build-test/test/"], &[]);
    let said = text(&out);
    assert!(out.status.success(), "the kit's unit tests: {said}");
    assert_eq!(tap_count(&said, "fail"), Some(0), "{said}");
    assert!(tap_count(&said, "pass").is_some_and(|n| n >= 20), "{said}");

    let bin = Path::new(env!("CARGO_BIN_EXE_a2a-watcher"));
    let out = node(&["--test", "build-test/e2e/"], &[("A2A_WATCHER_BIN", bin)]);
    let said = text(&out);
    assert!(out.status.success(), "the kit against serve: {said}");
    // Both end-to-end tests ran (none skipped).
    assert_eq!(tap_count(&said, "pass"), Some(2), "{said}");
    assert_eq!(tap_count(&said, "skipped"), Some(0), "{said}");
}

/// Ready to publish (docs: kits/typescript/README.md "Publishing"): the package's version is the
/// product's, in package.json and package-lock.json alike, under the product's licence, and the
/// package ships its types as an ES module.
#[test]
fn the_typescript_kit_is_versioned_and_licensed_as_the_product() {
    let read = |name: &str| -> serde_json::Value {
        let path = kit().join(name);
        serde_json::from_str(
            &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let package = read("package.json");
    let lock = read("package-lock.json");
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(package["name"], "@a2a-watcher/kit");
    assert_eq!(package["version"], version, "package.json");
    assert_eq!(lock["version"], version, "package-lock.json");
    assert_eq!(
        lock["packages"][""]["version"], version,
        "package-lock.json"
    );
    assert_eq!(package["license"], env!("CARGO_PKG_LICENSE"));
    assert_eq!(package["type"], "module");
    assert_eq!(package["exports"]["."]["types"], "./dist/index.d.ts");
    assert_eq!(package["exports"]["."]["import"], "./dist/index.js");
    assert_eq!(package["types"], "./dist/index.d.ts");
    assert_eq!(
        package["files"],
        serde_json::json!(["dist", "README.md", "LICENSE"])
    );
    assert_eq!(package["peerDependencies"]["@a2a-js/sdk"], "^1.3.0");
    assert!(
        package.get("dependencies").is_none(),
        "the kit has no run-time dependencies: {package:#}"
    );
}
