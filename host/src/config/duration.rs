//! Go-style durations (`1h30m0s`), as Kubernetes' flags take them.

/// Parses a Go-style duration (`1h`, `90s`, `1h30m0s`, `500ms`), as Kubernetes' flags take them.
///
/// # Errors
/// A value that is not a sequence of number+unit pairs.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    strategy_host_apimachinery::go_duration::parse(text.trim())
        .ok_or_else(|| format!("invalid duration {text:?}: use e.g. 1h, 30m, 90s or 1h30m0s"))
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
