//! `cargo +nightly fuzz run time_grammar`: see `watcher_runtime::fuzzing::time_grammar`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| watcher_runtime::fuzzing::time_grammar(data));
