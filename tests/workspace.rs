//! The workspace as `cargo metadata` sees it, held to what the repository says of it: the crates
//! depend on each other only down the floors `docs/architecture.md` declares ("Floors": no
//! cycle, no arrow up or sideways, every crate on a floor), and the licence the manifests declare
//! has its text in the repository.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `cargo metadata --format-version 1 --no-deps` of the workspace: its own packages, each with
/// its declared dependencies (no resolution, no network).
fn metadata() -> Value {
    // The cargo that runs the tests (`CARGO`), else the one on PATH.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

/// The workspace's packages (`packages` of [`metadata`]).
fn packages(meta: &Value) -> &Vec<Value> {
    meta["packages"].as_array().expect("packages")
}

/// The names of the workspace's crates, and its arrows `(from, to)`: a normal or build
/// dependency of one workspace crate on another. Dev-dependencies are not arrows (a crate's
/// tests may use crates above it), nor is a crate's dependency on itself.
fn graph(meta: &Value) -> (BTreeSet<String>, BTreeSet<(String, String)>) {
    let names: BTreeSet<String> = packages(meta)
        .iter()
        .map(|p| p["name"].as_str().expect("a name").to_owned())
        .collect();
    let mut arrows = BTreeSet::new();
    for p in packages(meta) {
        let from = p["name"].as_str().expect("a name");
        for d in p["dependencies"].as_array().expect("dependencies") {
            let to = d["name"].as_str().expect("a dependency's name");
            let kind = d["kind"].as_str();
            if names.contains(to) && to != from && kind != Some("dev") {
                arrows.insert((from.to_owned(), to.to_owned()));
            }
        }
    }
    (names, arrows)
}

/// The floors of `docs/architecture.md`'s "Floors" table: crate → floor (a number, 0 the
/// lowest). Each row is `| floor | what | crates |`, the crates in backticks.
///
/// # Errors
/// No table under the heading, a floor that is not a number, a crate named twice.
fn floors(doc: &str) -> Result<BTreeMap<String, u32>, String> {
    let at = doc
        .find("\n## Floors\n")
        .ok_or("no \"## Floors\" section in docs/architecture.md")?;
    let name = regex::Regex::new(r"`([^`]+)`").expect("regex");
    let mut out = BTreeMap::new();
    let rows = doc[at..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2); // the header and its rule
    for row in rows {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        let (Some(floor), Some(crates)) = (cells.first(), cells.last()) else {
            return Err(format!("a row without cells: {row}"));
        };
        let floor: u32 = floor
            .parse()
            .map_err(|_| format!("floor {floor:?} is not a number: {row}"))?;
        for c in name.captures_iter(crates) {
            if let Some(earlier) = out.insert(c[1].to_owned(), floor) {
                return Err(format!(
                    "{} is on floors {earlier} and {floor}: one floor each",
                    &c[1]
                ));
            }
        }
    }
    if out.is_empty() {
        return Err("the \"Floors\" table names no crate".into());
    }
    Ok(out)
}

/// A cycle among `arrows`, as the crates along it (the first repeated at the end), if any.
fn cycle(arrows: &BTreeSet<(String, String)>) -> Option<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in arrows {
        next.entry(from).or_default().push(to);
    }
    // Depth-first, with the path on the way down: an arrow back onto the path closes a cycle.
    fn visit<'a>(
        at: &'a str,
        next: &BTreeMap<&'a str, Vec<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| *p == at) {
            let mut c: Vec<String> = path[i..].iter().map(ToString::to_string).collect();
            c.push(at.to_owned());
            return Some(c);
        }
        if !done.insert(at) {
            return None;
        }
        path.push(at);
        for to in next.get(at).into_iter().flatten() {
            if let Some(c) = visit(to, next, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    next.keys()
        .find_map(|start| visit(start, &next, &mut Vec::new(), &mut done))
}

/// Everything wrong with the workspace's graph against the doc's floors, one line each: a crate
/// on no floor, a floor's crate that is not in the workspace, an arrow that does not point to a
/// lower floor, a cycle.
fn violations(
    crates: &BTreeSet<String>,
    arrows: &BTreeSet<(String, String)>,
    floors: &BTreeMap<String, u32>,
) -> Vec<String> {
    let mut out = Vec::new();
    for c in crates {
        if !floors.contains_key(c) {
            out.push(format!(
                "{c} is on no floor: give it a line in docs/architecture.md \"Floors\""
            ));
        }
    }
    for c in floors.keys() {
        if !crates.contains(c) {
            out.push(format!(
                "{c} is on a floor of docs/architecture.md but not in the workspace"
            ));
        }
    }
    for (from, to) in arrows {
        if let (Some(f), Some(t)) = (floors.get(from), floors.get(to)) {
            if t >= f {
                out.push(format!(
                    "{from} (floor {f}) depends on {to} (floor {t}): an arrow must point down"
                ));
            }
        }
    }
    if let Some(c) = cycle(arrows) {
        out.push(format!("a cycle: {}", c.join(" → ")));
    }
    out
}

#[test]
fn every_crate_depends_only_on_floors_below_it_as_the_architecture_page_says() {
    let doc =
        std::fs::read_to_string(root().join("docs/architecture.md")).expect("docs/architecture.md");
    let floors = floors(&doc).unwrap_or_else(|e| panic!("{e}"));
    let meta = metadata();
    let (crates, arrows) = graph(&meta);
    assert!(
        crates.len() >= 20 && arrows.len() >= 40,
        "the workspace as cargo metadata lists it: {} crates, {} arrows",
        crates.len(),
        arrows.len()
    );
    let wrong = violations(&crates, &arrows, &floors);
    assert!(
        wrong.is_empty(),
        "the crates' dependencies against docs/architecture.md \"Floors\":\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_floor_check_finds_an_arrow_up_a_cycle_and_a_crate_on_no_floor() {
    let set = |xs: &[&str]| xs.iter().map(ToString::to_string).collect::<BTreeSet<_>>();
    let arrows = |xs: &[(&str, &str)]| {
        xs.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<BTreeSet<_>>()
    };
    let doc = "# A\n\n## Floors\n\n| floor | what | crates |\n|---|---|---|\n\
               | 2 | top | `app` |\n| 1 | middle | `core`, `kit` |\n| 0 | wire | `types` |\n\n\
               After.\n";
    let f = floors(doc).expect("the table reads");
    assert_eq!(
        f,
        BTreeMap::from([
            ("app".to_owned(), 2),
            ("core".to_owned(), 1),
            ("kit".to_owned(), 1),
            ("types".to_owned(), 0),
        ])
    );
    let crates = set(&["app", "core", "kit", "types"]);
    let down = arrows(&[("app", "core"), ("core", "types"), ("kit", "types")]);
    assert_eq!(violations(&crates, &down, &f), Vec::<String>::new());

    let up = arrows(&[("app", "core"), ("types", "app")]);
    assert_eq!(
        violations(&crates, &up, &f),
        ["types (floor 0) depends on app (floor 2): an arrow must point down"]
    );
    let sideways = arrows(&[("core", "kit")]);
    assert_eq!(
        violations(&crates, &sideways, &f),
        ["core (floor 1) depends on kit (floor 1): an arrow must point down"]
    );
    let round = arrows(&[("app", "core"), ("core", "types"), ("types", "app")]);
    let wrong = violations(&crates, &round, &f);
    assert!(
        wrong.contains(&"a cycle: app → core → types → app".to_owned()),
        "{wrong:?}"
    );
    let more = set(&["app", "core", "kit", "types", "new"]);
    assert_eq!(
        violations(&more, &down, &f),
        ["new is on no floor: give it a line in docs/architecture.md \"Floors\""]
    );
    let fewer = set(&["app", "core", "types"]);
    assert_eq!(
        violations(&fewer, &down, &f),
        ["kit is on a floor of docs/architecture.md but not in the workspace"]
    );
    assert!(floors("# A\n\nNo table.\n").is_err());
    assert!(floors("\n## Floors\n\n| floor | what | crates |\n|---|---|---|\n| 1 | a | `x` |\n| 0 | b | `x` |\n").is_err());
}

/// The text each licence the manifests may declare (SPDX id) has in the repository: the first
/// line of its text, and the SHA-256 of the file as its publisher distributes it
/// (<https://www.apache.org/licenses/LICENSE-2.0.txt>).
const LICENCES: &[(&str, &str, &str)] = &[(
    "Apache-2.0",
    "Apache License",
    "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30",
)];

/// Why the licence `declared` by a crate whose manifest is at `manifest` has no text, if it has
/// none: the manifest's `license-file`, else `LICENSE` at the workspace root (or, for a crate
/// published on its own, beside its manifest) must hold the licence's full text.
fn licence_missing(
    declared: &str,
    license_file: Option<&str>,
    manifest: &Path,
    published: bool,
) -> Option<String> {
    use sha2::Digest;
    let Some((_, first, sha)) = LICENCES.iter().find(|(id, _, _)| *id == declared) else {
        return Some(format!(
            "declares {declared:?}, a licence this test does not know the text of"
        ));
    };
    let dir = manifest.parent().expect("a manifest's folder");
    let file = match (license_file, published) {
        (Some(f), _) => dir.join(f),
        (None, true) => dir.join("LICENSE"),
        (None, false) => root().join("LICENSE"),
    };
    let Ok(bytes) = std::fs::read(&file) else {
        return Some(format!(
            "declares {declared}, and {} is missing",
            file.display()
        ));
    };
    let text = String::from_utf8_lossy(&bytes);
    if text.trim_start().lines().next().map(str::trim) != Some(first) {
        return Some(format!("{} does not start with {first:?}", file.display()));
    }
    let got = hex::encode(sha2::Sha256::digest(&bytes));
    (got != *sha).then(|| {
        format!(
            "{} is not the full official text of {declared} (SHA-256 {got})",
            file.display()
        )
    })
}

#[test]
fn the_declared_licence_has_its_text() {
    let meta = metadata();
    let mut missing = Vec::new();
    for p in packages(&meta) {
        let name = p["name"].as_str().expect("a name");
        let Some(declared) = p["license"].as_str() else {
            missing.push(format!("{name} declares no licence"));
            continue;
        };
        // `publish = false` is `[]`; absent (null) or a list of registries: published.
        let published = p["publish"].as_array().is_none_or(|r| !r.is_empty());
        let manifest = Path::new(p["manifest_path"].as_str().expect("manifest_path"));
        if let Some(why) =
            licence_missing(declared, p["license_file"].as_str(), manifest, published)
        {
            missing.push(format!("{name}: {why}"));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
    // And the check itself: a missing file, a wrong text and an unknown licence are found.
    let here = root().join("Cargo.toml");
    assert!(licence_missing("Apache-2.0", Some("no-such-file"), &here, false).is_some());
    assert!(licence_missing("Apache-2.0", Some("README.md"), &here, false).is_some());
    assert!(licence_missing("MIT", None, &here, false).is_some());
    assert_eq!(licence_missing("Apache-2.0", None, &here, false), None);
}

/// Every crate of the workspace, the functions and this package included, takes the workspace's
/// lint table (`[lints] workspace = true`), and the table holds the lints the workspace relies on:
/// docs on public items, unsafe code only where a site allows it with its reason, no leftovers.
#[test]
fn every_crate_takes_the_workspace_lints() {
    let meta = metadata();
    let mut without = Vec::new();
    for p in packages(&meta) {
        let path = p["manifest_path"].as_str().expect("a manifest path");
        let text = std::fs::read_to_string(path).expect("read a manifest");
        let manifest: toml::Table = toml::from_str(&text).expect("a manifest is TOML");
        let inherits = manifest
            .get("lints")
            .and_then(|l| l.get("workspace"))
            .and_then(toml::Value::as_bool);
        if inherits != Some(true) {
            without.push(p["name"].as_str().expect("a name").to_owned());
        }
    }
    assert!(
        without.is_empty(),
        "these crates do not take the workspace's lints ([lints] workspace = true): {without:?}"
    );

    let text = std::fs::read_to_string(root().join("Cargo.toml")).expect("read Cargo.toml");
    let manifest: toml::Table = toml::from_str(&text).expect("Cargo.toml is TOML");
    let lints = &manifest["workspace"]["lints"];
    for (group, names) in [
        (
            "rust",
            &[
                "missing_docs",
                "unsafe_code",
                "rust_2018_idioms",
                "unused_qualifications",
            ][..],
        ),
        (
            "clippy",
            &[
                "dbg_macro",
                "todo",
                "allow_attributes_without_reason",
                "undocumented_unsafe_blocks",
            ][..],
        ),
    ] {
        for name in names {
            assert!(
                lints[group].get(*name).is_some(),
                "[workspace.lints.{group}] has no {name}"
            );
        }
    }
}

/// The longest a source file of the workspace may be, in lines: past it, a module does more
/// than one job and is split (a reader finds where a rule lives from the file names).
const MODULE_MAX_LINES: usize = 800;

/// The `.rs` files below `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// No module of a crate's code (`src/` of every workspace crate) is longer than
/// [`MODULE_MAX_LINES`].
#[test]
fn no_module_is_longer_than_the_limit() {
    let meta = metadata();
    let mut files = Vec::new();
    for p in packages(&meta) {
        let manifest = PathBuf::from(p["manifest_path"].as_str().expect("a manifest path"));
        let dir = manifest.parent().expect("a crate's folder").join("src");
        rust_files(&dir, &mut files);
    }
    assert!(files.len() > 100, "found only {} source files", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).ok()?.lines().count();
            (lines > MODULE_MAX_LINES).then(|| format!("{} ({lines} lines)", f.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "modules longer than {MODULE_MAX_LINES} lines (split them by job): {long:?}"
    );
}
