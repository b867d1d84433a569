use super::knobs::sections;
use super::render::markdown;

/// `docs/profiles.md` is the rendering of `knobs.rs`: a knob changed in the
/// code without regenerating the doc fails here.
#[test]
fn profiles_doc_is_rendered_from_the_knobs() {
    let workspace = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let path = format!("{workspace}/docs/profiles.md");
    let rendered = markdown(&sections());
    if std::env::var_os("STN_WRITE_PROFILES_DOC").is_some() {
        std::fs::write(&path, &rendered).expect("write docs/profiles.md");
        return;
    }
    if !std::path::Path::new(&format!("{workspace}/Cargo.toml")).exists() {
        // A packaged stn-proto has no workspace docs to compare with; the
        // workspace's own test run checks them.
        return;
    }
    let committed = std::fs::read_to_string(&path).expect("read docs/profiles.md");
    assert!(
        committed == rendered,
        "docs/profiles.md is stale: run STN_WRITE_PROFILES_DOC=1 cargo test -p stn-proto --lib profile::tests"
    );
}

/// Every knob renders to a non-empty cell under every profile, names a Mars
/// counterpart, and no two knobs of a section share a name.
#[test]
fn every_knob_has_values_and_a_mars_column() {
    for section in sections() {
        assert!(!section.doc.is_empty(), "{} has no doc", section.name);
        let mut names: Vec<&str> = section.knobs.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), section.knobs.len(), "{}", section.name);
        for k in &section.knobs {
            assert!(!k.mars.is_empty(), "{}.{}", section.name, k.name);
            for v in &k.values {
                assert!(
                    !v.is_empty() && !v.contains('|'),
                    "{}.{}: {v:?}",
                    section.name,
                    k.name
                );
            }
        }
    }
}
