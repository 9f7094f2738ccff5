//! Writing to stderr and stdout without ever panicking: a closed pipe (`sets3lock status ... |
//! head -0`) or a vanished terminal loses the text, never the lock, the program or the exit
//! status. (`println!` would panic there: Rust ignores SIGPIPE, so the write fails instead.)
//! And how a duration reads in those lines.

use std::time::Duration;

/// One line on stderr, after the `sets3lock: ` prefix.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "sets3lock: {}", format_args!($($arg)*));
    }};
}

/// One line on stdout: an answer (`status`, `unlock`, `doctor`).
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// A duration as people write it, rounded down to what matters: `38.8s`, `2.58s`, `250ms`,
/// `5m`, `1h30m`.
pub(crate) fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        return "0s".into();
    }
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs = d.as_secs();
    if d.subsec_millis() == 0 && secs >= 60 {
        let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
        let mut out = String::new();
        for (n, unit) in [(h, "h"), (m, "m"), (s, "s")] {
            if n > 0 {
                out.push_str(&format!("{n}{unit}"));
            }
        }
        return out;
    }
    // Two decimals, rounded down (an upper bound stays an upper bound), zeros trimmed.
    let hundredths = ms / 10;
    let text = format!("{}.{:02}", hundredths / 100, hundredths % 100);
    format!("{}s", text.trim_end_matches('0').trim_end_matches('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_as_people_write_them() {
        assert_eq!(human(Duration::from_millis(38_800)), "38.8s");
        assert_eq!(human(Duration::from_nanos(2_587_458_746)), "2.58s");
        assert_eq!(human(Duration::from_nanos(1_940_594_059)), "1.94s");
        assert_eq!(human(Duration::from_secs(10)), "10s");
        assert_eq!(human(Duration::from_millis(250)), "250ms");
        assert_eq!(human(Duration::from_secs(5400)), "1h30m");
        assert_eq!(human(Duration::from_secs(90)), "1m30s");
        assert_eq!(human(Duration::ZERO), "0s");
    }
}
