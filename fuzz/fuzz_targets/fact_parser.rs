//! `cargo +nightly fuzz run fact_parser`: see `watcher_runtime::fuzzing::fact_parser`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| watcher_runtime::fuzzing::fact_parser(data));
