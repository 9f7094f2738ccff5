//! `sets3lock`: run a program while holding a lock on S3 (setlock-compatible), plus the
//! operator commands `status`, `unlock`, `doctor` and `completions`.

#![forbid(unsafe_code)]

#[macro_use]
mod output;

mod cli;
mod doctor;
mod exit_codes;
mod holder;
mod log;
mod options;
mod run;
mod status;
mod unlock;
mod watch;

use exit_codes::{CANNOT_LOCK, OK, USAGE};
use std::ffi::OsString;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    let args = cli::command_first(&args).unwrap_or(args);
    let first = args.get(1).map(|a| a.to_string_lossy().into_owned());
    let code = match first.as_deref() {
        Some(word) if cli::COMMANDS.contains(&word) => command(&args),
        _ => run_mode(&args),
    };
    ExitCode::from(code)
}

/// The one way out for what clap stops at: help or version (exit 0), or a usage error as one
/// line (exit 100), whether clap found it or we did.
fn usage_exit(e: clap::Error) -> u8 {
    if !e.use_stderr() {
        let _ = e.print();
        return OK;
    }
    // clap's message, up to its first blank line, on one line.
    let text = e.render().to_string();
    let message: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let message = message.join(" ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    say!("{message} (usage: {}; see --help)", cli::USAGE);
    USAGE
}

fn run_mode(args: &[OsString]) -> u8 {
    let (run, program) = match cli::parse_run(&args[1..]) {
        Ok(parsed) => parsed,
        Err(e) => return usage_exit(e),
    };
    let unavailable = if run.exit_zero { OK } else { CANNOT_LOCK };
    let options = match options::s3_options(&run.s3, run.url.scheme()) {
        Ok(o) => o,
        Err(e) => {
            say!("{e}");
            return unavailable;
        }
    };
    // One thread does it all: the lock's driver (a few requests a minute), the program's
    // supervision and the signals. A worker pool would cost more to start than the work.
    let Some(runtime) = runtime() else {
        return CANNOT_LOCK;
    };
    let code = runtime.block_on(run::run(run, options, program));
    // Whatever is still in flight (a cleanup given up on, a name lookup) is not waited for.
    runtime.shutdown_background();
    code
}

/// A runtime on this thread, with its timers and I/O; `None` (said why) if it cannot start.
pub(crate) fn runtime() -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => Some(r),
        Err(e) => {
            say!("cannot start: {e}");
            None
        }
    }
}

fn command(args: &[OsString]) -> u8 {
    use clap::Parser as _;
    let command = match cli::Command::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => return usage_exit(e),
    };
    let s3 = |flags: &cli::S3Flags, scheme: sets3lock::Scheme| {
        options::s3_options(flags, scheme).map_err(|e| {
            say!("{e}");
            CANNOT_LOCK
        })
    };
    let result = match command {
        cli::Command::Status {
            json,
            s3: flags,
            url,
        } => s3(&flags, url.scheme()).map(|o| status::status(&url, &o, json)),
        cli::Command::Watch {
            json,
            interval,
            s3: flags,
            url,
        } => s3(&flags, url.scheme()).map(|o| watch::watch(&url, o, json, interval)),
        cli::Command::Unlock {
            etag,
            s3: flags,
            url,
        } => s3(&flags, url.scheme()).map(|o| unlock::unlock(&url, &o, &etag)),
        cli::Command::Doctor {
            racers,
            s3: flags,
            url,
        } => s3(&flags, url.scheme()).map(|o| doctor::doctor(&url, &o, racers)),
        cli::Command::Completions { shell } => {
            let shell = match shell {
                cli::Shell::Bash => clap_complete::Shell::Bash,
                cli::Shell::Zsh => clap_complete::Shell::Zsh,
                cli::Shell::Fish => clap_complete::Shell::Fish,
            };
            // Generated whole, then written once: clap_complete panics on a failed write.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cli::whole(), "sets3lock", &mut script);
            let _ = std::io::Write::write_all(&mut std::io::stdout(), &script);
            Ok(OK)
        }
    };
    result.unwrap_or_else(|code| code)
}
