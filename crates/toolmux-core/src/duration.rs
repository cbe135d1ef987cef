//! Human-written durations (`"500ms"`, `"30s"`, `"5m"`, `"1h"`, `"1d"`) as used in configuration.

use std::time::Duration;

/// A duration string that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid duration `{input}`: expected a number followed by ms, s, m, h or d (e.g. \"30s\")"
)]
pub struct DurationParseError {
    /// The text that was rejected.
    pub input: String,
}

/// Parses `"<integer><unit>"` where unit is `ms`, `s`, `m`, `h` or `d`.
pub fn parse_duration(input: &str) -> Result<Duration, DurationParseError> {
    let err = || DurationParseError {
        input: input.to_string(),
    };
    let text = input.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(err)?;
    let (digits, unit) = text.split_at(split);
    let amount: u64 = digits.parse().map_err(|_| err())?;
    let millis = match unit.trim() {
        "ms" => amount,
        "s" => amount.checked_mul(1_000).ok_or_else(err)?,
        "m" => amount.checked_mul(60_000).ok_or_else(err)?,
        "h" => amount.checked_mul(3_600_000).ok_or_else(err)?,
        "d" => amount.checked_mul(86_400_000).ok_or_else(err)?,
        _ => return Err(err()),
    };
    Ok(Duration::from_millis(millis))
}

/// Formats a duration for people, the one way every message does: `250ms`, `5s`, `1.5s`, `2m`.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1_000 {
        format!("{ms}ms")
    } else if ms.is_multiple_of(60_000) {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1_000) {
        format!("{}s", ms / 1_000)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// Serde helpers for optional durations written as whole milliseconds (`timeoutMs`).
pub(crate) mod opt_millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(value: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => s.serialize_some(&(d.as_millis() as u64)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_unit() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
    }

    #[test]
    fn rejects_missing_or_unknown_units() {
        for bad in ["30", "s", "", "3 weeks", "-1s", "1.5s"] {
            let err = parse_duration(bad).expect_err(bad);
            assert_eq!(err.input, bad);
        }
    }
}
