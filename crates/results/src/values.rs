//! Text forms of study-file values shared with the command line: durations
//! (`10s`, `500ms`) and Linux CPU lists (`0-3,8`), as thin wrappers over the
//! one grammar of [`stackbench_model::units`].
//!
//! Deprecated: kept until study.rs moves to the settings table; new code calls
//! `stackbench_model::units` directly.

use stackbench_model::units;

/// Parses `10s`, `1.5s`, `500ms`, `250us`, `2m` or `1h` into seconds.
pub fn parse_duration_s(text: &str) -> Option<f64> {
    units::parse_duration_s(text).ok()
}

/// Parses a Linux CPU list such as `0-3,8,10-11`, sorted and de-duplicated.
pub fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    units::parse_cpu_list(text).ok()
}

/// Formats CPUs as a Linux CPU list, collapsing runs: `[0,1,2,5]` → `0-2,5`.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    units::format_cpu_list(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration_s("10s"), Some(10.0));
        assert_eq!(parse_duration_s("500ms"), Some(0.5));
        assert_eq!(parse_duration_s("1.5s"), Some(1.5));
        assert_eq!(parse_duration_s("2m"), Some(120.0));
        assert_eq!(parse_duration_s("250us"), Some(0.00025));
        assert_eq!(parse_duration_s("10"), None);
        assert_eq!(parse_duration_s("10 sec"), None);
    }

    #[test]
    fn cpu_lists_round_trip() {
        assert_eq!(parse_cpu_list("0-3,8"), Some(vec![0, 1, 2, 3, 8]));
        assert_eq!(parse_cpu_list("8,0-3,2"), Some(vec![0, 1, 2, 3, 8]));
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("a"), None);
    }
}
