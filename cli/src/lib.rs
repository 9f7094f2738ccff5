//! The `sets3lock` command as a library: [`run`] is the whole command, given its arguments.
//!
//! The binary's `main` calls it, and so does the Python package's `sets3lock` command: one
//! implementation, the same flags, messages and exit codes. It runs a program while holding
//! a lock (setlock-compatible), or one of the other commands: `status`, `watch`, `unlock`,
//! `acquire`, `renew`, `release`, `doctor` and `completions`.
//!
//! ```no_run
//! let code = sets3lock_cli::run(["sets3lock", "--version"].map(std::ffi::OsString::from));
//! assert_eq!(code, 0);
//! ```

// No unsafe code but `tether.rs`, which says why it needs one block.
#![deny(unsafe_code)]

#[macro_use]
mod output;

mod cli;
mod doctor;
mod exit_codes;
mod handles;
mod holder;
mod log;
mod options;
mod run;
mod status;
mod tether;
mod textfile;
mod unlock;
mod watch;

use exit_codes::{CANNOT_LOCK, OK, USAGE};
use sets3lock::proto::LockUrl;
use std::ffi::OsString;

/// Runs the command with `args` (the program's name first, as `std::env::args_os` gives
/// them) and returns its exit status: 0, the program's own status in run mode, or one of
/// the command's codes (100 usage, 111 cannot lock, 112 the lock was lost; `--help` lists
/// them). It writes to this process's stdout and stderr and, in run mode, handles SIGINT,
/// SIGTERM, SIGHUP and SIGQUIT until it returns.
pub fn run(args: impl IntoIterator<Item = OsString>) -> u8 {
    let mut args: Vec<OsString> = args.into_iter().collect();
    if args.is_empty() {
        // Not even the program's name (an exec with an empty argv): as if run bare.
        args.push("sets3lock".into());
    }
    let args = cli::command_first(&args).unwrap_or(args);
    let first = args.get(1).map(|a| a.to_string_lossy().into_owned());
    match first.as_deref() {
        Some(word) if cli::COMMANDS.contains(&word) => command(&args),
        _ => run_mode(&args),
    }
}

/// Reads a duration as the command's flags do (`30s`, `5m`, `1h30m`, `250ms`, `0`); the
/// error is the command's one-line message.
///
/// ```
/// assert_eq!(sets3lock_cli::parse_duration("1m30s"), Ok(std::time::Duration::from_secs(90)));
/// assert!(sets3lock_cli::parse_duration("soon").unwrap_err().contains("write it like 30s"));
/// ```
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    cli::duration(text)
}

/// A lock holder as the command describes it to people: "host pid N since
/// 2026-11-30T10:00:00Z (lease 60s, owner ...)", or what is known of a foreign holder.
pub fn describe_holder(holder: &sets3lock::proto::Holder) -> String {
    holder::describe(holder)
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
    let Some(url) = run.url() else {
        return USAGE;
    };
    if let Some(path) = &run.metrics_textfile {
        if let Err(e) = textfile::install(path, run.metrics_label.clone(), true) {
            say!("{e}");
            return USAGE;
        }
    }
    let code = run_mode_in(run, program, &url);
    textfile::finish(code);
    code
}

fn run_mode_in(run: cli::Run, program: Vec<OsString>, url: &LockUrl) -> u8 {
    // A configuration that cannot work is 111, with -x too (-x is for a lock held elsewhere).
    let options = match options::store_options_for(&run.store, url.scheme()) {
        Ok(o) => o,
        Err(e) => {
            say!("{e}");
            return CANNOT_LOCK;
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

/// `options` whose requests wait at most `timeout` (`--timeout` of `status`, `unlock`, `watch`).
fn within(mut options: sets3lock::Options, timeout: std::time::Duration) -> sets3lock::Options {
    options.request_timeout = timeout;
    options
}

fn command(args: &[OsString]) -> u8 {
    use clap::Parser as _;
    let command = match cli::Command::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => return usage_exit(e),
    };
    let store = |flags: &cli::StoreFlags, scheme: sets3lock::proto::Scheme| {
        options::store_options_for(flags, scheme).map_err(|e| {
            say!("{e}");
            CANNOT_LOCK
        })
    };
    let result = match command {
        cli::Command::Status {
            json,
            timeout,
            store: flags,
            url,
        } => store(&flags, url.scheme()).map(|o| status::status(&url, &within(o, timeout), json)),
        cli::Command::Watch {
            json,
            interval,
            timeout,
            metrics_textfile,
            metrics_label,
            store: flags,
            url,
        } => {
            if let Some(path) = &metrics_textfile {
                if let Err(e) = textfile::install(path, metrics_label, false) {
                    say!("{e}");
                    return USAGE;
                }
                textfile::describe_watch();
            }
            url.into_iter()
                .map(|u| store(&flags, u.scheme()).map(|o| (u, within(o, timeout))))
                .collect::<Result<Vec<_>, u8>>()
                .map(|locks| {
                    let code = watch::watch(locks, json, interval);
                    textfile::flush();
                    code
                })
        }
        cli::Command::Unlock {
            etag,
            id,
            if_stale,
            timeout,
            store: flags,
            url,
        } => {
            let which = match (etag, id) {
                (Some(etag), _) => unlock::Which::ETag(etag),
                (None, Some(id)) => unlock::Which::Id(id),
                (None, None) if if_stale => unlock::Which::Stale,
                // clap requires one of them.
                (None, None) => return crate::exit_codes::USAGE,
            };
            store(&flags, url.scheme()).map(|o| unlock::unlock(&url, &within(o, timeout), &which))
        }
        cli::Command::Acquire {
            lock,
            check,
            store: flags,
            url,
        } => store(&flags, url.scheme())
            .map(|o| handles::acquire(&url, o, &lock, check.no_store_check, check.log.verbose)),
        cli::Command::Renew {
            lease,
            check,
            store: flags,
            handle,
        } => store(&flags, handle.url.scheme())
            .map(|o| handles::renew(&handle, o, lease, check.no_store_check, check.log.verbose)),
        cli::Command::Release {
            log,
            store: flags,
            handle,
        } => store(&flags, handle.url.scheme()).map(|o| handles::release(&handle, o, log.verbose)),
        cli::Command::Doctor {
            racers,
            timeout,
            store: flags,
            url,
        } => store(&flags, url.scheme()).map(|o| doctor::doctor(&url, &o, racers, timeout)),
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
