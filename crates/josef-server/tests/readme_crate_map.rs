//! The README's crate map says which crate depends on which (`a <- b`: `b` depends on `a`); this
//! checks it against every crate's `[dependencies]`, both ways: no arrow the manifests lack, no
//! dependency between library crates the README leaves out.

use std::collections::BTreeSet;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// `{a, b}` or `a` → the crate names, with the `josef-` prefix.
fn group(s: &str) -> Vec<String> {
    s.trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .split(',')
        .map(|c| format!("josef-{}", c.trim()))
        .collect()
}

/// The edges `(dependent, dependency)` of the README's arrow lines (`- \`a <- b <- c\``).
fn readme_edges(readme: &str) -> BTreeSet<(String, String)> {
    let section = readme
        .split("## Crate map")
        .nth(1)
        .expect("a Crate map section")
        .split("\n## ")
        .next()
        .unwrap();
    let mut edges = BTreeSet::new();
    for line in section.lines() {
        let Some(chain) = line
            .strip_prefix("- `")
            .and_then(|l| l.strip_suffix('`'))
            .filter(|l| l.contains("<-"))
        else {
            continue;
        };
        let parts: Vec<Vec<String>> = chain.split("<-").map(group).collect();
        for w in parts.windows(2) {
            for dependency in &w[0] {
                for dependent in &w[1] {
                    edges.insert((dependent.clone(), dependency.clone()));
                }
            }
        }
    }
    edges
}

/// The `josef-*` names in a manifest's `[dependencies]` table.
fn manifest_deps(manifest: &str) -> Vec<String> {
    let mut in_deps = false;
    let mut out = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if in_deps {
            if let Some((name, _)) = line.split_once('=') {
                let name = name.trim();
                if name.starts_with("josef-") {
                    out.push(name.to_string());
                }
            }
        }
    }
    out
}

/// The crates named in the README's "except those it does not compose yet: ..." sentence.
fn not_composed_yet(readme: &str) -> BTreeSet<String> {
    let flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let Some((_, rest)) = flat.split_once("does not compose yet:") else {
        return BTreeSet::new();
    };
    let list = rest.split(['(', '.']).next().unwrap_or("");
    list.split(|c: char| c == ',' || c == '`' || c.is_whitespace())
        .map(str::trim)
        .filter(|w| !w.is_empty() && *w != "and")
        .map(|w| format!("josef-{w}"))
        .collect()
}

#[test]
fn readme_arrows_match_the_manifests() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let claimed = readme_edges(&readme);
    assert!(claimed.len() >= 10, "arrow lines not found: {claimed:?}");
    let mut actual = BTreeSet::new();
    let mut libraries = BTreeSet::new();
    for e in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(manifest) = std::fs::read_to_string(e.path().join("Cargo.toml")) else {
            continue;
        };
        // josef-testbed is test support that runs brokers as processes: nothing composes it.
        let tool = [
            "josef-broker",
            "josef-server",
            "josef-protocol-codegen",
            "josef-testbed",
        ];
        if !tool.contains(&name.as_str()) {
            libraries.insert(name.clone());
        }
        for dep in manifest_deps(&manifest) {
            actual.insert((name.clone(), dep));
        }
    }
    // josef-server composes every library crate but those the README names as not composed yet;
    // josef-broker is the binary over josef-server alone.
    for lib in libraries.difference(&not_composed_yet(&readme)) {
        assert!(
            actual.contains(&("josef-server".to_string(), lib.clone())),
            "the README says josef-server depends on every library crate; it lacks {lib}"
        );
    }
    let broker: Vec<_> = actual
        .iter()
        .filter(|(from, _)| from == "josef-broker")
        .collect();
    assert_eq!(
        broker,
        [&("josef-broker".to_string(), "josef-server".to_string())],
        "josef-broker is to be the binary over josef-server alone"
    );
    actual.retain(|(from, _)| from != "josef-broker" && from != "josef-server");
    let missing: Vec<_> = actual.difference(&claimed).collect();
    let wrong: Vec<_> = claimed.difference(&actual).collect();
    assert!(
        missing.is_empty() && wrong.is_empty(),
        "README crate map: dependencies it leaves out {missing:?}; arrows no manifest has {wrong:?}"
    );
}

#[test]
fn the_arrow_parser_reads_groups_and_chains() {
    let e =
        readme_edges("## Crate map\n- `a <- {b, c} <- d`\n- not `x <- y`\n## Next\n- `p <- q`\n");
    let e: Vec<(&str, &str)> = e.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert_eq!(
        e,
        [
            ("josef-b", "josef-a"),
            ("josef-c", "josef-a"),
            ("josef-d", "josef-b"),
            ("josef-d", "josef-c"),
        ]
    );
}
