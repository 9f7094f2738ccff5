//! The drivers on a runtime this crate does not ship: smol (its global executor, async-io's
//! timers and sockets), through the public runtime seam (`sets3lock::rt`), with an HTTP/1.1
//! client written here for it. The conformance scenarios that are not about one runtime run
//! through it against the mock (over HTTP) and SeaweedFS, in both modes.

use crate::support::{self, Driver};
use bytes::Bytes;
use core::future::Future;
use core::time::Duration;
use sets3lock::generic::{Election, Held, Locker, Locks, Semaphore, Watcher};
use sets3lock::proto::{ReleaseOutcome, Sighting, WatchEvent};
use sets3lock::rt::{BoxFuture, HttpClient, HttpFailure, HttpSettings, Runtime};
use sets3lock::{Error, Loss, Options, Wait};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use std::sync::Arc;

/// smol as a runtime for the lock.
#[derive(Debug)]
pub(crate) struct Smol;

impl Runtime for Smol {
    async fn sleep(duration: Duration) {
        smol::Timer::after(duration).await;
    }

    fn spawn(task: impl Future<Output = ()> + Send + 'static) -> Result<(), Error> {
        smol::spawn(task).detach();
        Ok(())
    }

    fn http(settings: &HttpSettings) -> Result<Arc<dyn HttpClient>, Error> {
        if settings
            .endpoint
            .as_ref()
            .is_some_and(|e| e.scheme() != "http")
        {
            return Err(Error::HttpClient(
                "this test client speaks plain http only".into(),
            ));
        }
        Ok(Arc::new(SmolHttp))
    }
}

/// HTTP/1.1 on smol: one connection per request (`Connection: close`), the reply read until
/// its length, its last chunk or the end of the stream.
#[derive(Debug)]
struct SmolHttp;

impl HttpClient for SmolHttp {
    fn send(
        &self,
        request: http::Request<Bytes>,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, HttpFailure>> {
        Box::pin(async move {
            let late = async {
                smol::Timer::after(timeout).await;
                Err(HttpFailure::Timeout)
            };
            smol::future::or(exchange(request), late).await
        })
    }
}

async fn exchange(request: http::Request<Bytes>) -> Result<http::Response<Bytes>, HttpFailure> {
    let uri = request.uri().clone();
    let host = uri.host().unwrap_or("127.0.0.1");
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = uri.port_u16().unwrap_or(80);
    let mut stream = smol::net::TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| HttpFailure::NotSent(e.to_string()))?;
    let target = uri.path_and_query().map_or("/", |p| p.as_str());
    let authority = uri.authority().map_or("", |a| a.as_str());
    let mut out = format!(
        "{} {target} HTTP/1.1\r\nhost: {authority}\r\n",
        request.method()
    )
    .into_bytes();
    for (name, value) in request.headers() {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"connection: close\r\n\r\n");
    out.extend_from_slice(request.body());
    let broken = |e: std::io::Error| HttpFailure::Broken(e.to_string());
    stream.write_all(&out).await.map_err(broken)?;
    let mut reply = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if let Some(done) = parse(&reply) {
            return done;
        }
        let n = stream.read(&mut buf).await.map_err(broken)?;
        if n == 0 {
            return parse_at_end(&reply);
        }
        reply.extend_from_slice(&buf[..n]);
    }
}

/// The head's end, status and headers, and how the body is framed.
fn head(buf: &[u8]) -> Option<(usize, http::response::Builder, Option<usize>, bool, u16)> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let text = std::str::from_utf8(&buf[..end]).ok()?;
    let mut lines = text.split("\r\n");
    let status: u16 = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let mut builder = http::Response::builder().status(status);
    let (mut length, mut chunked) = (None, false);
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':')?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().ok();
        }
        if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        }
        builder = builder.header(name.trim(), value);
    }
    Some((end, builder, length, chunked, status))
}

/// The reply, once complete; `None` while more may come.
fn parse(buf: &[u8]) -> Option<Result<http::Response<Bytes>, HttpFailure>> {
    let (end, builder, length, chunked, status) = head(buf)?;
    let rest = &buf[end..];
    let body = if matches!(status, 100..=199 | 204 | 304) {
        Vec::new()
    } else if chunked {
        dechunk(rest)?
    } else {
        rest.get(..length?)?.to_vec()
    };
    Some(
        builder
            .body(Bytes::from(body))
            .map_err(|e| HttpFailure::Broken(e.to_string())),
    )
}

/// The reply when the server closed the connection: unframed bodies end here.
fn parse_at_end(buf: &[u8]) -> Result<http::Response<Bytes>, HttpFailure> {
    let cut = || HttpFailure::Broken("the reply was cut short".into());
    let (end, builder, length, chunked, _) = head(buf).ok_or_else(cut)?;
    if length.is_some() || chunked {
        return Err(cut());
    }
    builder
        .body(Bytes::copy_from_slice(&buf[end..]))
        .map_err(|e| HttpFailure::Broken(e.to_string()))
}

fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = rest.windows(2).position(|w| w == b"\r\n")?;
        let size = std::str::from_utf8(&rest[..line]).ok()?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[line + 2..];
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

/// Waits for `future` at most `timeout`.
fn within<T>(timeout: Duration, future: impl Future<Output = T>) -> Option<T> {
    smol::block_on(smol::future::or(async { Some(future.await) }, async {
        smol::Timer::after(timeout).await;
        None
    }))
}

impl Driver for Smol {
    fn acquire(url: &str, options: Options, wait: Wait) -> Result<Held<Self>, Error> {
        let locker = Locker::<Smol>::new(url, options)?;
        smol::block_on(locker.acquire(wait))
    }

    fn acquire_with(locker: &Locker<Self>, wait: Wait) -> Result<Held<Self>, Error> {
        smol::block_on(locker.acquire(wait))
    }

    fn release(held: Held<Self>) -> Result<ReleaseOutcome, Error> {
        smol::block_on(held.release())
    }

    fn wait_lost(held: &Held<Self>, timeout: Duration) -> Option<Loss> {
        within(timeout, held.lost())
    }

    fn with_lock<T>(
        url: &str,
        options: Options,
        wait: Wait,
        work: impl FnOnce(&Held<Self>) -> T,
    ) -> Result<(T, ReleaseOutcome), Error> {
        let locker = Locker::<Smol>::new(url, options)?;
        smol::block_on(locker.with_lock(wait, async |held| work(held)))
    }

    fn take_slot(url: &str, slots: u32, options: Options, wait: Wait) -> Result<Held<Self>, Error> {
        let semaphore = Semaphore::<Smol>::new(url, slots, options)?;
        smol::block_on(semaphore.acquire(wait))
    }

    fn next_event(watcher: &mut Watcher<Self>) -> Option<WatchEvent> {
        smol::block_on(watcher.next())
    }

    fn campaign(e: &Election<Self>) -> Result<Held<Self>, Error> {
        smol::block_on(e.campaign())
    }

    fn leader(e: &Election<Self>) -> Result<Sighting, Error> {
        smol::block_on(e.leader())
    }

    fn acquire_many(
        locks: &Locks<Self>,
        keys: &[String],
        wait: Wait,
    ) -> Vec<Result<Held<Self>, Error>> {
        smol::block_on(async {
            let mut out = Vec::new();
            for key in keys {
                out.push(locks.acquire(key, wait).await);
            }
            out
        })
    }
}

/// The mock as AWS answers (404 for `If-Match` on a missing key); SeaweedFS below answers
/// 412, and the tokio and blocking drivers run both dialects.
#[test]
fn the_mock_through_a_smol_driver_in_both_modes() {
    let server = support::mock(404);
    crate::conformance::scenarios::<Smol>(&server);
    crate::conformance::fenced_scenarios::<Smol>(&server);
}

#[test]
fn seaweedfs_through_a_smol_driver_in_both_modes() {
    if let Some(s) = support::real("seaweedfs") {
        crate::conformance::scenarios::<Smol>(&s);
        crate::conformance::fenced_scenarios::<Smol>(&s);
    }
}

#[test]
fn a_smol_driver_needs_no_tokio_runtime_to_hold_a_lock() {
    // No tokio runtime is entered on this thread or started for it: the lock is taken,
    // renewed and released on smol alone (the mock server runs on its own threads).
    let server = support::mock(404);
    assert!(tokio::runtime::Handle::try_current().is_err());
    let url = server.url(&support::fresh_key("smol"));
    let mut options = server.options();
    options.lock.lease = Duration::from_secs(3);
    let held = Smol::acquire(&url, options, Wait::No).expect("acquire");
    assert_eq!(
        Smol::wait_lost(&held, Duration::from_secs(4)),
        None,
        "renewed on smol"
    );
    assert!(held.is_held());
    assert_eq!(
        Smol::release(held).expect("release"),
        ReleaseOutcome::Deleted
    );
}
