//! `cargo +nightly fuzz run push_parser`: see `watcher_runtime::fuzzing::push_parser`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| watcher_runtime::fuzzing::push_parser(data));
