//! `cargo +nightly fuzz run engine`: see `watcher_runtime::fuzzing::engine`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _lapses = watcher_runtime::fuzzing::engine(data);
});
