//! The server's time: requests are signed with it, not with this machine's wall clock.
//!
//! A presigned request carries the time it was signed at and stays valid for a short while
//! (`Options::presign_expiry`); a server refuses it as expired (or not yet valid) by its own
//! clock. A machine whose clock is off by more than that window (a VM after a pause, a
//! container, a board without a battery-backed clock) would have every request refused. So
//! the drivers keep the offset from this machine's clock to the server's, learned from the
//! `Date` header of replies, and sign at "this machine's time plus the offset".
//!
//! `Date` has a resolution of one second and is written while the reply is made, so it is
//! read only from replies that came back quickly ([`QUICK`]); the estimate is then within
//! about 1.5 s of the truth. An estimate replaces the offset in use only when the two differ by
//! more than [`TOLERANCE`], so a well-kept clock is never "corrected" by rounding noise. A
//! refusal for the request's time is learned from if it came back within [`QUICK_REFUSAL`]
//! (the refused request is then signed again and sent once more, see [`exchange_signed`]).
//!
//! Leases never depend on this: they are measured on the suspend-aware monotonic clock
//! (`clock.rs`). Only the signature's timestamp does.

use crate::driver::clock::Stamp;
use crate::driver::http::{Reply, Transport};
use crate::{Observation, Observer};
use core::time::Duration;
use http::HeaderMap;
use sets3lock_proto::Response;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::SystemTime;

/// Replies that took longer than this to come back say too little about when their `Date`
/// was written.
pub(crate) const QUICK: Duration = Duration::from_secs(1);

/// A refusal for the request's time is learned from if it came back within this: the estimate
/// is then within 3 s of the truth, well inside the 15 s a signature is valid for.
pub(crate) const QUICK_REFUSAL: Duration = Duration::from_secs(5);

/// How far an estimate may be from the offset in use before it replaces it.
pub(crate) const TOLERANCE: Duration = Duration::from_secs(2);

/// The offset from this machine's wall clock to one server's, in milliseconds (positive: the
/// server is ahead).
#[derive(Debug, Default)]
pub(crate) struct ServerTime {
    offset_ms: AtomicI64,
}

impl ServerTime {
    /// The server's time now, as far as we know it.
    pub(crate) fn now(&self) -> SystemTime {
        let local = SystemTime::now();
        let offset = self.offset_ms();
        let by = Duration::from_millis(offset.unsigned_abs());
        let server = match offset >= 0 {
            true => local.checked_add(by),
            false => local.checked_sub(by),
        };
        server.unwrap_or(local)
    }

    /// The offset in use, in milliseconds (positive: the server is ahead of this machine).
    pub(crate) fn offset_ms(&self) -> i64 {
        self.offset_ms.load(Ordering::Relaxed)
    }

    /// Learns from a reply's headers, for a request sent at `sent` and answered at `received`
    /// (this machine's wall clock). A reply that refused the request's time (`about_time`) is
    /// learned from however long it took. Returns the new offset if it changed.
    pub(crate) fn learn(
        &self,
        headers: &HeaderMap,
        sent: SystemTime,
        received: SystemTime,
        about_time: bool,
    ) -> Option<i64> {
        let took = received.duration_since(sent).ok()?;
        if took > if about_time { QUICK_REFUSAL } else { QUICK } {
            return None;
        }
        let date = headers.get(http::header::DATE)?.to_str().ok()?;
        let estimate = estimate_ms(date, sent + took / 2)?;
        let current = self.offset_ms();
        let tolerance = i64::try_from(TOLERANCE.as_millis()).unwrap_or(i64::MAX);
        if estimate.abs_diff(current) <= tolerance.unsigned_abs() {
            return None;
        }
        self.offset_ms.store(estimate, Ordering::Relaxed);
        Some(estimate)
    }
}

/// A resend after a time refusal is not worth less than this.
const MIN_RESEND: Duration = Duration::from_millis(100);

/// Sends one request signed (by `sign`) at the server's time, within `limit`, and reads the
/// reply with `read` (the store's reply table). Every quick reply's `Date` teaches the
/// server's time; a refusal of the request's time that taught a new offset is signed again
/// and sent once more (a refused request was not applied), within the same limit.
pub(crate) async fn exchange_signed(
    transport: &Transport,
    time: &ServerTime,
    observer: Option<&Observer>,
    limit: Duration,
    read: impl Fn(&Reply) -> Response,
    sign: impl Fn(SystemTime) -> Result<sets3lock_wire::HttpRequest, Response>,
) -> Result<(Reply, Response), Response> {
    let started = Stamp::now();
    let mut resent = false;
    loop {
        let request = sign(time.now())?;
        let sent = SystemTime::now();
        let left = limit.saturating_sub(Stamp::now().since(started));
        let reply = transport.exchange(request, left).await?;
        let response = read(&reply);
        let about_time = matches!(
            response,
            Response::Refused(sets3lock_proto::Error::Clock { .. })
        );
        let learned = time.learn(&reply.headers, sent, SystemTime::now(), about_time);
        let resend = about_time
            && learned.is_some()
            && !resent
            && limit.saturating_sub(Stamp::now().since(started)) >= MIN_RESEND;
        if let (Some(offset_ms), Some(o)) = (learned, observer) {
            o.see(Observation::ServerClock {
                offset_ms,
                resending: resend,
            });
        }
        if resend {
            resent = true;
            continue;
        }
        return Ok((reply, response));
    }
}

/// The offset (ms) from `local` to the time in an HTTP `Date` value, taking the middle of the
/// second it names. `None` for a value that is not a date.
fn estimate_ms(date: &str, local: SystemTime) -> Option<i64> {
    let server = jiff::fmt::rfc2822::parse(date).ok()?.timestamp();
    let local = jiff::Timestamp::try_from(local).ok()?;
    let middle = server
        .checked_add(jiff::SignedDuration::from_millis(500))
        .ok()?;
    let offset = middle.duration_since(local);
    i64::try_from(offset.as_millis()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn at(second: i64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(second).expect("positive"))
    }

    fn dated(second: i64) -> HeaderMap {
        let ts = jiff::Timestamp::from_second(second).expect("time");
        let text = jiff::fmt::rfc2822::DateTimePrinter::new().timestamp_to_rfc9110_string(&ts);
        let mut h = HeaderMap::new();
        h.insert(
            http::header::DATE,
            HeaderValue::from_str(&text.expect("printable")).expect("header"),
        );
        h
    }

    const T: i64 = 1_796_000_000;

    #[test]
    fn a_server_75_s_ahead_is_learned_to_the_second() {
        let st = ServerTime::default();
        let sent = at(T);
        let got = st.learn(&dated(T + 75), sent, sent + Duration::from_millis(4), false);
        let offset = got.expect("learned");
        assert!((75_000..=75_600).contains(&offset), "{offset}");
        assert_eq!(st.offset_ms(), offset);
        let ms = |t: SystemTime| {
            let since = t
                .duration_since(SystemTime::UNIX_EPOCH)
                .expect("after 1970");
            i64::try_from(since.as_millis()).expect("in range")
        };
        let now = ms(st.now()) - ms(SystemTime::now());
        assert!(
            (offset - 50..=offset + 50).contains(&now),
            "{now} vs {offset}"
        );
    }

    #[test]
    fn a_server_ten_minutes_behind_is_learned() {
        let st = ServerTime::default();
        let sent = at(T);
        let got = st.learn(
            &dated(T - 600),
            sent,
            sent + Duration::from_millis(4),
            false,
        );
        assert!(
            got.is_some_and(|o| (-600_000..=-599_400).contains(&o)),
            "{got:?}"
        );
    }

    #[test]
    fn rounding_noise_within_the_tolerance_changes_nothing() {
        let st = ServerTime::default();
        let sent = at(T) + Duration::from_millis(900);
        // The server's second is the one we are in, or the next: never a correction.
        for date in [T, T + 1, T - 1] {
            assert_eq!(st.learn(&dated(date), sent, sent, false), None);
        }
        assert_eq!(st.offset_ms(), 0);
    }

    #[test]
    fn slow_replies_teach_nothing_unless_they_refused_the_time() {
        let st = ServerTime::default();
        let sent = at(T);
        let slow = sent + QUICK + Duration::from_millis(1);
        assert_eq!(st.learn(&dated(T + 300), sent, slow, false), None);
        let too_slow = sent + QUICK_REFUSAL + Duration::from_millis(1);
        assert_eq!(st.learn(&dated(T + 300), sent, too_slow, true), None);
        assert!(st.learn(&dated(T + 300), sent, slow, true).is_some());
    }

    #[test]
    fn missing_or_garbled_dates_teach_nothing() {
        let st = ServerTime::default();
        let sent = at(T);
        assert_eq!(st.learn(&HeaderMap::new(), sent, sent, true), None);
        let mut h = HeaderMap::new();
        h.insert(http::header::DATE, HeaderValue::from_static("yesterday"));
        assert_eq!(st.learn(&h, sent, sent, true), None);
        // A clock that went backwards during the exchange: no duration, no lesson.
        assert_eq!(st.learn(&dated(T + 300), sent, at(T - 1), true), None);
    }
}
