//! `sets3lock`: run a program while holding a lock on S3 (setlock-compatible), plus the
//! operator commands `status`, `unlock`, `doctor` and `completions`.

#![forbid(unsafe_code)]

/// `eprintln!` that cannot panic: if stderr is gone (a closed pipe), the message is dropped,
/// and the lock and the program are still handled.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod cli;
mod doctor;
mod exit_codes;
mod holder;
mod log;
mod options;
mod run;
mod status;
mod unlock;

use clap::{CommandFactory, Parser};
use exit_codes::{CANNOT_LOCK, OK, USAGE};
use sets3lock::LockUrl;
use std::ffi::OsString;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    let first = args.get(1).map(|a| a.to_string_lossy().into_owned());
    let code = match first.as_deref() {
        Some(word) if cli::COMMANDS.contains(&word) => command(&args),
        _ => run_mode(&args),
    };
    ExitCode::from(code)
}

/// Prints help or version (exit 0), or a usage error as one line (exit 100).
fn clap_exit(e: clap::Error) -> u8 {
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
    say!("sets3lock: {message} (usage: {}; see --help)", cli::USAGE);
    USAGE
}

fn parse_url(url: &str) -> Result<LockUrl, u8> {
    LockUrl::parse(url).map_err(|e| {
        say!("sets3lock: {e}");
        USAGE
    })
}

fn run_mode(args: &[OsString]) -> u8 {
    let (ours, program) = cli::split_program(&args[1..]);
    let mut argv = vec![OsString::from("sets3lock")];
    argv.extend(ours);
    let run = match cli::Run::try_parse_from(argv) {
        Ok(r) => r,
        Err(e) => return clap_exit(e),
    };
    let url = match parse_url(&run.url) {
        Ok(u) => u,
        Err(code) => return code,
    };
    if program.is_empty() {
        say!("sets3lock: no program to run: usage: {}", cli::USAGE);
        return USAGE;
    }
    if let Err(problem) = cli::check_timing(&run) {
        say!("sets3lock: {problem}");
        return USAGE;
    }
    if let Some(endpoint) = &run.s3.endpoint {
        if let Err(e) = sets3lock_s3::parse_endpoint(endpoint) {
            say!("sets3lock: {e}");
            return USAGE;
        }
    }
    let unavailable = if run.exit_zero { OK } else { CANNOT_LOCK };
    let options = match options::s3_options(&run.s3) {
        Ok(o) => o,
        Err(e) => {
            say!("sets3lock: {e}");
            return unavailable;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            say!("sets3lock: cannot start: {e}");
            return CANNOT_LOCK;
        }
    };
    runtime.block_on(run::run(run, url, options, program))
}

fn command(args: &[OsString]) -> u8 {
    let command = match cli::Command::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => return clap_exit(e),
    };
    let s3 = |flags: &cli::S3Flags| {
        options::s3_options(flags).map_err(|e| {
            say!("sets3lock: {e}");
            CANNOT_LOCK
        })
    };
    let result = match command {
        cli::Command::Status {
            json,
            s3: flags,
            url,
        } => parse_url(&url)
            .and_then(|url| Ok((url, s3(&flags)?)))
            .map(|(url, o)| status::status(&url, &o, json)),
        cli::Command::Unlock {
            etag,
            s3: flags,
            url,
        } => {
            let etag = match sets3lock::ETag::parse(&etag) {
                Ok(e) => e,
                Err(e) => {
                    say!("sets3lock: {e}");
                    return USAGE;
                }
            };
            parse_url(&url)
                .and_then(|url| Ok((url, s3(&flags)?)))
                .map(|(url, o)| unlock::unlock(&url, &o, &etag))
        }
        cli::Command::Doctor {
            racers,
            s3: flags,
            url,
        } => s3(&flags).map(|o| doctor::doctor(&url, &o, racers)),
        cli::Command::Completions { shell } => {
            let mut cmd = cli::Run::command();
            let shell = match shell {
                cli::Shell::Bash => clap_complete::Shell::Bash,
                cli::Shell::Zsh => clap_complete::Shell::Zsh,
                cli::Shell::Fish => clap_complete::Shell::Fish,
            };
            clap_complete::generate(shell, &mut cmd, "sets3lock", &mut std::io::stdout());
            Ok(OK)
        }
    };
    result.unwrap_or_else(|code| code)
}
