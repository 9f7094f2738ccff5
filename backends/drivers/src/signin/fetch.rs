//! What fetchers reach token services with: a blocking HTTP client of the same make as the
//! stores' (no redirects, no retries, a time limit per request, the same CA bundle), and the
//! reading of token files and of commands' output. Every error is one line that names the
//! service, never a secret.

use crate::driver::http::Settings;
use crate::driver::ureq_http::Ureq;
use crate::rt::HttpFailure;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use url::Url;

/// How long a metadata service that accepted a probe's connection gets to answer.
const PROBE_ANSWER: Duration = Duration::from_secs(5);

/// A client for one token service.
pub(crate) struct Http {
    client: Ureq,
    /// How long the connection may take (the client's own limit).
    connect: Duration,
    /// How long the answer may take once connected.
    limit: Duration,
}

/// A reply: status, headers, body.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    /// The body as JSON, if it is.
    pub(crate) fn json(&self) -> Result<serde_json::Value, String> {
        serde_json::from_slice(&self.body).map_err(|_| "its answer is not JSON".to_owned())
    }

    /// The start of the body, to quote in an error (an error body holds no secret).
    pub(crate) fn quoted(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let text: String = text.chars().take(200).collect();
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

impl Http {
    /// A client for `url`'s service: each request within `limit` (connecting within it too),
    /// trusting `ca_bundle` only, if one is given, for `https` URLs. A service on this
    /// machine or its link (instance metadata, the container endpoint) is reached directly,
    /// never through a proxy.
    pub(crate) fn new(
        url: &Url,
        ca_bundle: Option<&Path>,
        limit: Duration,
    ) -> Result<Http, String> {
        Http::made(url, ca_bundle, limit, limit)
    }

    /// A client for a metadata service asked whether it is there at all: the connection
    /// within `connect` (off the cloud nothing answers: this is what trying costs), and a
    /// service that accepts it gets [`PROBE_ANSWER`] to answer (a VM's first token can take a
    /// few seconds).
    pub(crate) fn probe(
        url: &Url,
        ca_bundle: Option<&Path>,
        connect: Duration,
    ) -> Result<Http, String> {
        Http::made(url, ca_bundle, connect, PROBE_ANSWER.max(connect))
    }

    fn made(
        url: &Url,
        ca_bundle: Option<&Path>,
        connect: Duration,
        limit: Duration,
    ) -> Result<Http, String> {
        let settings = Settings {
            endpoint: Some(url.clone()),
            ca_bundle: ca_bundle.map(Path::to_path_buf),
            request_timeout: connect,
            direct: on_this_link(url),
        };
        match Ureq::new(&settings) {
            Ok(client) => Ok(Http {
                client,
                connect,
                limit,
            }),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Sends one request: the reply (whatever its status), or why there was none.
    pub(crate) fn send(
        &self,
        method: Method,
        url: &Url,
        headers: &[(&str, &str)],
        body: Option<(&str, String)>,
    ) -> Result<Answer, String> {
        let request = request(method, url, headers, body)?;
        self.exchange(request)
            .map_err(|failure| self.failed(url, &failure, 1))
    }

    /// Sends one request as [`send`](Http::send), and again as `patience` says while the
    /// service, having taken the connection, answers a status worth another try or gives no
    /// answer in time; a connection that cannot be made fails at once (off the cloud nothing
    /// is there: that must cost no more than one try). When every try fails, the error says
    /// how many there were.
    pub(crate) fn send_patiently(
        &self,
        patience: &Patience,
        method: Method,
        url: &Url,
        headers: &[(&str, &str)],
        body: Option<(&str, String)>,
    ) -> Result<Answer, String> {
        let mut tries = 0;
        loop {
            tries += 1;
            let last = tries >= patience.tries;
            let request = request(method.clone(), url, headers, body.clone())?;
            match self.exchange(request) {
                Ok(answer) if !(patience.again)(answer.status) => return Ok(answer),
                Ok(answer) if last => {
                    return Err(format!(
                        "{} answered HTTP {} to each of {tries} tries: {}",
                        shown_url(url),
                        answer.status,
                        answer.quoted()
                    ))
                }
                Err(failure @ HttpFailure::NotSent(_)) => {
                    return Err(self.failed(url, &failure, tries))
                }
                Err(failure) if last => return Err(self.failed(url, &failure, tries)),
                Ok(_) | Err(_) => std::thread::sleep(patience.pause(tries)),
            }
        }
    }

    fn exchange(&self, request: http::Request<Bytes>) -> Result<Answer, HttpFailure> {
        self.client
            // The connection within `connect`, the answer within `limit` after it: a
            // connection that cannot be made always fails as such (not sent, never asked
            // again), never as a request that got no answer.
            .exchange(request, self.connect + self.limit)
            .map(|reply| Answer {
                status: reply.status().as_u16(),
                body: reply.into_body().to_vec(),
            })
    }

    /// The one line for a request to `url` that got no answer, after `tries` tries.
    fn failed(&self, url: &Url, failure: &HttpFailure, tries: u32) -> String {
        let tried = match tries {
            1 => String::new(),
            n => format!(" ({n} tries)"),
        };
        match failure {
            HttpFailure::Timeout => format!(
                "{} gave no answer in {} s{tried}",
                shown_url(url),
                secs(self.limit)
            ),
            failure => format!("{} could not be reached ({failure}){tried}", shown_url(url)),
        }
    }
}

/// A URL as an error shows it: no query (it may hold a secret).
fn shown_url(url: &Url) -> String {
    format!("{}{}", url.origin().ascii_serialization(), url.path())
}

/// The request to send.
fn request(
    method: Method,
    url: &Url,
    headers: &[(&str, &str)],
    body: Option<(&str, String)>,
) -> Result<http::Request<Bytes>, String> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("bad header name {name:?}"))?;
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| format!("a value for {name} that is not a header value"))?;
        // Tokens ride in these headers: never shown, in `Debug` or anywhere.
        value.set_sensitive(true);
        map.insert(name, value);
    }
    let body = match body {
        Some((content_type, text)) => {
            map.insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_str(content_type).map_err(|_| "bad content type")?,
            );
            Bytes::from(text)
        }
        None => Bytes::new(),
    };
    let mut request = http::Request::new(body);
    *request.method_mut() = method;
    *request.uri_mut() = url
        .as_str()
        .parse()
        .map_err(|e| format!("not an HTTP URI: {e}"))?;
    *request.headers_mut() = map;
    Ok(request)
}

/// How a metadata service is asked again, as each cloud's SDK asks its own: a service that
/// is starting or being updated answers 5xx (or 410, 429) or nothing for a few seconds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Patience {
    /// Tries in all.
    pub(crate) tries: u32,
    /// The pause after the first failed try, doubled after each one (with jitter: between
    /// half of it and all of it).
    pub(crate) first_pause: Duration,
    /// The longest pause.
    pub(crate) most_pause: Duration,
    /// Whether a status is worth another try.
    pub(crate) again: fn(u16) -> bool,
}

impl Patience {
    /// The pause after `failed` tries.
    pub(crate) fn pause(&self, failed: u32) -> Duration {
        let doubled = self
            .first_pause
            .saturating_mul(1u32 << failed.saturating_sub(1).min(16));
        let full = doubled.min(self.most_pause);
        let mut byte = [0u8; 1];
        let share = match getrandom::fill(&mut byte) {
            Ok(()) => 0.5 + f64::from(byte[0]) / 510.0,
            Err(_) => 1.0,
        };
        full.mul_f64(share)
    }
}

/// The CA bundle a chain's token services are reached with, shared by the chain's thread and
/// the settings that made it: a store puts its options' bundle in when it opens, so that a
/// bundle set in code after the settings were made reaches the token services too.
#[derive(Clone, Debug, Default)]
pub(crate) struct CaBundle(std::sync::Arc<std::sync::Mutex<Option<PathBuf>>>);

impl CaBundle {
    pub(crate) fn new(path: Option<PathBuf>) -> CaBundle {
        CaBundle(std::sync::Arc::new(std::sync::Mutex::new(path)))
    }

    /// From now on, `path` (`None`: the system's store).
    pub(crate) fn set(&self, path: Option<PathBuf>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = path;
    }

    fn get(&self) -> Option<PathBuf> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl From<Option<PathBuf>> for CaBundle {
    fn from(path: Option<PathBuf>) -> CaBundle {
        CaBundle::new(path)
    }
}

/// The HTTP clients of one source, one per service, time limit and CA bundle, made on first
/// use.
pub(crate) struct Clients {
    ca_bundle: CaBundle,
    made: HashMap<(String, Duration, bool, Option<PathBuf>), Http>,
}

impl Clients {
    pub(crate) fn new(ca_bundle: impl Into<CaBundle>) -> Clients {
        Clients {
            ca_bundle: ca_bundle.into(),
            made: HashMap::new(),
        }
    }

    /// The client for `url`'s service, each request within `limit` (see [`Http::new`]).
    pub(crate) fn for_url(&mut self, url: &Url, limit: Duration) -> Result<&Http, String> {
        self.client(url, limit, false)
    }

    /// The client that probes `url`'s metadata service (see [`Http::probe`]).
    #[cfg_attr(not(any(feature = "azure", feature = "gcs")), allow(dead_code))] // Entra ID and Google only
    pub(crate) fn for_probe(&mut self, url: &Url, connect: Duration) -> Result<&Http, String> {
        self.client(url, connect, true)
    }

    fn client(&mut self, url: &Url, limit: Duration, probe: bool) -> Result<&Http, String> {
        let bundle = self.ca_bundle.get();
        let key = (url.origin().ascii_serialization(), limit, probe, bundle);
        if !self.made.contains_key(&key) {
            let ca = key.3.as_deref();
            let http = match probe {
                true => Http::probe(url, ca, limit)?,
                false => Http::new(url, ca, limit)?,
            };
            self.made.insert(key.clone(), http);
        }
        self.made.get(&key).ok_or_else(|| "no client".to_owned())
    }
}

/// Whether `url` is on this machine (loopback, `localhost`).
pub(crate) fn on_this_machine(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    }
}

/// Whether `url` is on this machine or its link (loopback, link-local, the metadata names).
pub(crate) fn on_this_link(url: &Url) -> bool {
    on_this_machine(url)
        || match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_link_local(),
            Some(url::Host::Ipv6(ip)) => {
                (ip.segments()[0] & 0xffc0) == 0xfe80 || ip.segments()[..3] == [0xfd00, 0x0ec2, 0]
            }
            Some(url::Host::Domain(d)) => d == "metadata.google.internal",
            None => false,
        }
}

/// Whether a secret (a token, a client secret) may be sent to `url`: over `https`, or in
/// clear only to this machine or its link.
pub(crate) fn safe_for_secrets(url: &Url) -> bool {
    url.scheme() == "https" || on_this_link(url)
}

/// Whether a secret the user holds (a client secret, a refresh token, a subject token) may be
/// sent to a token service at `url`: over `https`, or in clear to this machine only (a local
/// stand-in); such services never live on the link.
#[cfg_attr(not(any(feature = "azure", feature = "gcs")), allow(dead_code))] // Entra ID and Google only
pub(crate) fn safe_for_a_users_secret(url: &Url) -> bool {
    url.scheme() == "https" || on_this_machine(url)
}

/// `secs` seconds from now, or why that is not a time (a service's answer out of range).
#[cfg_attr(not(any(feature = "azure", feature = "gcs")), allow(dead_code))] // Entra ID and Google only
pub(crate) fn seconds_from_now(secs: u64, what: &str) -> Result<SystemTime, String> {
    SystemTime::now()
        .checked_add(Duration::from_secs(secs))
        .ok_or_else(|| format!("{what} answered a lifetime that is not a time ({secs} s)"))
}

/// The Unix time `secs`, or why that is not a time.
#[cfg_attr(not(any(feature = "azure", feature = "gcs")), allow(dead_code))] // Entra ID and Google only
pub(crate) fn unix_seconds(secs: u64, what: &str) -> Result<SystemTime, String> {
    SystemTime::UNIX_EPOCH
        .checked_add(Duration::from_secs(secs))
        .ok_or_else(|| format!("{what} answered an expiry that is not a time ({secs})"))
}

/// A duration as a user reads it: "1", "0.5".
pub(crate) fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s:.1}")
    }
}

/// A form body (`application/x-www-form-urlencoded`).
pub(crate) fn form(fields: &[(&str, &str)]) -> (&'static str, String) {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish();
    ("application/x-www-form-urlencoded", body)
}

/// A token file's contents, trimmed (a token rotates: read it at each fetch).
pub(crate) fn token_file(path: &Path, what: &str) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{what} {} cannot be read: {e}", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!("{what} {} is empty", path.display()));
    }
    Ok(token.to_owned())
}

/// Runs `command_line` through the shell (`/bin/sh -c`, or `cmd /C` on Windows, as the AWS
/// CLI runs a `credential_process`), within `limit`: its standard output, or why not. Its
/// standard error is quoted in the error, on one line (tools say there what to do), never its
/// output (which holds the secret), nor its arguments. On Unix the command runs in a process
/// group of its own, and the whole group is killed when the limit passes; the output is
/// waited for no longer than the limit either (a child left behind holding the pipe cannot
/// stall us).
pub(crate) fn run(command_line: &str, limit: Duration) -> Result<Vec<u8>, String> {
    execute(shell(command_line), command_line, limit)
}

/// [`run`], from the directory `dir`: a tool found on `PATH` (the Azure CLI) must not be
/// shadowed by a program of the same name in whatever directory the lock was opened from
/// (Windows' `cmd` looks there first).
#[cfg_attr(not(feature = "azure"), allow(dead_code))] // the Azure CLI only
pub(crate) fn run_from(dir: &Path, command_line: &str, limit: Duration) -> Result<Vec<u8>, String> {
    let mut command = shell(command_line);
    command.current_dir(dir);
    execute(command, command_line, limit)
}

/// Runs `command_line` split on whitespace, without a shell (as Google's libraries run an
/// executable source: no quoting, no expansion), with `vars` added to its environment; as
/// [`run`] otherwise.
#[cfg_attr(not(feature = "gcs"), allow(dead_code))] // Google's executable sources only
pub(crate) fn run_words(
    command_line: &str,
    vars: &[(&str, &str)],
    limit: Duration,
) -> Result<Vec<u8>, String> {
    let mut words = command_line.split_whitespace();
    let program = words.next().ok_or("the command is empty")?;
    let mut command = std::process::Command::new(program);
    command.args(words).envs(vars.iter().copied());
    execute(command, command_line, limit)
}

/// Runs `command` (written `command_line`) within `limit`, as [`run`] says.
fn execute(
    mut command: std::process::Command,
    command_line: &str,
    limit: Duration,
) -> Result<Vec<u8>, String> {
    let program = first_word(command_line);
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .spawn()
        .map_err(|e| format!("`{program}` could not be started: {e}"))?;
    let deadline = std::time::Instant::now() + limit;
    let (tx, rx) = std::sync::mpsc::channel();
    // Read the pipes on threads, so that a full pipe cannot stall the command.
    let readers = [
        child.stdout.take().map(|p| reader(p, 0, tx.clone())),
        child.stderr.take().map(|p| reader(p, 1, tx.clone())),
    ];
    drop(tx);
    let too_slow = || format!("`{program}` did not finish in {} s", secs(limit));
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(None) => {
                kill(&mut child);
                return Err(too_slow());
            }
            Err(e) => {
                kill(&mut child);
                return Err(format!("`{program}`: {e}"));
            }
        }
    };
    let mut output = [Vec::new(), Vec::new()];
    for _ in readers.iter().flatten() {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left.max(Duration::from_millis(100))) {
            Ok((i, bytes)) => output[i] = bytes,
            Err(_) => {
                kill(&mut child);
                return Err(too_slow());
            }
        }
    }
    let [stdout, stderr] = output;
    if !status.success() {
        let said = String::from_utf8_lossy(&stderr);
        let said: String = said.split_whitespace().collect::<Vec<_>>().join(" ");
        let said: String = said.chars().take(300).collect();
        return Err(format!(
            "`{program}` failed ({status}){}",
            if said.is_empty() {
                String::new()
            } else {
                format!(": {said}")
            }
        ));
    }
    Ok(stdout)
}

/// Kills the command and, on Unix, everything in its process group.
fn kill(child: &mut std::process::Child) {
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn reader(
    mut pipe: impl std::io::Read + Send + 'static,
    which: usize,
    tx: std::sync::mpsc::Sender<(usize, Vec<u8>)>,
) {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        let _ = tx.send((which, bytes));
    });
}

#[cfg(unix)]
fn shell(command_line: &str) -> std::process::Command {
    let mut c = std::process::Command::new("/bin/sh");
    c.arg("-c").arg(command_line);
    c
}

#[cfg(not(unix))]
fn shell(command_line: &str) -> std::process::Command {
    let mut c = std::process::Command::new("cmd");
    c.arg("/C").arg(command_line);
    c
}

/// The program a command line runs, as errors name it: never its arguments, nor the variables
/// a shell line sets before it (`TOKEN=secret tool`), which may hold secrets.
fn first_word(command_line: &str) -> &str {
    command_line
        .split_whitespace()
        .find(|word| !sets_a_variable(word))
        .unwrap_or("the command")
}

/// Whether a shell word is an assignment (`NAME=value`) rather than a program.
fn sets_a_variable(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// A user's home directory, from the variables given.
pub(crate) fn home(var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    var("HOME")
        .or_else(|| var("USERPROFILE"))
        .map(PathBuf::from)
}

/// Parses an RFC 3339 time (`2026-12-05T01:02:03Z`) as a `SystemTime`.
pub(crate) fn rfc3339(text: &str) -> Option<std::time::SystemTime> {
    let t: jiff::Timestamp = text.trim().parse().ok()?;
    Some(std::time::SystemTime::from(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_s_output_is_read_and_its_failure_quotes_its_error_not_its_output() {
        let out = run("echo '{\"a\":1}'", Duration::from_secs(5)).expect("runs");
        assert_eq!(String::from_utf8_lossy(&out).trim(), "{\"a\":1}");
        let e = run(
            "echo SECRET; echo 'log in first' >&2; exit 3",
            Duration::from_secs(5),
        )
        .expect_err("fails");
        assert!(e.contains("log in first") && !e.contains("SECRET"), "{e}");
    }

    #[test]
    fn a_command_that_leaves_a_child_holding_its_output_is_not_waited_for() {
        let started = std::time::Instant::now();
        let e = run("(sleep 30 &) ; echo partial", Duration::from_millis(500));
        assert!(started.elapsed() < Duration::from_secs(5), "{e:?}");
        let e =
            run("echo one >&2; echo two >&2; exit 1", Duration::from_secs(5)).expect_err("fails");
        assert!(e.ends_with("one two"), "{e}");
    }

    #[test]
    fn secrets_go_in_clear_only_to_this_machine_or_its_link() {
        let url = |u: &str| Url::parse(u).expect("url");
        assert!(safe_for_secrets(&url("https://sts.amazonaws.com/")));
        assert!(safe_for_secrets(&url("http://127.0.0.1:9/")));
        assert!(safe_for_secrets(&url("http://169.254.169.254/")));
        assert!(safe_for_secrets(&url("http://[fd00:ec2::23]/")));
        assert!(!safe_for_secrets(&url("http://sts.example.com/")));
        assert!(!safe_for_secrets(&url("http://10.0.0.1/")));
        assert!(seconds_from_now(u64::MAX, "x").is_err());
        assert!(unix_seconds(u64::MAX, "x").is_err());
    }

    #[test]
    fn an_error_names_the_program_never_a_variable_set_before_it_nor_an_argument() {
        let e = run(
            "API_TOKEN=s3cr3t false --password hunter2",
            Duration::from_secs(5),
        )
        .expect_err("fails");
        assert!(e.starts_with("`false` failed"), "{e}");
        assert!(!e.contains("s3cr3t") && !e.contains("hunter2"), "{e}");
        assert_eq!(first_word("A=1 B_2=x /usr/bin/tool arg"), "/usr/bin/tool");
        assert_eq!(first_word("./bin/x=y --flag"), "./bin/x=y");
        assert_eq!(first_word("ONLY=assignments"), "the command");
    }

    /// A service that never takes the connection: a listener whose queue is full (the
    /// kernel leaves further connections unanswered), as an address with nothing behind it
    /// does off the cloud.
    #[cfg(unix)]
    fn unanswered() -> (Url, Vec<std::net::TcpStream>) {
        use nix::sys::socket::{
            bind, listen, socket, AddressFamily, Backlog, SockFlag, SockType, SockaddrIn,
        };
        let fd = socket(
            AddressFamily::Inet,
            SockType::Stream,
            SockFlag::empty(),
            None,
        )
        .expect("socket");
        bind(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            &SockaddrIn::new(127, 0, 0, 1, 0),
        )
        .expect("bind");
        listen(&fd, Backlog::new(0).expect("backlog")).expect("listen");
        let listener = std::net::TcpListener::from(fd);
        let address = listener.local_addr().expect("addr");
        // One connection fills the queue.
        let filler = std::net::TcpStream::connect(address).expect("filler");
        std::mem::forget(listener);
        (
            Url::parse(&format!("http://{address}/")).expect("url"),
            vec![filler],
        )
    }

    #[cfg(unix)]
    #[test]
    fn a_connection_that_cannot_be_made_in_time_is_tried_once() {
        let (url, _queue) = unanswered();
        let http = Http::new(&url, None, Duration::from_secs(1)).expect("client");
        let patience = Patience {
            tries: 4,
            first_pause: Duration::from_millis(10),
            most_pause: Duration::from_millis(10),
            again: |_| true,
        };
        let started = std::time::Instant::now();
        let e = http
            .send_patiently(&patience, Method::GET, &url, &[], None)
            .err()
            .expect("never connects");
        let took = started.elapsed();
        assert!(
            e.contains("could not be reached") && !e.contains("tries"),
            "{e}"
        );
        assert!(took < Duration::from_millis(1800), "took {took:?}: {e}");
    }

    #[test]
    fn a_service_that_takes_the_connection_and_says_nothing_is_asked_again_and_the_tries_named() {
        let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url =
            Url::parse(&format!("http://{}/", silent.local_addr().expect("addr"))).expect("url");
        let http = Http::new(&url, None, Duration::from_millis(200)).expect("client");
        let patience = Patience {
            tries: 3,
            first_pause: Duration::from_millis(10),
            most_pause: Duration::from_millis(20),
            again: |_| false,
        };
        let e = http
            .send_patiently(&patience, Method::GET, &url, &[], None)
            .err()
            .expect("no answer");
        assert!(e.ends_with("gave no answer in 0.2 s (3 tries)"), "{e}");
        assert!(patience.pause(1) >= Duration::from_millis(5));
        assert!(patience.pause(9) <= Duration::from_millis(20));
    }

    #[test]
    fn a_command_that_hangs_is_stopped_at_its_limit() {
        let started = std::time::Instant::now();
        let e = run("sleep 30", Duration::from_millis(300)).expect_err("stopped");
        assert!(e.contains("did not finish"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn times_and_durations_read_as_users_write_them() {
        assert_eq!(secs(Duration::from_secs(1)), "1");
        assert_eq!(secs(Duration::from_millis(500)), "0.5");
        let t = rfc3339("2026-12-05T01:02:03Z").expect("parses");
        assert_eq!(crate::signin::refresh::shown(t), "2026-12-05T01:02:03Z");
        assert!(rfc3339("tomorrow").is_none());
    }
}
