//! The planner's inputs, parsed by the one grammar per unit kind that flags,
//! study files and plan files share ([`stackbench_model::units`]): durations
//! (`0.176ms`, `199.666us`, `30s`, `2m`), rates (`2/min`, `8275/s`, `1/30s`),
//! percentages (`56.88%`), populations (`8000`, `256K`), byte sizes (`4.1kB`,
//! `1.07GB`) and plain numbers.
//!
//! Every parser takes the flag name (which is also the plan-file key) so its
//! error names the input and the fix. Decimal inputs are scaled exactly, so
//! `199.666us` becomes the double nearest 0.000199666 and prints back as typed.
//! Byte multiples are binary (`kB` = 1024 B), as in the workload notation.

use stackbench_model::units::{self, UnitError};

use crate::error::PlanError;

pub use stackbench_model::units::Rate;

/// The grammar's error as the planner's: `--flag 'text': problem; fix`.
fn plan_error<'a>(flag: &'a str, text: &'a str) -> impl Fn(UnitError) -> PlanError + 'a {
    move |e| PlanError::bad(flag, text, e.problem.to_string(), e.kind.fix())
}

/// A finite number, e.g. `4`, `0.5`, `1e-4`.
pub fn parse_number(flag: &str, text: &str) -> Result<f64, PlanError> {
    units::parse_number(text).map_err(plan_error(flag, text))
}

/// A number greater than zero.
pub fn parse_positive(flag: &str, text: &str) -> Result<f64, PlanError> {
    let value = parse_number(flag, text)?;
    if value > 0.0 {
        Ok(value)
    } else {
        Err(PlanError::bad(
            flag,
            text,
            "must be greater than 0",
            "give a positive number",
        ))
    }
}

/// A whole count of at least 1 with an optional `K` (×1024) or `M` (×1024²)
/// suffix, as TN3270 capacity studies count users (`256K` = 262,144).
pub fn parse_count(flag: &str, text: &str) -> Result<u64, PlanError> {
    match units::parse_count(text).map_err(plan_error(flag, text))? {
        0 => Err(PlanError::bad(
            flag,
            text,
            "not a whole count of at least 1",
            "write e.g. 8000 or 256K (K = 1024)",
        )),
        n => Ok(n),
    }
}

/// A comma-separated list of counts, e.g. `8K,16K,32K`.
pub fn parse_count_list(flag: &str, text: &str) -> Result<Vec<u64>, PlanError> {
    text.split(',')
        .map(|part| parse_count(flag, part))
        .collect()
}

/// A duration with a unit (`ns`, `us`, `ms`, `s`, `m`/`min`, `h`), in seconds, ≥ 0.
/// A bare number is refused: `0.176` could be seconds or milliseconds.
pub fn parse_duration_s(flag: &str, text: &str) -> Result<f64, PlanError> {
    units::parse_duration_s(text).map_err(plan_error(flag, text))
}

/// A duration that must be greater than zero.
pub fn parse_positive_duration_s(flag: &str, text: &str) -> Result<f64, PlanError> {
    let value = parse_duration_s(flag, text)?;
    if value > 0.0 {
        Ok(value)
    } else {
        Err(PlanError::bad(
            flag,
            text,
            "must be greater than 0",
            "give a positive duration, e.g. 0.176ms",
        ))
    }
}

/// A rate `COUNT/INTERVAL`, where the interval is a unit (`2/min`, `8275/s`) or
/// a duration (`1/30s`).
pub fn parse_rate(flag: &str, text: &str) -> Result<Rate, PlanError> {
    units::parse_rate(text).map_err(plan_error(flag, text))
}

/// A percentage, with or without `%` (`56.88%` and `56.88` are the same).
pub fn parse_pct(flag: &str, text: &str) -> Result<f64, PlanError> {
    units::parse_pct(text).map_err(plan_error(flag, text))
}

/// A percentage in (0, 100].
pub fn parse_util_pct(flag: &str, text: &str) -> Result<f64, PlanError> {
    let value = parse_pct(flag, text)?;
    if value > 0.0 && value <= 100.0 {
        Ok(value)
    } else {
        Err(PlanError::bad(
            flag,
            text,
            "must be above 0% and at most 100%",
            "write e.g. 80%",
        ))
    }
}

/// A byte size with a binary unit (`B`, `kB`, `MB`, `GB`; decimals allowed,
/// parts of a byte too, as averages have them), ≥ 0.
pub fn parse_bytes(flag: &str, text: &str) -> Result<f64, PlanError> {
    units::parse_size_f64(text).map_err(plan_error(flag, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_scale_exactly() {
        assert_eq!(parse_duration_s("d", "199.666us").unwrap(), 0.000199666);
        assert_eq!(parse_duration_s("d", "0.176ms").unwrap(), 0.000176);
        assert_eq!(parse_duration_s("d", "0.000199666s").unwrap(), 0.000199666);
        assert_eq!(parse_duration_s("d", "1.5e-1ms").unwrap(), 0.00015);
        assert_eq!(parse_duration_s("d", "30s").unwrap(), 30.0);
        assert_eq!(parse_duration_s("d", "2min").unwrap(), 120.0);
        assert_eq!(parse_duration_s("d", "176µs").unwrap(), 0.000176);
        assert_eq!(parse_duration_s("d", "0s").unwrap(), 0.0);
        assert_eq!(parse_duration_s("think", "2m").unwrap(), 120.0);
    }

    #[test]
    fn durations_need_a_known_unit() {
        let e = parse_duration_s("cpu-per-tran", "0.176")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--cpu-per-tran '0.176': the duration has no unit"),
            "{e}"
        );
        let e = parse_duration_s("think", "3sec").unwrap_err().to_string();
        assert!(e.contains("unknown time unit 'sec'"), "{e}");
        let e = parse_duration_s("d", "-1s").unwrap_err().to_string();
        assert!(e.contains("a duration cannot be negative"), "{e}");
        assert!(parse_duration_s("d", "ms").is_err());
        assert!(parse_duration_s("d", "-1s").is_err());
        assert!(parse_positive_duration_s("d", "0ms").is_err());
    }

    #[test]
    fn rates_keep_count_and_interval() {
        let r = parse_rate("per-user", "2/min").unwrap();
        assert_eq!((r.count, r.interval_s), (2.0, 60.0));
        assert_eq!(parse_rate("rate", "8275/s").unwrap().per_s(), 8275.0);
        assert_eq!(parse_rate("rate", "1/30s").unwrap().interval_s, 30.0);
        assert_eq!(parse_rate("rate", "120/h").unwrap().per_s(), 120.0 / 3600.0);
        assert!(parse_rate("rate", "8275").is_err());
        assert!(parse_rate("rate", "8275/sec")
            .unwrap_err()
            .to_string()
            .contains("'sec'"));
        assert!(parse_rate("rate", "1/0s").is_err());
    }

    #[test]
    fn counts_take_binary_suffixes() {
        assert_eq!(parse_count("users", "8000").unwrap(), 8000);
        assert_eq!(parse_count("users", "256K").unwrap(), 262_144);
        assert_eq!(parse_count("users", "1M").unwrap(), 1_048_576);
        assert!(parse_count("users", "0").is_err());
        assert!(parse_count("users", "8k").is_err());
        assert!(parse_count("users", "1.5K").is_err());
        assert_eq!(
            parse_count_list("users", "8K,16K").unwrap(),
            vec![8192, 16384]
        );
    }

    #[test]
    fn percentages_and_sizes() {
        assert_eq!(parse_pct("cp-busy", "56.88%").unwrap(), 56.88);
        assert_eq!(parse_pct("cp-busy", "56.88").unwrap(), 56.88);
        assert!(parse_util_pct("target-util", "0%").is_err());
        assert!(parse_util_pct("target-util", "120%").is_err());
        assert_eq!(parse_bytes("b", "4kB").unwrap(), 4096.0);
        assert_eq!(parse_bytes("b", "501MB").unwrap(), 501.0 * 1_048_576.0);
        assert_eq!(parse_bytes("b", "0B").unwrap(), 0.0);
        assert!(parse_bytes("b", "4kb")
            .unwrap_err()
            .to_string()
            .contains("'kb'"));
        assert!(parse_bytes("b", "4096").is_err());
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_number("n", "1e-4").unwrap(), 1e-4);
        assert!(parse_number("n", "x").is_err());
        assert!(parse_positive("n", "0").is_err());
        assert!(parse_number("n", "inf").is_err());
    }
}
