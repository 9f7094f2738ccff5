//! Writing to stderr and stdout without ever panicking: a closed pipe (`sets3lock status ... |
//! head -0`) or a vanished terminal loses the text, never the lock, the program or the exit
//! status. (`println!` would panic there: Rust ignores SIGPIPE, so the write fails instead.)

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
