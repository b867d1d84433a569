//! UniFFI's code generator, built from this workspace so that its version
//! always matches the `uniffi` the library was built with:
//!
//! ```text
//! cargo build -p stn-ffi --lib
//! cargo run -p stn-ffi --bin uniffi-bindgen -- generate --library target/debug/libstn_ffi.so \
//!     --language kotlin --out-dir target/bindings/kotlin
//! ```

fn main() {
    uniffi::uniffi_bindgen_main()
}
