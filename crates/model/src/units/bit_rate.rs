//! Link bit rates (`100Mbit`, `10Gbit`): decimal multiples, as `tc` and data
//! sheets quote them, apart from the binary byte sizes of the notation.

use super::*;

/// Bit-rate units, decimal multiples as link speeds are quoted, in bit/s.
const BIT_RATE_UNITS: &[(&str, u128)] = &[
    ("bit", 1),
    ("kbit", 1_000),
    ("Mbit", 1_000_000),
    ("Gbit", 1_000_000_000),
];

/// A link's bit rate per second, as `tc` and data sheets quote it: `bit`,
/// `kbit`, `Mbit`, `Gbit`, decimal multiples (`1Gbit` = 1000 `Mbit`), rounded
/// to a whole bit/s. Case-sensitive: `100mb` (bytes? bits?) is refused with the
/// fix. Zero is allowed; callers check the range they need.
pub fn parse_bit_rate(text: &str) -> Result<u64, UnitError> {
    let err = |problem| UnitError::new(UnitKind::BitRate, text, problem);
    let (number, unit) = split_number(text.trim());
    if number.is_empty() {
        return Err(err(Problem::MissingNumber));
    }
    let decimal = Decimal::parse(number).ok_or_else(|| err(Problem::NotANumber))?;
    if unit.is_empty() {
        return Err(err(Problem::BitRateWithoutUnit));
    }
    let &(_, mult) = BIT_RATE_UNITS
        .iter()
        .find(|(u, _)| *u == unit)
        .ok_or_else(|| err(Problem::UnknownBitRateUnit(unit.to_string())))?;
    if decimal.is_negative() {
        return Err(err(Problem::Negative(UnitKind::BitRate)));
    }
    decimal
        .to_whole(mult, 0)
        .and_then(|(bits, _)| u64::try_from(bits).ok())
        .ok_or_else(|| err(Problem::TooLarge("2^64-1 bit/s")))
}

/// Formats bit/s in the largest decimal unit that holds it exactly
/// (`100000000` → `100Mbit`, `2500000000` → `2500Mbit`), so that
/// [`parse_bit_rate`] gives it back.
pub fn format_bit_rate(bits_per_s: u64) -> String {
    for (unit, mult) in [
        ("Gbit", 1_000_000_000),
        ("Mbit", 1_000_000),
        ("kbit", 1_000),
    ] {
        if bits_per_s >= mult && bits_per_s % mult == 0 {
            return format!("{}{unit}", bits_per_s / mult);
        }
    }
    format!("{bits_per_s}bit")
}
