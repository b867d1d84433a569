//! The generated bindings, run for real: Kotlin on the JVM (kotlinc, JNA)
//! and Python (pytest) against `stn serve`, plain and TLS; Swift generated
//! twice and compared with the copy checked in (no Swift toolchain here).
//!
//! ```text
//! bash .ci/ffi-setup.sh                  # kotlinc (npm), JNA (apt), pytest (pip)
//! cargo test -p stn-ffi --test bindings
//! ```

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{
    found_or_skip, generate, locate, on_path, run_and_check, scratch, tools_dir, Servers,
};

/// The Kotlin program's source, and the package of the generated bindings.
const KOTLIN_TEST: &str = "tests/kotlin/BindingsTest.kt";
const KOTLIN_MAIN: &str = "stn.test.BindingsTestKt";

/// What the JVM side needs.
struct Jvm {
    kotlinc: PathBuf,
    /// kotlinc's `lib`: the stdlib and kotlinx-coroutines it bundles.
    kotlin_lib: PathBuf,
    jna: PathBuf,
    java: PathBuf,
}

impl Jvm {
    fn find() -> Option<Jvm> {
        let npm = tools_dir().join("node_modules/kotlin-compiler/bin/kotlinc");
        let kotlinc = found_or_skip(
            "kotlin",
            "kotlinc",
            locate("KOTLINC", &[npm]).or_else(|| on_path("kotlinc")),
        )?;
        let kotlin_lib = kotlinc.parent()?.parent()?.join("lib");
        let coroutines = kotlin_lib.join("kotlinx-coroutines-core-jvm.jar");
        found_or_skip(
            "kotlin",
            "kotlinx-coroutines beside kotlinc",
            Some(()).filter(|()| coroutines.is_file()),
        )?;
        let jna = found_or_skip(
            "kotlin",
            "JNA (jna.jar)",
            locate("JNA_JAR", &["/usr/share/java/jna.jar".into()]),
        )?;
        let java = found_or_skip("kotlin", "java", on_path("java"))?;
        Some(Jvm {
            kotlinc,
            kotlin_lib,
            jna,
            java,
        })
    }

    fn classpath(&self, extra: &[&Path]) -> String {
        let mut parts: Vec<PathBuf> = extra.iter().map(|p| p.to_path_buf()).collect();
        parts.push(self.jna.clone());
        parts.push(self.kotlin_lib.join("kotlinx-coroutines-core-jvm.jar"));
        parts.push(self.kotlin_lib.join("kotlin-stdlib.jar"));
        std::env::join_paths(parts)
            .expect("a classpath")
            .into_string()
            .expect("a UTF-8 classpath")
    }

    fn kotlinc(&self, classpath: &str, out: &Path, sources: &[PathBuf]) {
        let status = Command::new(&self.kotlinc)
            .args(["-nowarn", "-classpath", classpath, "-d"])
            .arg(out)
            .args(sources)
            .status()
            .expect("run kotlinc");
        assert!(status.success(), "kotlinc failed on {sources:?}");
    }
}

/// The bindings' jar: compiled once per distinct generated source (the
/// 9,000 generated lines take kotlinc most of a minute), kept in `cache`.
fn bindings_jar(jvm: &Jvm, generated: &Path, cache: &Path) -> PathBuf {
    let source = std::fs::read(generated).expect("the generated Kotlin");
    let jar = cache.join("stn-ffi-bindings.jar");
    let stamp = cache.join("stn_ffi.kt");
    if jar.is_file() && std::fs::read(&stamp).is_ok_and(|old| old == source) {
        return jar;
    }
    std::fs::create_dir_all(cache).expect("the jar cache");
    let _ = std::fs::remove_file(&stamp);
    jvm.kotlinc(&jvm.classpath(&[]), &jar, &[generated.to_path_buf()]);
    std::fs::write(&stamp, &source).expect("stamp the jar");
    jar
}

#[test]
fn kotlin_on_the_jvm() {
    let Some(jvm) = Jvm::find() else { return };
    let dir = scratch("kotlin");
    generate("kotlin", &dir.join("gen"));
    let generated = dir.join("gen/stn/stn_ffi.kt");
    let bindings = bindings_jar(
        &jvm,
        &generated,
        &support::target_dir().join("ffi-tests/kotlin-jar"),
    );
    let test_jar = dir.join("bindings-test.jar");
    jvm.kotlinc(
        &jvm.classpath(&[&bindings]),
        &test_jar,
        &[Path::new(env!("CARGO_MANIFEST_DIR")).join(KOTLIN_TEST)],
    );
    let servers = Servers::start(&dir);
    let library_dir = support::cdylib()
        .parent()
        .expect("the library's directory")
        .to_path_buf();
    let mut java = Command::new(&jvm.java);
    java.arg(format!("-Djna.library.path={}", library_dir.display()))
        .arg("-cp")
        .arg(jvm.classpath(&[&test_jar, &bindings]))
        .arg(KOTLIN_MAIN)
        .envs(servers.env());
    run_and_check("the Kotlin test program", &mut java, " passed, 0 failed");
}

#[test]
fn python_with_pytest() {
    let venv = tools_dir().join("venv/bin/python");
    let python = locate("STN_FFI_PYTHON", &[venv]).or_else(|| on_path("python3"));
    let python = python.filter(|p| {
        Command::new(p)
            .args(["-c", "import pytest"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(python) = found_or_skip("python", "a Python with pytest", python) else {
        return;
    };
    let dir = scratch("python");
    let generated = dir.join("gen");
    generate("python", &generated);
    // The module loads the library from its own directory.
    let library = support::cdylib();
    std::fs::copy(
        &library,
        generated.join(library.file_name().expect("a file name")),
    )
    .expect("copy the library");
    let servers = Servers::start(&dir);
    let mut pytest = Command::new(python);
    pytest
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python"))
        .env("PYTHONPATH", &generated)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .envs(servers.env());
    run_and_check("pytest", &mut pytest, " passed");
}

/// The Swift files generation writes, and where their reviewed copy lives.
const SWIFT_FILES: [&str; 3] = ["StnFFI.swift", "StnFFIFFI.h", "StnFFIFFI.modulemap"];
const SWIFT_CHECKED_IN: &str = "bindings/swift";

#[test]
fn swift_generation_is_stable() {
    let dir = scratch("swift");
    let (first, second) = (dir.join("first"), dir.join("second"));
    generate("swift", &first);
    generate("swift", &second);
    let checked_in = Path::new(env!("CARGO_MANIFEST_DIR")).join(SWIFT_CHECKED_IN);
    let bless = std::env::var_os("STN_FFI_BLESS").is_some();
    for name in SWIFT_FILES {
        let a = std::fs::read_to_string(first.join(name))
            .unwrap_or_else(|e| panic!("{name} generated: {e}"));
        let b = std::fs::read_to_string(second.join(name)).expect("generated twice");
        assert_eq!(a, b, "{name}: two generations from one library differ");
        if bless {
            std::fs::create_dir_all(&checked_in).expect("the Swift directory");
            std::fs::write(checked_in.join(name), &a).expect("write the Swift copy");
            continue;
        }
        let kept = std::fs::read_to_string(checked_in.join(name)).unwrap_or_default();
        assert!(
            kept == a,
            "stn-ffi/{SWIFT_CHECKED_IN}/{name} differs from what this library generates: \
             after changing the API, run `STN_FFI_BLESS=1 cargo test -p stn-ffi --test bindings swift` \
             and review the diff"
        );
    }
}
