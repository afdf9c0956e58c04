#![no_main]
//! Fuzz target `amqp_server`: see stackbench_hostile::TARGETS.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (stackbench_hostile::target("amqp_server")
        .expect("a target")
        .run)(data)
});
