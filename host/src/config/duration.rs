//! Go-style durations (`1h30m0s`), as Kubernetes' flags take them.

/// Parses a Go-style duration (`1h`, `90s`, `1h30m0s`, `500ms`), as Kubernetes' flags take them.
///
/// # Errors
/// A value that is not a sequence of number+unit pairs.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let bad = || format!("invalid duration {text:?}: use e.g. 1h, 30m, 90s or 1h30m0s");
    let mut total = 0f64;
    let mut rest = text.trim();
    if rest == "0" {
        return Ok(std::time::Duration::ZERO);
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .ok_or_else(bad)?;
        let number: f64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            _ => return Err(bad()),
        };
        total += number * seconds;
        rest = &rest[unit_len..];
    }
    Ok(std::time::Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse() {
        use std::time::Duration;
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(
            parse_duration("1h30m0s").unwrap(),
            Duration::from_secs(5400)
        );
        assert_eq!(
            parse_duration("1500ms").unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert!(parse_duration("1d").is_err());
        assert!(parse_duration("h").is_err());
        assert!(parse_duration("10").is_err());
    }
}
