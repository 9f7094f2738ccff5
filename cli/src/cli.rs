//! The command line: run mode (`sets3lock [-nNxX] [options] URL program ...`, the URL
//! `s3://bucket/key`, `az://container/key` or `gs://bucket/key`)
//! and the operator commands. Arguments are parsed into typed values here, so that every
//! usage error is a clap error; `main` dispatches.

use crate::doctor::ProbeUrl;
use crate::output::human;
use clap::error::ErrorKind;
use clap::{Args, CommandFactory, Parser, ValueEnum};
use sets3lock::proto::{ETag, LockUrl};
use std::ffi::OsString;
use std::time::Duration;
use url::Url;

pub(crate) const USAGE: &str =
    "sets3lock [-nNxX] [options] s3://bucket/key|az://container/key|gs://bucket/key program [args...]";

/// The default lease.
pub(crate) const LEASE: Duration = Duration::from_secs(60);

const EXAMPLES: &str = "\
Examples:
  sets3lock s3://my-bucket/locks/backup ./backup.sh        wait for the lock, run, release
  sets3lock -n s3://my-bucket/locks/cron make report       give up at once if it is held
  sets3lock az://my-container/locks/deploy ./deploy.sh     Azure Blob Storage
  sets3lock gs://my-bucket/locks/report ./report.sh        Google Cloud Storage
  sets3lock --timeout 5m --lease 2m s3://b/deploy -- ./deploy --prod
  sets3lock --fenced s3://b/locks/db ./migrate.sh          hand $SETS3LOCK_TOKEN to the database
  sets3lock --slots 3 s3://b/deploys ./deploy.sh           at most 3 at once ($SETS3LOCK_SLOT)
  sets3lock status s3://my-bucket/locks/backup             who holds it (exit 0 free, 1 held)
  sets3lock watch --json s3://my-bucket/locks/leader       the holder, then every change
  sets3lock unlock s3://my-bucket/locks/backup --etag ETAG  delete only the lock you saw
  sets3lock unlock s3://state/prod.tfstate.tflock --id ID  Terraform's force-unlock, without its race
  sets3lock doctor s3://my-bucket/sets3lock-probe/          can this store protect a lock?
  sets3lock -n --hold-at-least 1h s3://b/locks/hourly ./job  at most one run an hour, any host
  H=$(sets3lock acquire --lease 30m s3://b/deploy)          hold it across steps: print a handle
  sets3lock --handle \"$H\" ./step.sh                          a step under the held lock
  sets3lock renew \"$H\"; sets3lock release \"$H\"               renew it once; release it

Exit status: the program's own; 128+N if it died of signal N; 100 usage error; 111 the lock
could not be had, the program could not start, or the store failed or refused the release
(0 with -x when the lock is held elsewhere); 112 the lock was lost or expired while the
program ran (it was sent SIGTERM, then SIGKILL after --kill-after), or the hold a handle names
has ended.

Environment, read for the URL's store only; credentials are found as each cloud's own tools
find them (-v and doctor say which source signs):
  s3://  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, else the profile
         (AWS_PROFILE: keys, role_arn, SSO, credential_process), web identity
         (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN), the container endpoint
         (AWS_CONTAINER_CREDENTIALS_*), EC2 instance metadata (AWS_EC2_METADATA_DISABLED);
         AWS_REGION, AWS_ENDPOINT_URL(_S3), AWS_CA_BUNDLE
  az://  AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY,
         AZURE_STORAGE_SAS_TOKEN, or Entra ID (AZURE_CLIENT_ID, AZURE_TENANT_ID,
         AZURE_CLIENT_SECRET or AZURE_FEDERATED_TOKEN_FILE; managed identity; `az login`)
  gs://  GOOGLE_OAUTH_ACCESS_TOKEN, GOOGLE_APPLICATION_CREDENTIALS, gcloud's
         application-default login, the metadata server (GCE_METADATA_HOST);
         STORAGE_EMULATOR_HOST
  any    SETS3LOCK_CA_BUNDLE (a PEM file of the CA certificates to trust)
The program gets SETS3LOCK_URL, SETS3LOCK_OWNER, SETS3LOCK_ETAG, in fenced mode SETS3LOCK_TOKEN
(larger with every grant of the lock), with --slots SETS3LOCK_SLOT (which slot, from 0), and in
Terraform's format (a key ending in .tflock) SETS3LOCK_TERRAFORM_ID (Terraform's lock ID).

Before its first lock on an endpoint and bucket (or container) each day, sets3lock checks that
the store honours conditional writes (five requests on a throw-away key beside the lock's), and
refuses a store that ignores them; the verdict is kept in $XDG_CACHE_HOME/sets3lock (or
~/.cache/sets3lock).";

/// Run a program while holding a lock on S3, Azure Blob Storage or Google Cloud Storage.
#[derive(Parser, Debug)]
#[command(name = "sets3lock", version, override_usage = USAGE, after_help = EXAMPLES)]
pub(crate) struct Run {
    /// Exit 0 if the lock is held elsewhere (busy, or the wait ran out); any other failure
    /// is still 111.
    #[arg(short = 'x', overrides_with = "fail")]
    pub(crate) exit_zero: bool,
    /// Exit 111 if the lock cannot be had (default).
    #[arg(short = 'X', overrides_with = "exit_zero")]
    pub(crate) fail: bool,
    #[command(flatten)]
    pub(crate) lock: LockFlags,
    /// At most one run per this much time on this key, from any host: a run that ends sooner
    /// leaves the lock resting until then (the lock object says so), and `-n` runs or waiters
    /// started meanwhile do not get it; a run after that gets it at once.
    #[arg(long, value_parser = duration, value_name = "DURATION", conflicts_with_all = ["handle", "slots"])]
    pub(crate) hold_at_least: Option<Duration>,
    /// Run under the hold this handle names (from `sets3lock acquire`), renewing it while
    /// the program runs; no URL then. Exit 112 if the hold has ended.
    #[arg(long, value_name = "HANDLE", value_parser = handle, conflicts_with_all = ["url", "slots", "fenced", "no_wait", "timeout"])]
    pub(crate) handle: Option<sets3lock::proto::Handle>,
    /// With --handle: keep the lock held when the program ends (its lease running, nobody
    /// renewing it), instead of releasing it.
    #[arg(long, requires = "handle")]
    pub(crate) keep: bool,
    /// After the lock is lost: how long the program has between SIGTERM and SIGKILL
    /// (default 10s, or less to fit a short lease).
    #[arg(long, value_parser = duration, value_name = "DURATION", allow_hyphen_values = true)]
    pub(crate) kill_after: Option<Duration>,
    /// A semaphore: run while holding one of N slots (the locks URL/slot-0 .. URL/slot-N-1),
    /// so that at most N programs run at once; the program gets SETS3LOCK_SLOT. Everyone
    /// using the name must give the same N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(sets3lock::MAX_SLOTS)))]
    pub(crate) slots: Option<u32>,
    #[command(flatten)]
    pub(crate) check: CheckFlags,
    /// No messages while waiting.
    #[arg(short, long)]
    pub(crate) quiet: bool,
    /// Write the lock's and the job's metrics to this file in the Prometheus text format
    /// (for node_exporter's textfile collector), replaced whole at the start, at each change
    /// of the lock's state and at exit.
    #[arg(long, value_name = "PATH")]
    pub(crate) metrics_textfile: Option<std::path::PathBuf>,
    /// A label for every metric in the textfile, name=value (repeatable): job=nightly.
    #[arg(long, value_name = "NAME=VALUE", value_parser = crate::textfile::label, requires = "metrics_textfile")]
    pub(crate) metrics_label: Vec<(String, String)>,
    #[command(flatten)]
    pub(crate) store: StoreFlags,
    /// The lock: s3://bucket/key, az://container/key or gs://bucket/key.
    #[arg(value_parser = LockUrl::parse, required_unless_present = "handle")]
    pub(crate) url: Option<LockUrl>,
}

/// How to wait for the lock and what to hold it with: run mode's flags and `acquire`'s, each
/// defined once.
#[derive(Args, Debug)]
pub(crate) struct LockFlags {
    /// Don't wait: if the lock is held, give up at once (exit 111; run mode's -x makes it 0).
    #[arg(short = 'n', overrides_with = "wait")]
    pub(crate) no_wait: bool,
    /// Wait for the lock (default).
    #[arg(short = 'N', overrides_with = "no_wait")]
    pub(crate) wait: bool,
    /// Wait at most this long (30s, 5m, 1h30m).
    #[arg(long, value_parser = duration, value_name = "DURATION", allow_hyphen_values = true)]
    pub(crate) timeout: Option<Duration>,
    /// The lease: the lock is held this long after each renewal (run mode renews it every
    /// third of it while the program runs); 0 never expires. Default 60s, or with --handle
    /// the handle's.
    #[arg(long, value_parser = duration, value_name = "DURATION", allow_hyphen_values = true)]
    pub(crate) lease: Option<Duration>,
    /// Fenced mode: the lock object is never deleted, and each grant carries a token larger
    /// than every earlier one (the program gets it as SETS3LOCK_TOKEN; a handle carries it).
    /// Needs no conditional DELETE. A key that is already fenced is used fenced without this
    /// flag.
    #[arg(long)]
    pub(crate) fenced: bool,
    /// A value for the lock record that `watch` and `status` show (at most 256 bytes): a
    /// leader's address or name, for example.
    #[arg(long, value_name = "TEXT")]
    pub(crate) value: Option<String>,
    /// While waiting: the longest pause between checks of the lock (pauses are drawn
    /// between 100ms and this). Longer means fewer requests and a slower hand-off: about
    /// 2,300 GETs an hour with the default, 700 with 10s.
    #[arg(long, value_parser = duration, default_value = "3s", value_name = "DURATION", allow_hyphen_values = true)]
    pub(crate) poll_max: Duration,
    /// The lock record's format: `terraform` writes Terraform's and OpenTofu's lock info too
    /// (so they name this holder when they refuse, and wait for it with -lock-timeout; the
    /// program gets SETS3LOCK_TERRAFORM_ID), `sets3lock` its own alone, `auto` Terraform's for
    /// a key ending in .tflock. Terraform's needs a lease and no --fenced.
    #[arg(long, value_name = "FORMAT", default_value = "auto")]
    pub(crate) lock_format: sets3lock::LockFormat,
    /// Take over a lock Terraform or OpenTofu wrote once it has stayed unchanged this long.
    /// They declare no lease, and an apply can run for hours: taking the lock from a live
    /// apply lets two runs write one state. Off by default; prefer `sets3lock unlock --id`
    /// once you know the run is gone.
    #[arg(long, value_parser = duration, value_name = "DURATION")]
    pub(crate) terraform_lease: Option<Duration>,
}

/// The store check and the log: every command that takes, continues or releases a hold.
#[derive(Args, Debug)]
pub(crate) struct CheckFlags {
    /// Skip the check that the store honours conditional writes.
    #[arg(long)]
    pub(crate) no_store_check: bool,
    #[command(flatten)]
    pub(crate) log: Verbose,
}

/// The log of requests and decisions.
#[derive(Args, Debug)]
pub(crate) struct Verbose {
    /// Log every request, reply and decision to stderr.
    #[arg(short, long)]
    pub(crate) verbose: bool,
}

/// Where the store is and who we are there.
#[derive(Args, Debug, Clone)]
pub(crate) struct StoreFlags {
    /// The store's endpoint: an S3-compatible store's for s3:// URLs (or AWS_ENDPOINT_URL_S3
    /// / AWS_ENDPOINT_URL), a blob endpoint for az:// URLs, a GCS one for gs:// URLs (or
    /// STORAGE_EMULATOR_HOST).
    #[arg(long, value_name = "URL", value_parser = sets3lock::parse_endpoint)]
    pub(crate) endpoint: Option<Url>,
    /// s3://: the region to sign for (or AWS_REGION; default us-east-1).
    #[arg(long)]
    pub(crate) region: Option<String>,
    /// s3://: path-style addressing (the default when an endpoint is given).
    #[arg(long)]
    pub(crate) path_style: bool,
    /// s3://: the profile in ~/.aws/credentials and ~/.aws/config (or AWS_PROFILE).
    #[arg(long)]
    pub(crate) profile: Option<String>,
}

/// Operator commands.
#[derive(Parser, Debug)]
#[command(name = "sets3lock", version)]
pub(crate) enum Command {
    /// Who holds a lock: exit 0 when free, 1 when held, 111 on error.
    Status {
        /// Print the record as JSON.
        #[arg(long)]
        json: bool,
        /// Give up (exit 111) if the store has not answered within this long.
        #[arg(long, value_parser = duration, default_value = "20s", value_name = "DURATION")]
        timeout: Duration,
        #[command(flatten)]
        store: StoreFlags,
        /// The lock: s3://bucket/key, az://container/key or gs://bucket/key.
        #[arg(value_parser = LockUrl::parse)]
        url: LockUrl,
    },
    /// Watch a lock: print the holder now, then one line per change (a new holder, freed,
    /// stale), until interrupted (exit 0). An unreachable store is retried; a refusal (no
    /// such bucket, access denied) exits 111.
    Watch {
        /// One JSON object per line: at, url, state (free, held, stale, released, unreachable
        /// with error, readable), etag, holder, owner, host, pid, since, lease_ms, value,
        /// token (fenced), seen_ms.
        #[arg(long)]
        json: bool,
        /// The mean time between reads (each a conditional GET: a 304 while nothing
        /// changes): 30 a minute with the default.
        #[arg(long, value_parser = duration, default_value = "2s", value_name = "DURATION")]
        interval: Duration,
        /// How long each read waits for the store; a read given up is reported (state
        /// `unreachable`) and retried.
        #[arg(long, value_parser = duration, default_value = "20s", value_name = "DURATION")]
        timeout: Duration,
        /// Keep each lock's state in this file in the Prometheus text format (for
        /// node_exporter's textfile collector): held, stale, the holder's age, the token, the
        /// time since the last change; rewritten whole every interval.
        #[arg(long, value_name = "PATH")]
        metrics_textfile: Option<std::path::PathBuf>,
        /// A label for every metric in the textfile, name=value (repeatable).
        #[arg(long, value_name = "NAME=VALUE", value_parser = crate::textfile::label, requires = "metrics_textfile")]
        metrics_label: Vec<(String, String)>,
        #[command(flatten)]
        store: StoreFlags,
        /// The locks: s3://bucket/key, az://container/key or gs://bucket/key (one or more).
        #[arg(value_parser = LockUrl::parse, required = true, num_args = 1..)]
        url: Vec<LockUrl>,
    },
    /// Remove a lock, but only the version you saw, never a newer one: DELETE If-Match, or
    /// for a fenced lock a `free` record written with If-Match (its token is kept). Name the
    /// version by its ETag, by Terraform's lock ID, or wait to see that it is stale.
    Unlock {
        /// The ETag `sets3lock status` showed.
        #[arg(long, value_parser = ETag::parse, required_unless_present_any = ["id", "if_stale"], conflicts_with_all = ["id", "if_stale"])]
        etag: Option<ETag>,
        /// Terraform's (or OpenTofu's) lock ID, as `status` and Terraform's Lock Info show it:
        /// removes only the lock with this ID (what `terraform force-unlock ID` means, without
        /// its race).
        #[arg(long, value_name = "LOCK_ID", conflicts_with = "if_stale")]
        id: Option<String>,
        /// Remove the lock only if its holder has stopped renewing: wait one lease (its
        /// record's) with its ETag unchanged, then delete that version. For a crashed holder
        /// that Terraform, which never takes a lock over, would wait for forever.
        #[arg(long)]
        if_stale: bool,
        /// Give up (exit 111) if the store has not answered within this long; the outcome is
        /// then unknown (run `sets3lock status`).
        #[arg(long, value_parser = duration, default_value = "20s", value_name = "DURATION")]
        timeout: Duration,
        #[command(flatten)]
        store: StoreFlags,
        /// The lock: s3://bucket/key, az://container/key or gs://bucket/key.
        #[arg(value_parser = LockUrl::parse)]
        url: LockUrl,
    },
    /// Acquire a lock and leave it held: print its handle (alone, on stdout) for `renew`,
    /// `release` and `--handle`, and exit 0. Nothing renews it: it is held for its lease
    /// after each renewal.
    Acquire {
        #[command(flatten)]
        lock: LockFlags,
        #[command(flatten)]
        check: CheckFlags,
        #[command(flatten)]
        store: StoreFlags,
        /// The lock: s3://bucket/key, az://container/key or gs://bucket/key.
        #[arg(value_parser = LockUrl::parse)]
        url: LockUrl,
    },
    /// Renew the hold a handle names, once (exit 112 if it has ended).
    Renew {
        /// The lease for this renewal (default: the handle's).
        #[arg(long, value_parser = duration, value_name = "DURATION")]
        lease: Option<Duration>,
        #[command(flatten)]
        check: CheckFlags,
        #[command(flatten)]
        store: StoreFlags,
        /// The handle `sets3lock acquire` printed.
        #[arg(value_parser = handle)]
        handle: sets3lock::proto::Handle,
    },
    /// Release the hold a handle names, and say what was found (exit 112 if it had ended).
    Release {
        #[command(flatten)]
        log: Verbose,
        #[command(flatten)]
        store: StoreFlags,
        /// The handle `sets3lock acquire` printed.
        #[arg(value_parser = handle)]
        handle: sets3lock::proto::Handle,
    },
    /// Probe whether a store can protect a lock, with throw-away keys under a prefix.
    Doctor {
        /// Parallel conditional PUTs in the race check (2 to 200).
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(2..=200))]
        racers: u16,
        /// Every check within this long: what is not sent by then counts as an error (exit
        /// 111), and no request waits past it.
        #[arg(long, value_parser = duration, default_value = "1m", value_name = "DURATION")]
        timeout: Duration,
        #[command(flatten)]
        store: StoreFlags,
        /// Where to put the probe keys: s3://bucket/prefix/ (or az://, gs://).
        #[arg(value_parser = ProbeUrl::parse)]
        url: ProbeUrl,
    },
    /// Print shell completions.
    Completions {
        /// The shell.
        shell: Shell,
    },
}

/// Shells with completions.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub(crate) enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// Run mode's arguments: our options and the lock, then the program's argv, untouched. Every
/// usage error, clap's or ours, comes back as a clap error.
pub(crate) fn parse_run(args: &[OsString]) -> Result<(Run, Vec<OsString>), clap::Error> {
    let (ours, program) = split_program(args);
    let run = Run::try_parse_from(std::iter::once(OsString::from("sets3lock")).chain(ours))?;
    if program.is_empty() {
        return Err(Run::command().error(ErrorKind::MissingRequiredArgument, "no program to run"));
    }
    if run.url().is_none() {
        return Err(Run::command().error(ErrorKind::MissingRequiredArgument, "no lock URL"));
    }
    let first = program[0].to_string_lossy();
    if run.handle.is_some() && LockUrl::parse(&first).is_ok() {
        return Err(Run::command().error(
            ErrorKind::ArgumentConflict,
            format!("--handle names the lock: give no URL ({first}) with it"),
        ));
    }
    if run.handle.is_none() && (first == "--handle" || first.starts_with("--handle=")) {
        return Err(Run::command().error(
            ErrorKind::ArgumentConflict,
            "--handle replaces the URL: give one or the other, before the program",
        ));
    }
    check_timing(&run)
        .map_err(|problem| Run::command().error(ErrorKind::ValueValidation, problem))?;
    Ok((run, program))
}

/// The whole command line as one clap command, run mode's options with the operator
/// commands, for completions.
pub(crate) fn whole() -> clap::Command {
    let commands = Command::command();
    Run::command()
        .subcommands(commands.get_subcommands().cloned())
        .args_conflicts_with_subcommands(true)
        .disable_help_subcommand(true)
}

/// `--kill-after` when not given: 10 s, or half the room a short lease leaves.
const KILL_AFTER: Duration = Duration::from_secs(10);

/// Reads a handle; the error is the one-line message of what is wrong.
pub(crate) fn handle(s: &str) -> Result<sets3lock::proto::Handle, String> {
    s.parse()
        .map_err(|e: sets3lock::proto::HandleError| e.to_string())
}

impl Run {
    /// The lock: the handle's, or the URL given (one of them is required).
    pub(crate) fn url(&self) -> Option<LockUrl> {
        self.handle
            .as_ref()
            .map(|h| h.url.clone())
            .or_else(|| self.url.clone())
    }

    /// The lease in force: as given, else the handle's, else the default.
    pub(crate) fn lease(&self) -> Duration {
        self.lock
            .lease
            .or(self.handle.as_ref().map(|h| h.lease))
            .unwrap_or(LEASE)
    }

    /// The lock settings these flags give, on top of `base`.
    pub(crate) fn config(&self, base: sets3lock::proto::Config) -> sets3lock::proto::Config {
        let mut config = base;
        config.lease = self.lease();
        config.hold_at_least = self.hold_at_least.unwrap_or_default();
        // The program is stopped `--kill-after` before validity ends: a renewal retried
        // after a setback goes out before then.
        config.stop_before = self.kill_after();
        config.fenced = self.lock.fenced;
        config.poll.cap = self.lock.poll_max;
        config.value = self.lock.value.clone();
        config.terraform_lease = self.lock.terraform_lease;
        config
    }

    /// The time between SIGTERM and SIGKILL: as given, or the default that fits the lease.
    pub(crate) fn kill_after(&self) -> Duration {
        self.kill_after
            .unwrap_or_else(|| KILL_AFTER.min(room(self.lease()) / 2))
    }
}

/// How long before the end of validity the program can be stopped: validity less the renewal
/// interval (the stop must not start before the next renewal is due). Unbounded for lease 0.
fn room(lease: Duration) -> Duration {
    if lease.is_zero() {
        return Duration::MAX;
    }
    let config = sets3lock::proto::Config {
        lease,
        ..sets3lock::proto::Config::default()
    };
    config.validity().saturating_sub(config.renew_interval())
}

/// The lease must be 0 or at least 10 ms, and the program must be dead before the lease can
/// expire: the stop sequence (SIGTERM, then SIGKILL after `--kill-after`) starts `--kill-after`
/// before the end of validity, which must come after the next renewal is due.
fn check_timing(run: &Run) -> Result<(), String> {
    let mut config = run.config(sets3lock::proto::Config::default());
    // Terraform's format (asked for, or a key ending in .tflock) needs a lease and no
    // --fenced: the core's check says so, before anything is sent. (Not with --slots, whose
    // slot keys do not end in .tflock; not for a hold continued from a handle, which keeps the
    // format it was taken in.)
    let slots_or_handle = run.slots.is_some() || run.handle.is_some();
    if !slots_or_handle
        && run
            .url()
            .is_some_and(|u| run.lock.lock_format.is_terraform(u.key()))
    {
        config.terraform = Some(sets3lock::proto::TerraformFormat::default());
    }
    config.validate().map_err(|e| match e {
        sets3lock::proto::ConfigError::BadBackoff { which: "poll" } => format!(
            "--poll-max {} is shorter than the shortest pause between checks ({}): give at least that",
            human(run.lock.poll_max),
            human(config.poll.floor)
        ),
        other => other.to_string(),
    })?;
    let room = room(run.lease());
    if run.kill_after() >= room {
        return Err(format!(
            "--kill-after {} is too long for --lease {}: the program must be stopped before the lease can expire; use less than {}, or a longer lease",
            human(run.kill_after()),
            human(run.lease()),
            human(room)
        ));
    }
    Ok(())
}

/// Parses `30s`, `5m`, `1h30m`, `1.5s`, `250ms`, or `0`.
pub(crate) fn duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {s:?}: write it like 30s, 5m, 1h30m or 250ms");
    if s.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    let span: jiff::SignedDuration = s.trim().parse().map_err(|_| bad())?;
    Duration::try_from(span).map_err(|_| bad())
}

/// The operator command words (a first argument that is one of these is a command).
pub(crate) const COMMANDS: &[&str] = &[
    "status",
    "watch",
    "unlock",
    "acquire",
    "renew",
    "release",
    "doctor",
    "completions",
];

/// Whether `arg` is a long option of run mode or of an operator command that takes a value
/// (so the next argument is its value, not the URL or a command word): read off the clap
/// definitions, so that a new option cannot be forgotten here.
fn takes_value(arg: &str) -> bool {
    use clap::CommandFactory as _;
    static VALUED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let valued = VALUED.get_or_init(|| {
        let run = Run::command();
        let commands = Command::command();
        std::iter::once(&run)
            .chain(commands.get_subcommands())
            .flat_map(|c| c.get_arguments())
            .filter(|a| a.get_action().takes_values())
            .filter_map(|a| a.get_long().map(str::to_owned))
            .collect()
    });
    arg.strip_prefix("--")
        .is_some_and(|long| valued.iter().any(|v| v == long))
}

/// Splits run-mode arguments into (options and URL) and the program's argv, untouched:
/// everything after the URL belongs to the program, whatever it looks like.
fn split_program(args: &[OsString]) -> (Vec<OsString>, Vec<OsString>) {
    let mut i = 0;
    // With --handle there is no URL: the first word that is not an option is the program.
    let mut handle = false;
    while i < args.len() {
        let a = args[i].to_string_lossy();
        handle |= a == "--handle" || a.starts_with("--handle=");
        if handle && a == "--" {
            return (args[..i].to_vec(), args[i + 1..].to_vec());
        }
        if handle && !(a.starts_with('-') && a.len() > 1) {
            return (args[..i].to_vec(), args[i..].to_vec());
        }
        if a == "--" {
            // `--` ends options: the next argument is the URL.
            let end = (i + 2).min(args.len());
            let mut ours: Vec<OsString> = args[..i].to_vec();
            ours.extend_from_slice(&args[i + 1..end]);
            let program = match args.get(end) {
                Some(a) if a == "--" => end + 1,
                _ => end,
            };
            return (ours, args[program..].to_vec());
        }
        if a.starts_with('-') && a.len() > 1 {
            if takes_value(&a) {
                i += 1;
            }
            i += 1;
            continue;
        }
        // The URL. A `--` right after it (as in `s3://b/k -- ./deploy --prod`) only
        // separates it from the program.
        let program = match args.get(i + 1) {
            Some(a) if a == "--" => i + 2,
            _ => i + 1,
        };
        return (args[..=i].to_vec(), args[program..].to_vec());
    }
    (args.to_vec(), Vec::new())
}

/// Puts an operator command word first when options come before it
/// (`sets3lock --endpoint URL status s3://b/k`, as git, aws and cargo allow): the first word
/// that is not an option or an option's value decides. Run mode's first word is the URL.
pub(crate) fn command_first(args: &[OsString]) -> Option<Vec<OsString>> {
    let mut i = 1;
    while i < args.len() {
        let a = args[i].to_string_lossy();
        if a == "--" {
            return None;
        }
        if a.starts_with('-') && a.len() > 1 {
            i += if takes_value(&a) { 2 } else { 1 };
            continue;
        }
        if !COMMANDS.contains(&a.as_ref()) {
            return None;
        }
        let mut reordered = vec![args[0].clone(), args[i].clone()];
        reordered.extend(args[1..i].iter().cloned());
        reordered.extend(args[i + 1..].iter().cloned());
        return Some(reordered);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_program_argv_is_everything_after_the_url() {
        let (ours, prog) = split_program(&os(&[
            "-nx",
            "--timeout",
            "5m",
            "s3://b/k",
            "cmd",
            "-v",
            "--",
            "-n",
        ]));
        assert_eq!(ours, os(&["-nx", "--timeout", "5m", "s3://b/k"]));
        assert_eq!(prog, os(&["cmd", "-v", "--", "-n"]));
        let (ours, prog) = split_program(&os(&["-v", "--", "s3://b/k", "--", "x"]));
        assert_eq!(ours, os(&["-v", "s3://b/k"]));
        assert_eq!(prog, os(&["x"]));
        // The --help example: a `--` right after the URL separates it from the program.
        let (ours, prog) = split_program(&os(&[
            "--timeout",
            "5m",
            "--lease",
            "2m",
            "s3://b/deploy",
            "--",
            "./deploy",
            "--prod",
        ]));
        assert_eq!(
            ours,
            os(&["--timeout", "5m", "--lease", "2m", "s3://b/deploy"])
        );
        assert_eq!(prog, os(&["./deploy", "--prod"]));
        // Further `--`s are the program's.
        let (_, prog) = split_program(&os(&["s3://b/k", "cmd", "--", "--"]));
        assert_eq!(prog, os(&["cmd", "--", "--"]));
    }

    #[test]
    fn a_url_with_a_handle_is_a_usage_error() {
        let h = "s3://locks/k#sets3lock-hold:owner=000000000000000000000000000000aa,lease_ms=30000";
        for args in [
            vec!["--handle", h, "s3://locks/k", "true"],
            vec!["s3://locks/k", "--handle", h, "true"],
        ] {
            let e = parse_run(&os(&args)).expect_err("a usage error");
            assert_eq!(e.kind(), ErrorKind::ArgumentConflict, "{args:?}: {e}");
        }
        assert!(parse_run(&os(&["--handle", h, "true"])).is_ok());
    }

    #[test]
    fn options_may_come_before_a_command_word() {
        let args = os(&[
            "sets3lock",
            "--endpoint",
            "http://h:1",
            "status",
            "s3://b/k",
        ]);
        assert_eq!(
            command_first(&args),
            Some(os(&[
                "sets3lock",
                "status",
                "--endpoint",
                "http://h:1",
                "s3://b/k"
            ]))
        );
        assert_eq!(
            command_first(&os(&["sets3lock", "status", "s3://b/k"])).map(|v| v.len()),
            Some(3)
        );
        // Run mode: the first word is the URL, and a program named like a command is the
        // program's.
        assert_eq!(
            command_first(&os(&["sets3lock", "-n", "s3://b/k", "status"])),
            None
        );
        assert_eq!(
            command_first(&os(&["sets3lock", "--lease", "5m", "s3://b/k", "doctor"])),
            None
        );
    }

    #[test]
    fn the_default_kill_after_fits_a_short_lease_and_is_10s_otherwise() {
        let run = |lease: &str| {
            parse_run(&os(&["--lease", lease, "s3://bucket-name/k", "true"]))
                .map(|(r, _)| r.kill_after())
                .map_err(|e| e.to_string())
        };
        assert_eq!(run("60s"), Ok(Duration::from_secs(10)));
        assert_eq!(run("0"), Ok(Duration::from_secs(10)));
        let short = run("4s").expect("a 4s lease alone is fine");
        assert!(short < room(Duration::from_secs(4)), "{short:?}");
        assert!(short > Duration::from_millis(500), "{short:?}");
    }

    #[test]
    fn durations_read_like_people_write_them() {
        assert_eq!(duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(duration("0"), Ok(Duration::ZERO));
        assert!(duration("soon").is_err());
        assert!(duration("-5s").is_err());
    }

    #[test]
    fn the_last_of_a_pair_wins() {
        let r = Run::try_parse_from(["sets3lock", "-nN", "-Xx", "s3://bucket/k"]).expect("parses");
        assert!(r.lock.wait && !r.lock.no_wait && r.exit_zero && !r.fail);
        let r = Run::try_parse_from(["sets3lock", "-N", "-n", "s3://bucket/k"]).expect("parses");
        assert!(r.lock.no_wait && !r.lock.wait);
    }

    #[test]
    fn run_mode_and_acquire_read_the_lock_flags_alike() {
        let flags = [
            "-n",
            "--timeout",
            "5m",
            "--lease",
            "2m",
            "--fenced",
            "--value",
            "v",
            "--poll-max",
            "1s",
        ];
        let run = Run::try_parse_from(
            ["sets3lock"]
                .into_iter()
                .chain(flags)
                .chain(["s3://bucket-1/k"]),
        )
        .expect("run mode parses");
        let acquire = Command::try_parse_from(
            ["sets3lock", "acquire"]
                .into_iter()
                .chain(flags)
                .chain(["s3://bucket-1/k"]),
        )
        .expect("acquire parses");
        let Command::Acquire { lock, .. } = acquire else {
            panic!("not acquire: {acquire:?}");
        };
        assert_eq!(format!("{:?}", run.lock), format!("{lock:?}"));
        // And alike by default: no lease given (60s, or a handle's), 3s between checks.
        let run = Run::try_parse_from(["sets3lock", "s3://bucket-1/k"]).expect("parses");
        let Command::Acquire { lock, .. } =
            Command::try_parse_from(["sets3lock", "acquire", "s3://bucket-1/k"]).expect("parses")
        else {
            panic!("not acquire");
        };
        assert_eq!(format!("{:?}", run.lock), format!("{lock:?}"));
        assert_eq!((lock.lease, lock.poll_max), (None, Duration::from_secs(3)));
    }
}
