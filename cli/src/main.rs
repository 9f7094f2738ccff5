//! `sets3lock`: run a program while holding a lock on S3, Azure Blob Storage or GCS
//! (setlock-compatible), plus the operator commands `status`, `watch`, `unlock`, `doctor` and
//! `completions`. The command itself is the library's [`sets3lock_cli::run`].

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(sets3lock_cli::run(std::env::args_os()))
}
