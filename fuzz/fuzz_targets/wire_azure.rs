#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| sets3lock_fuzz::wire_azure(data));
