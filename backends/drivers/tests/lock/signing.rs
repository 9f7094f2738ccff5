//! Signing: requests are signed at the server's time (learned from its `Date` header), a PUT's
//! body is bound to its signature, and a captured request is good for a short window only.
//!
//! The clock tests set the mock server's clock off this machine's (a real server's clock
//! cannot be moved from a test; the command's tests run the real binary under libfaketime
//! against SeaweedFS for that). The replay tests run on the mock, SeaweedFS and MiniStack.

use crate::support;

use crate::support::http1::Message;
use crate::support::mock_server::MockServer;
use crate::support::proxy::LossyProxy;
use crate::support::{fresh_key, Driver, RawAccess, Server};
use sets3lock::blocking::Blocking;
use sets3lock::generic::Tokio;
use sets3lock::proto::{Event, ReleaseOutcome};
use sets3lock::{Observation, Observer, Options, Wait};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A mock server of its own (its clock is the test's to set).
fn own_mock() -> (MockServer, Server) {
    let m = MockServer::start(Default::default(), "mock-bucket");
    let server = Server {
        scheme: sets3lock::proto::Scheme::S3,
        name: "mock (own clock)",
        endpoint: m.endpoint.clone(),
        access_key: m.access_key.clone(),
        secret: m.secret.clone(),
        bucket: "mock-bucket".into(),
        missing_if_match: 404,
    };
    (m, server)
}

/// What the driver learned and did: server-clock offsets, and renewals that got through.
#[derive(Default)]
struct Seen {
    offsets: Vec<i64>,
    renewals: usize,
}

/// Options that record what the driver learns and does.
fn watched(server: &Server) -> (Options, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let s = seen.clone();
    let mut options = server.options();
    options.observer = Some(Observer::new(move |o| {
        let mut s = s.lock().unwrap_or_else(|e| e.into_inner());
        match o {
            Observation::ServerClock { offset_ms, .. } => s.offsets.push(offset_ms),
            Observation::Event(Event::Renewed { .. }) => s.renewals += 1,
            _ => {}
        }
    }));
    (options, seen)
}

fn clock_offsets_are_learned<D: Driver>(offset_ms: i64) {
    let (mock, server) = own_mock();
    mock.set_clock_offset(offset_ms);
    let (mut options, seen) = watched(&server);
    let key = fresh_key("skew");
    // A short lease: renewals, every second, are signed with the learned offset too; waiting
    // longer than the lease shows that they got through.
    options.lock.lease = Duration::from_secs(3);
    let held = D::acquire(&server.url(&key), options, Wait::No)
        .unwrap_or_else(|e| panic!("server clock {offset_ms} ms off: {e}"));
    assert!(
        D::wait_lost(&held, Duration::from_millis(3500)).is_none(),
        "renewals failed with the server's clock {offset_ms} ms off"
    );
    let outcome = D::release(held).expect("release");
    assert_eq!(outcome, ReleaseOutcome::Deleted);
    assert!(server.raw_get(&key).is_none(), "the lock object is gone");
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    assert!(seen.renewals >= 2, "{} renewals", seen.renewals);
    let last = *seen.offsets.last().expect("the offset was learned");
    assert!(
        (last - offset_ms).abs() <= 1_500,
        "learned {:?}, the server is {offset_ms} ms off",
        seen.offsets
    );
}

#[test]
fn a_server_clock_75_s_ahead_is_learned_and_every_request_goes_through() {
    clock_offsets_are_learned::<Tokio>(75_000);
    clock_offsets_are_learned::<Blocking>(75_000);
}

#[test]
fn a_server_clock_ten_minutes_behind_is_learned_and_every_request_goes_through() {
    clock_offsets_are_learned::<Tokio>(-600_000);
    clock_offsets_are_learned::<Blocking>(-600_000);
}

#[test]
fn a_server_clock_moved_while_the_lock_is_held_is_followed() {
    let (mock, server) = own_mock();
    let (mut options, seen) = watched(&server);
    options.lock.lease = Duration::from_secs(3);
    let key = fresh_key("skew-step");
    let held = Blocking::acquire(&server.url(&key), options, Wait::No).expect("acquire");
    // The server's clock jumps two minutes ahead (or ours back): renewals continue.
    mock.set_clock_offset(120_000);
    assert!(
        Blocking::wait_lost(&held, Duration::from_millis(3500)).is_none(),
        "a renewal was refused after the clock step"
    );
    assert!(Blocking::release(held).expect("release") == ReleaseOutcome::Deleted);
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    assert!(seen.renewals >= 2, "{} renewals", seen.renewals);
    assert!(
        seen.offsets.iter().any(|o| (o - 120_000).abs() <= 1_500),
        "{:?}",
        seen.offsets
    );
}

#[test]
fn a_time_refusal_is_resent_once_not_again_and_again() {
    // The server's clock is 30 s ahead, but its Date says 60 s behind: what the driver learns
    // makes things no better. The refused create is resent once, then the clock is named.
    let (mock, server) = own_mock();
    mock.set_clock_offset(30_000);
    mock.lie_in_date(-90_000);
    let mut options = server.options();
    options.store_check = sets3lock::StoreCheck::Off;
    let key = fresh_key("skew-liar");
    let before = mock.requests.load(std::sync::atomic::Ordering::SeqCst);
    let Err(e) = Blocking::acquire(&server.url(&key), options, Wait::No) else {
        panic!("acquired under a server that refuses every request's time");
    };
    let sent = mock.requests.load(std::sync::atomic::Ordering::SeqCst) - before;
    assert_eq!(sent, 2, "the create and one resend: {e}");
    assert!(e.to_string().contains("clock"), "{e}");
    assert!(server.raw_get(&key).is_none());
}

#[test]
fn a_skewed_clock_with_no_date_to_learn_from_is_named_not_blamed_on_permissions() {
    // The server is 30 s ahead (past the 15 s a signature is valid for) and sends no Date:
    // nothing to correct with. The error must name the clock.
    let (mock, server) = own_mock();
    mock.set_clock_offset(30_000);
    mock.send_date(false);
    let key = fresh_key("skew-no-date");
    for e in [
        Tokio::acquire(&server.url(&key), server.options(), Wait::No).err(),
        Blocking::acquire(&server.url(&key), server.options(), Wait::No).err(),
    ] {
        let text = e.expect("refused").to_string();
        assert!(text.contains("clock"), "{text}");
        assert!(!text.contains("s3:PutObject"), "{text}");
    }
    assert!(server.raw_get(&key).is_none());
}

/// The first PUT our driver sent through `proxy`.
fn first_put(proxy: &LossyProxy) -> Message {
    proxy
        .requests()
        .into_iter()
        .find(|m| m.start.starts_with("PUT "))
        .expect("a PUT was sent")
}

/// Sends `m` again through `proxy`, with `body` instead of its own, and without the headers
/// named in `leave_out`: the replay of a logged request. The reply's status.
fn replay(proxy: &LossyProxy, m: &Message, body: &[u8], leave_out: &[&str]) -> u16 {
    let target = m.start.split(' ').nth(1).expect("a request target");
    let url = format!("{}{}", proxy.endpoint, target);
    let client = reqwest::blocking::Client::new();
    let mut request = client.put(url).body(body.to_vec());
    for (name, value) in &m.headers {
        let n = name.to_ascii_lowercase();
        if n == "host" || n == "content-length" || leave_out.contains(&n.as_str()) {
            continue;
        }
        request = request.header(name, value);
    }
    request.send().expect("a reply").status().as_u16()
}

/// Takes and releases a lock at `key` through a proxy that records what is sent, as a
/// proxy's or an access log would: the proxy, and the create as it was sent.
fn lock_through_a_logging_proxy(server: &Server, key: &str) -> (LossyProxy, Message) {
    let proxy = LossyProxy::start(&server.endpoint);
    let mut options = server.options();
    options.s3.endpoint = Some(sets3lock::parse_endpoint(&proxy.endpoint).expect("endpoint"));
    options.store_check = sets3lock::StoreCheck::Off;
    let held = Blocking::acquire(&server.url(key), options, Wait::No).expect("acquire");
    assert!(Blocking::release(held).expect("release") == ReleaseOutcome::Deleted);
    let create = first_put(&proxy);
    (proxy, create)
}

fn replays_with_another_body_are_refused(server: &Server) {
    eprintln!("== {}", server.name);
    let key = fresh_key("replay");
    let (proxy, create) = lock_through_a_logging_proxy(server, &key);
    assert!(
        create.header("content-md5").is_some(),
        "the create carries a Content-MD5"
    );
    // Another body under the logged signature: the digest does not match.
    let junk = br#"{"junk":true}"#;
    assert_eq!(replay(&proxy, &create, junk, &[]), 400, "{}", server.name);
    // Without the digest header: the signature does not match.
    assert_eq!(
        replay(&proxy, &create, junk, &["content-md5"]),
        403,
        "{}",
        server.name
    );
    assert!(
        server.raw_get(&key).is_none(),
        "{}: a replay with another body created the lock object",
        server.name
    );
    // The control: the same request, body and all, is accepted within its window (the
    // refusals above are the body binding's doing, not a broken replay). It recreates the
    // released lock with our record and lease, which then expires like any other.
    assert_eq!(
        replay(&proxy, &create, &create.body, &[]),
        200,
        "{}",
        server.name
    );
    server.raw_delete(&key);
}

#[test]
fn a_logged_put_replayed_with_another_body_is_refused_by_every_server() {
    replays_with_another_body_are_refused(&support::mock(404));
    for name in ["seaweedfs", "ministack"] {
        if let Some(s) = support::real(name) {
            replays_with_another_body_are_refused(&s);
        }
    }
}

#[test]
fn a_logged_request_is_refused_once_its_window_has_passed() {
    // The mock's clock moved 16 s on: past the 15 s a signature is valid for.
    let (mock, server) = own_mock();
    let key = fresh_key("replay-late");
    let (proxy, create) = lock_through_a_logging_proxy(&server, &key);
    mock.set_clock_offset(16_000);
    assert_eq!(replay(&proxy, &create, &create.body, &[]), 403);
    assert!(server.raw_get(&key).is_none());
}
