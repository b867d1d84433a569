//! Helpers shared by the real-kernel lab tests (`lab.rs`, `lab_emulator.rs`).

use std::process::Command;

/// A lab prefix of its own for this test process: `short` (at most 6
/// characters) and the process id, so that two checkouts running their lab
/// tests at once cannot delete each other's namespaces (the lab deletes
/// stale namespaces of its own names when it starts).
pub(crate) fn unique_prefix(short: &str) -> String {
    // 6 + 7 digits = 13 characters, the lab's limit.
    format!("{short}{}", std::process::id() % 10_000_000)
}

/// The tests' two-worker tokio runtime.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Panics if a namespace of the lab with `prefix` is still listed by
/// `ip netns` (the lab deletes both when it ends).
pub(crate) fn assert_namespaces_gone(prefix: &str) {
    let left = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    assert!(
        !left.contains(&format!("{prefix}-cli")) && !left.contains(&format!("{prefix}-srv")),
        "lab namespaces left behind: {left}"
    );
}
