//! Kubernetes resource quantities (`resource.Quantity`): a decimal number with an SI
//! (`k`, `M`, `m`, ...), binary (`Ki`, `Mi`, ...) or exponent (`e3`) suffix, read exactly to the
//! nano unit (finer values round up, as Kubernetes rounds them), added, compared, and written
//! back in Kubernetes' canonical form (`1000` → `1k`, `1536Mi` stays, `0.5` → `500m`); and the
//! resource names a ResourceQuota limits in them ([`names`]).
//!
//! Written here rather than taken from a crate: the crates that parse quantities either wrap
//! `k8s-openapi`'s types (a whole API version pinned at build time) or keep their parser
//! private (kube-cel's); this one has no dependencies, so the host's quota and the built-in
//! kinds' wasm strategy module share it.

pub mod names;

use std::cmp::Ordering;
use std::fmt;

/// Why a string is not a quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// Not of Kubernetes' quantity form; worded as Kubernetes words it.
    #[error("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]
    Format,
    /// A well-formed suffix Kubernetes does not know (`Zi`, `kk`).
    #[error("unable to parse quantity's suffix")]
    Suffix,
}

/// How a quantity is written: the family of its suffix, kept through arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// `k`, `M`, `G`, ... and `m`, `u`, `n` (and no suffix).
    #[default]
    DecimalSI,
    /// `Ki`, `Mi`, `Gi`, ...
    BinarySI,
    /// `e3`, `E6`.
    DecimalExponent,
}

/// Nano units in one.
const NANO: i128 = 1_000_000_000;
/// The largest magnitude kept, in nano units (about 10^36): larger quantities saturate here, far
/// beyond any quota or request a cluster holds.
const LIMIT: i128 = i128::MAX / 256;

/// A quantity: its value in nano units and the family of suffix it is written with.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quantity {
    nanos: i128,
    format: Format,
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl Quantity {
    /// The whole number `n`, written as a decimal (`1k` for a thousand).
    pub fn from_count(n: i64) -> Self {
        Self {
            nanos: i128::from(n) * NANO,
            format: Format::DecimalSI,
        }
    }

    /// Reads `s` as Kubernetes reads a quantity.
    ///
    /// # Errors
    /// [`QuantityError`] when `s` is not one.
    ///
    /// # Examples
    /// ```
    /// use strategy_host_quantity::Quantity;
    /// let q = Quantity::parse("1.5Gi").unwrap();
    /// assert_eq!(q.to_string(), "1536Mi");
    /// assert_eq!(Quantity::parse("1000").unwrap().to_string(), "1k");
    /// ```
    pub fn parse(s: &str) -> Result<Self, QuantityError> {
        let (negative, rest) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(QuantityError::Format);
        }
        let (format, scale) = suffix_scale(suffix)?;
        // The digits as one integer with the number of fraction digits it carries.
        let mut mantissa: i128 = 0;
        let mut shift: i32 = 0;
        for (i, digit) in whole.bytes().chain(fraction.bytes()).enumerate() {
            if mantissa > LIMIT / 10 {
                // Digits past what fits change nothing that is kept (but a fraction's count).
                if i >= whole.len() {
                    break;
                }
                shift -= 1;
                continue;
            }
            mantissa = mantissa * 10 + i128::from(digit - b'0');
            if i >= whole.len() {
                shift += 1;
            }
        }
        let nanos = match scale {
            Scale::Decimal(exponent) => scale_decimal(mantissa, 9 + exponent - shift),
            Scale::Binary(power) => {
                let mut value = scale_decimal(mantissa, 9 - shift);
                for _ in 0..power {
                    value = value.saturating_mul(1024).min(LIMIT);
                }
                value
            }
        };
        Ok(Self {
            nanos: if negative { -nanos } else { nanos },
            format,
        })
    }

    /// Whether it is below zero.
    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// Whether it is zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// Whether it is a whole number.
    pub fn is_integer(&self) -> bool {
        self.nanos % NANO == 0
    }

    /// Its value in thousandths, rounded up (Kubernetes' `MilliValue`), saturating.
    pub fn milli_value(&self) -> i64 {
        let milli =
            self.nanos.div_euclid(1_000_000) + i128::from(self.nanos.rem_euclid(1_000_000) != 0);
        i64::try_from(milli).unwrap_or(if milli < 0 { i64::MIN } else { i64::MAX })
    }
}

impl std::ops::Add for Quantity {
    type Output = Self;

    /// The sum, written as `self` is (saturating far beyond any real quantity).
    fn add(self, other: Self) -> Self {
        Self {
            nanos: self.nanos.saturating_add(other.nanos).clamp(-LIMIT, LIMIT),
            format: self.format,
        }
    }
}

impl std::ops::AddAssign for Quantity {
    fn add_assign(&mut self, other: Self) {
        *self = *self + other;
    }
}

impl std::ops::Sub for Quantity {
    type Output = Self;

    /// The difference, written as `self` is.
    fn sub(self, other: Self) -> Self {
        Self {
            nanos: self.nanos.saturating_sub(other.nanos).clamp(-LIMIT, LIMIT),
            format: self.format,
        }
    }
}

/// What a suffix multiplies by.
enum Scale {
    /// By 10 to this power.
    Decimal(i32),
    /// By 1024 to this power.
    Binary(u32),
}

fn suffix_scale(suffix: &str) -> Result<(Format, Scale), QuantityError> {
    let decimal = |e| Ok((Format::DecimalSI, Scale::Decimal(e)));
    let binary = |p| Ok((Format::BinarySI, Scale::Binary(p)));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        _ => {
            let Some(exponent) = suffix.strip_prefix(['e', 'E']) else {
                return Err(
                    if suffix
                        .bytes()
                        .all(|b| b"eEinumkKMGTP+-0123456789".contains(&b))
                    {
                        QuantityError::Suffix
                    } else {
                        QuantityError::Format
                    },
                );
            };
            let digits = exponent.trim_start_matches(['+', '-']);
            if digits.is_empty()
                || !digits.bytes().all(|b| b.is_ascii_digit())
                || exponent.len() - digits.len() > 1
            {
                return Err(QuantityError::Format);
            }
            let e: i32 = exponent.parse().unwrap_or(if exponent.starts_with('-') {
                -1000
            } else {
                1000
            });
            Ok((
                Format::DecimalExponent,
                Scale::Decimal(e.clamp(-1000, 1000)),
            ))
        }
    }
}

/// `mantissa` × 10^`power`, rounded up when the power drops digits, saturating at [`LIMIT`].
fn scale_decimal(mantissa: i128, power: i32) -> i128 {
    if power >= 0 {
        let mut v = mantissa;
        for _ in 0..power {
            v = v.saturating_mul(10);
            if v >= LIMIT {
                return if mantissa == 0 { 0 } else { LIMIT };
            }
        }
        v
    } else {
        let divisor = 10i128
            .checked_pow(power.unsigned_abs())
            .unwrap_or(i128::MAX);
        mantissa / divisor + i128::from(mantissa % divisor != 0)
    }
}

impl fmt::Display for Quantity {
    /// Kubernetes' canonical form: the largest suffix of the quantity's family that keeps the
    /// number whole (a fractional binary quantity is written as a decimal one).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nanos = self.nanos;
        if nanos == 0 {
            return f.write_str("0");
        }
        if self.format == Format::BinarySI && nanos % NANO == 0 {
            let mut value = nanos / NANO;
            if value.abs() >= 1024 {
                let suffixes = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
                let mut power = 0;
                while power < 6 && value % 1024 == 0 {
                    value /= 1024;
                    power += 1;
                }
                return write!(f, "{value}{}", suffixes[power]);
            }
        }
        // Decimal: the largest power of a thousand (from nano up to exa) dividing the value.
        let mut exponent: i32 = -9;
        let mut value = nanos;
        while exponent < 18 && value % 1000 == 0 {
            value /= 1000;
            exponent += 3;
        }
        if self.format == Format::DecimalExponent {
            return if exponent == 0 {
                write!(f, "{value}")
            } else {
                write!(f, "{value}e{exponent}")
            };
        }
        let suffix = match exponent {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            0 => "",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            _ => "E",
        };
        write!(f, "{value}{suffix}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn quantities_are_written_back_in_kubernetes_canonical_form() {
        for (input, canonical) in [
            ("0", "0"),
            ("1", "1"),
            ("1000", "1k"),
            ("1500", "1500"),
            ("0.5", "500m"),
            ("500m", "500m"),
            ("1000m", "1"),
            ("500Mi", "500Mi"),
            ("1024Mi", "1Gi"),
            ("1.5Gi", "1536Mi"),
            ("0.5Ki", "512"),
            ("1e3", "1e3"),
            ("1E6", "1e6"),
            ("+12", "12"),
            ("-5k", "-5k"),
            ("1n", "1n"),
            (".5", "500m"),
            ("5.", "5"),
            ("10Gi", "10Gi"),
            ("50Gi", "50Gi"),
        ] {
            assert_eq!(q(input).to_string(), canonical, "{input}");
        }
    }

    #[test]
    fn equal_values_compare_equal_across_suffixes() {
        assert_eq!(q("1Gi"), q("1024Mi"));
        assert_eq!(q("1"), q("1000m"));
        assert_eq!(q("1k"), q("1e3"));
        assert!(q("750Mi") > q("500Mi"));
        assert!(q("1Gi") > q("1G"));
        assert!(q("-1").is_negative());
        assert!(q("2").is_integer() && !q("1.5").is_integer() && !q("500m").is_integer());
        assert_eq!(q("1.5").milli_value(), 1500);
        assert_eq!(q("1n").milli_value(), 1, "rounded up");
    }

    #[test]
    fn sums_keep_the_first_quantitys_suffix_family() {
        let mut count = Quantity::from_count(999);
        count += Quantity::from_count(1);
        assert_eq!(count.to_string(), "1k");
        assert_eq!((q("1Gi") + q("512Mi")).to_string(), "1536Mi");
        assert_eq!((q("3") - q("1")).to_string(), "2");
    }

    #[test]
    fn finer_than_a_nano_rounds_up_and_huge_values_saturate() {
        assert_eq!(q("0.0000000001").to_string(), "1n");
        assert_eq!(q("1e100"), q("1e200"), "both saturate");
        assert!(q("99999999999999999999999999999999999999999999").nanos > 0);
    }

    #[test]
    fn what_is_not_a_quantity_is_refused_in_kubernetes_words() {
        for bad in [
            "", "abc", "1..2", "1.2.3", "--1", "1 Gi", "Mi", ".", "1e", "1e+-3",
        ] {
            assert_eq!(Quantity::parse(bad), Err(QuantityError::Format), "{bad:?}");
        }
        for odd in ["1Zi", "1kk", "1KB"] {
            assert!(Quantity::parse(odd).is_err(), "{odd:?}");
        }
        assert_eq!(
            QuantityError::Format.to_string(),
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        );
    }
}
