//! The checks of one class's record, together: the parent's own checks and
//! its children's (`population`, `ktls`, `stall`). Kept out of
//! `warnings.rs` so that the parent, which writes the [`Warning`] type every
//! child returns, imports none of the children.

use stackbench_record::ClassResult;

use super::{
    check_confidence, check_delayed_ack_stall, check_driver_behind, check_driver_saturated,
    check_generator_tail, check_ktls, check_little_law, check_rate_steadiness, check_run_length,
    check_steal, check_tls_unverified, Side, Warning,
};

/// Everything that can be judged from one class's record: run length,
/// steadiness, driver saturation, steal, unmet confidence. Run-level checks
/// (shared CPUs, background load, governors) are separate so they appear once.
/// A driver that spun (`driver_spins`) is busy by design: its saturation
/// check says so instead of blaming the load ([`Warning::DriverSpinning`]);
/// `driver_background_pct` is as for [`check_driver_saturated`].
pub fn class_warnings(
    class: &ClassResult,
    driver_threads: Option<u32>,
    driver_spins: bool,
    driver_background_pct: Option<f64>,
) -> Vec<Warning> {
    let mut out = Vec::new();
    out.extend(check_run_length(class.duration_s, class.transactions));
    out.extend(check_rate_steadiness(&class.per_second_tps));
    if let Some(cpu) = &class.cpu {
        if let Some(client) = &cpu.client {
            out.extend(
                check_driver_saturated(client, driver_threads, driver_background_pct).map(|w| {
                    match w {
                        Warning::DriverSaturated { busy_pct, .. } if driver_spins => {
                            Warning::DriverSpinning { busy_pct }
                        }
                        w => w,
                    }
                }),
            );
            out.extend(check_steal(Side::Client, client));
        }
        if let Some(server) = &cpu.server {
            out.extend(check_steal(Side::Server, server));
        }
    }
    if let Some(rep) = &class.repetitions {
        out.extend(check_confidence(rep));
    }
    out.extend(check_little_law(class));
    out.extend(check_driver_behind(class));
    out.extend(check_generator_tail(class));
    out.extend(check_ktls(class));
    out.extend(check_tls_unverified(class));
    out.extend(check_delayed_ack_stall(class));
    out
}
