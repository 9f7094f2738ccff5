//! What fetchers reach token services with: a blocking HTTP client of the same make as the
//! stores' (no redirects, no retries, a time limit per request, the same CA bundle), and the
//! reading of token files and of commands' output. Every error is one line that names the
//! service, never a secret.

use crate::driver::http::{exchange_blocking, HttpRequest, Settings, Transport};
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use std::path::{Path, PathBuf};
use std::time::Duration;
use url::Url;

/// A client for one token service.
pub(crate) struct Http {
    client: reqwest::blocking::Client,
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
    /// trusting `ca_bundle` only, if one is given, for `https` URLs.
    pub(crate) fn new(
        url: &Url,
        ca_bundle: Option<&Path>,
        limit: Duration,
    ) -> Result<Http, String> {
        let settings = Settings {
            endpoint: Some(url.clone()),
            ca_bundle: ca_bundle.map(Path::to_path_buf),
            request_timeout: limit,
        };
        match Transport::new(true, &settings) {
            Ok(Transport::Blocking(client)) => Ok(Http { client, limit }),
            Ok(Transport::Async(_)) => Err("no blocking HTTP client".into()),
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
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("bad header name {name:?}"))?;
            let value = HeaderValue::from_str(value)
                .map_err(|_| format!("a value for {name} that is not a header value"))?;
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
        let request = HttpRequest {
            method,
            url: url.clone(),
            headers: map,
            body,
        };
        let where_ = format!("{}{}", url.origin().ascii_serialization(), url.path());
        match exchange_blocking(&self.client, request, self.limit) {
            Ok(reply) => Ok(Answer {
                status: reply.status.as_u16(),
                body: reply.body,
            }),
            Err(sets3lock_proto::Response::Ambiguous(sets3lock_proto::Ambiguity::Timeout)) => {
                Err(format!("{where_} gave no answer in {} s", secs(self.limit)))
            }
            Err(sets3lock_proto::Response::Ambiguous(a)) => {
                Err(format!("{where_} could not be reached ({a})"))
            }
            Err(other) => Err(format!("{where_}: {other:?}")),
        }
    }
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

/// Runs `command_line` through the shell, within `limit`: its standard output, or why not.
/// Its standard error is quoted in the error (tools say there what to do), never its output
/// (which holds the secret).
pub(crate) fn run(command_line: &str, limit: Duration) -> Result<Vec<u8>, String> {
    let mut child = shell(command_line)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("`{}` could not be started: {e}", first_word(command_line)))?;
    let deadline = std::time::Instant::now() + limit;
    // Read the pipes on threads, so that a full pipe cannot stall the command.
    let out = child.stdout.take().map(reader);
    let err = child.stderr.take().map(reader);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`{}` did not finish in {} s",
                    first_word(command_line),
                    secs(limit)
                ));
            }
            Err(e) => return Err(format!("`{}`: {e}", first_word(command_line))),
        }
    };
    let joined = |h: Option<std::thread::JoinHandle<Vec<u8>>>| {
        h.and_then(|h| h.join().ok()).unwrap_or_default()
    };
    let (stdout, stderr) = (joined(out), joined(err));
    if !status.success() {
        let said = String::from_utf8_lossy(&stderr);
        let said: String = said.trim().chars().take(300).collect();
        return Err(format!(
            "`{}` failed ({status}){}",
            first_word(command_line),
            if said.is_empty() {
                String::new()
            } else {
                format!(": {said}")
            }
        ));
    }
    Ok(stdout)
}

fn reader(mut pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
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

/// The program a command line runs (its arguments may hold secrets).
fn first_word(command_line: &str) -> &str {
    command_line.split_whitespace().next().unwrap_or("")
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
