//! Exact arithmetic for the planner's whole-number results (processors
//! needed): the inputs are decimals as typed (`1M` users, `1000000/s`,
//! `0.176ms`), so their products and quotients are rationals, and a ceiling
//! taken of a rational is exact where one taken of an `f64` is not
//! (`⌈1048576 × 10⁶ × 3600⌉` came out as 3774873599996225 after the tolerance
//! that keeps 2.0000000000000004 processors at 2).
//!
//! A parsed input reaches the planner as the `f64` nearest the typed decimal
//! (see `stackbench_model::units`); the shortest decimal that round-trips to
//! that `f64` is the typed value whenever it was typed with at most 15
//! significant digits, so [`Ratio::from_f64`] recovers it exactly. Numerator
//! and denominator are `u128`, reduced after each step; an overflow gives
//! `None` and the caller falls back to floating point.

/// A non-negative rational `num / den`, reduced, `den > 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ratio {
    num: u128,
    den: u128,
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Ratio {
    /// `num / den` reduced; `None` when `den` is 0.
    pub fn new(num: u128, den: u128) -> Option<Ratio> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den).max(1);
        Some(Ratio {
            num: num / g,
            den: den / g,
        })
    }

    /// The shortest decimal that round-trips to `x`, as a rational; `None`
    /// for negative, non-finite or out-of-range values.
    pub fn from_f64(x: f64) -> Option<Ratio> {
        if !x.is_finite() || x < 0.0 {
            return None;
        }
        // `{:e}` prints the shortest round-trip digits: `1.99666e-4`.
        let text = format!("{x:e}");
        let (mantissa, exp) = text.split_once('e')?;
        let exp: i32 = exp.parse().ok()?;
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let digits: u128 = format!("{int}{frac}").parse().ok()?;
        let exp10 = exp - i32::try_from(frac.len()).ok()?;
        let pow = 10u128.checked_pow(exp10.unsigned_abs())?;
        if exp10 >= 0 {
            Ratio::new(digits.checked_mul(pow)?, 1)
        } else {
            Ratio::new(digits, pow)
        }
    }

    pub fn checked_mul(self, other: Ratio) -> Option<Ratio> {
        // Cross-reduce first so the products stay small.
        let g1 = gcd(self.num, other.den).max(1);
        let g2 = gcd(other.num, self.den).max(1);
        Ratio::new(
            (self.num / g1).checked_mul(other.num / g2)?,
            (self.den / g2).checked_mul(other.den / g1)?,
        )
    }

    pub fn checked_div(self, other: Ratio) -> Option<Ratio> {
        if other.num == 0 {
            return None;
        }
        self.checked_mul(Ratio {
            num: other.den,
            den: other.num,
        })
    }

    /// The smallest whole number at or above the value.
    pub fn ceil(self) -> u128 {
        self.num.div_ceil(self.den)
    }

    /// The value when it is a whole number.
    pub fn whole(self) -> Option<u128> {
        (self.den == 1).then_some(self.num)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_decimals_come_back_exactly() {
        assert_eq!(
            Ratio::from_f64(0.000199666),
            Ratio::new(199_666, 10u128.pow(9))
        );
        assert_eq!(Ratio::from_f64(3600.0), Ratio::new(3600, 1));
        assert_eq!(Ratio::from_f64(0.0), Ratio::new(0, 1));
        assert_eq!(Ratio::from_f64(1e20), Ratio::new(10u128.pow(20), 1));
        assert_eq!(Ratio::from_f64(-1.0), None);
        assert_eq!(Ratio::from_f64(f64::NAN), None);
    }

    #[test]
    fn products_and_ceilings_are_exact() {
        let r = |x: f64| Ratio::from_f64(x).unwrap();
        // 1M users × 10⁶ tr/s × 3600 CPU-s/tr ÷ 100% target.
        let need = r(1_048_576.0)
            .checked_mul(r(1e6))
            .and_then(|x| x.checked_mul(r(3600.0)))
            .and_then(|x| x.checked_div(r(1.0)))
            .unwrap();
        assert_eq!(need.whole(), Some(3_774_873_600_000_000));
        assert_eq!(need.ceil(), 3_774_873_600_000_000);
        // 0.1 + ... : 3 × 0.1 s ÷ 0.3 is exactly 1, not 1.0000000000000002.
        let one = r(3.0)
            .checked_mul(r(0.1))
            .and_then(|x| x.checked_div(r(0.3)))
            .unwrap();
        assert_eq!(one.ceil(), 1);
        assert_eq!(r(2.5).ceil(), 3);
        assert_eq!(r(1.0).checked_div(r(0.0)), None);
        assert_eq!(r(1e38).checked_mul(r(1e38)), None);
    }
}
