//! Reading HTTP dates (`Date`, `Last-Modified`): the store's clock, in whole seconds.
//!
//! Only the IMF-fixdate form every store sends (`Wed, 02 Dec 2026 10:00:30 GMT`) is read;
//! anything else is `None`, and the readers that use a store's clock then go without it.

/// Seconds since the Unix epoch of an IMF-fixdate, or `None`.
pub(crate) fn parse(s: &str) -> Option<u64> {
    // "Wed, 02 Dec 2026 10:00:30 GMT"
    let (_weekday, rest) = s.trim().split_once(", ")?;
    let mut parts = rest.split(' ');
    let day: u64 = number(parts.next()?, 2)?;
    let month = month(parts.next()?)?;
    let year: u64 = number(parts.next()?, 4)?;
    let time = parts.next()?;
    if parts.next()? != "GMT" || parts.next().is_some() {
        return None;
    }
    let mut hms = time.split(':');
    let hour = number(hms.next()?, 2)?;
    let minute = number(hms.next()?, 2)?;
    let second = number(hms.next()?, 2)?;
    if hms.next().is_some() || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let days = days_from_civil(year, month, day)?;
    Some(days * 86_400 + hour * 3_600 + minute * 60 + second)
}

fn number(s: &str, digits: usize) -> Option<u64> {
    if s.len() != digits || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn month(s: &str) -> Option<u64> {
    const NAMES: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    NAMES.iter().position(|m| *m == s).map(|i| i as u64 + 1)
}

/// Days from 1970-01-01 to the given date of the proleptic Gregorian calendar (years from
/// 1970 on), by the usual era arithmetic.
fn days_from_civil(year: u64, month: u64, day: u64) -> Option<u64> {
    if year < 1970 {
        return None;
    }
    let y = if month <= 2 { year - 1 } else { year };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe).checked_sub(719_468)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn reads_imf_fixdates() {
        assert_eq!(parse("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(parse("Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777));
        assert_eq!(parse("Tue, 29 Feb 2028 23:59:59 GMT"), Some(1_835_481_599));
        assert_eq!(parse("Wed, 02 Dec 2026 10:00:30 GMT"), Some(1_796_205_630));
    }

    #[test]
    fn refuses_anything_else() {
        for bad in [
            "",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT extra",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }
}
