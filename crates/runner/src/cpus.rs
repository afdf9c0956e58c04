//! The CPUs this process may run on, and which of a given list it may not
//! (checked before anything starts, by the run's resolution and a lab's
//! hosts alike).

use std::sync::OnceLock;

use stackbench_engine::affinity::current_cpus;
use stackbench_model::units::format_cpu_list;

/// The CPUs the process was started with: later steps of a study run after
/// the main thread has been pinned to the driver's set. Empty when the
/// affinity cannot be read.
pub(crate) fn available_cpus() -> &'static [usize] {
    static AVAILABLE: OnceLock<Vec<usize>> = OnceLock::new();
    AVAILABLE.get_or_init(|| current_cpus().unwrap_or_default())
}

/// When `cpus` names CPUs this process may not run on: what is wrong
/// ("CPU 5 is not online or not allowed to this process") and the CPUs it
/// may run on; `None` when all are allowed, or the set cannot be read.
pub(crate) fn cpus_not_allowed(cpus: &[usize]) -> Option<(String, String)> {
    let available = available_cpus();
    let outside: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|c| !available.contains(c))
        .collect();
    if available.is_empty() || outside.is_empty() {
        return None;
    }
    let outside = match outside.as_slice() {
        [one] => format!("CPU {one} is"),
        many => format!("CPUs {} are", format_cpu_list(many)),
    };
    Some((
        format!("{outside} not online or not allowed to this process"),
        format_cpu_list(available),
    ))
}
