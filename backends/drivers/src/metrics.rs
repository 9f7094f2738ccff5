//! The instruments (feature `metrics`): what each lock's driver does, as counters, gauges and
//! histograms through the [`metrics`](https://docs.rs/metrics) facade. The application chooses
//! the exporter (Prometheus, OpenTelemetry, StatsD, ...) by installing a recorder; without one
//! the instruments record nothing (each still builds its labels: a few small allocations per
//! request, next to a network round trip).
//!
//! Every instrument has the label `lock` (the lock's URL, or
//! [`Options::metrics_name`](crate::Options::metrics_name): name locks there to keep the
//! number of series small) and, where it says so, `mode` (`presence` or `fenced`: the
//! configuration's until a grant carries a token, which makes it `fenced`).
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | `sets3lock_acquire_duration_seconds` | histogram | lock, mode, outcome, contended | from the call to its end; `outcome` is `acquired`, `busy`, `timed_out`, `cancelled` or `error`; `contended` is `true` if another holder was in the way (seen while waiting, found by a try-once attempt or a timed-out wait, or taken over when stale). A semaphore's acquisition counts once, whichever slots it tried; adopting a handle is not an acquisition |
//! | `sets3lock_locks_held` | gauge | lock, mode | locks held by this process now |
//! | `sets3lock_locks_waiting` | gauge | lock, mode | acquisitions of this process waiting now for another holder to go |
//! | `sets3lock_hold_duration_seconds` | histogram | lock, mode | from acquisition to the end of the hold (released, lost, expired, detached) |
//! | `sets3lock_renewals_total` | counter | lock, mode, result | renewals: `ok`, or `delayed` (one that did not get through, retried) |
//! | `sets3lock_renewal_duration_seconds` | histogram | lock, mode | one renewal request, sent to answered |
//! | `sets3lock_renewal_lease_left_seconds` | histogram | lock, mode | validity left when a renewal was sent: how close to expiry holders run |
//! | `sets3lock_losses_total` | counter | lock, mode, reason | holds lost: `taken_over`, `deleted`, `expired`, `unreachable` (expired while a request was unanswered, or the last one got no answer); every reason starts at 0 |
//! | `sets3lock_releases_total` | counter | lock, mode, outcome | releases by what they found: `deleted`, `freed`, `resting`, `parked`, `taken_over`, `already_gone`, `held_elsewhere`, `overdue`, `failed` |
//! | `sets3lock_lost_replies_recovered_total` | counter | lock, mode | writes whose reply was lost, settled by reading the object back |
//! | `sets3lock_store_requests_total` | counter | lock, method, result | requests to the store (the bill): `method` `GET`, `PUT`, `DELETE`; `result` the reply as read: `written`, `deleted`, `object`, `not_modified`, `exists`, `mismatch`, `absent`, `conflict`, `ambiguous` (no usable reply), `refused` |
//! | `sets3lock_store_request_duration_seconds` | histogram | lock, method | one request, sent to answered |
//! | `sets3lock_fencing_token` | gauge | lock | the token last granted to this process (fenced mode; under one `metrics_name` for many keys, the last of any of them) |
//! | `sets3lock_holder_changes_total` | counter | lock | a watcher (or an election's) saw the lock change hands, go free or go stale |
//!
//! `result` is the reply as the store's reply table reads it, not the HTTP status: the same
//! condition failing is 412 on S3 and may be 409 on Azure, and both count as `mismatch`.
//! The store check's probes (five requests per endpoint and bucket, at most once a day with
//! the command's cache) are not counted: they belong to no lock.
//!
//! ```
//! // Once, after installing the application's recorder: help texts and units for exporters.
//! sets3lock::metrics::describe();
//! assert_eq!(sets3lock::metrics::LOCKS_HELD, "sets3lock_locks_held");
//! ```

use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};

/// Histogram: how long acquisitions took (s), by `outcome` and `contended`.
pub const ACQUIRE_DURATION: &str = "sets3lock_acquire_duration_seconds";
/// Gauge: locks held by this process now.
pub const LOCKS_HELD: &str = "sets3lock_locks_held";
/// Gauge: acquisitions waiting now for another holder to go.
pub const LOCKS_WAITING: &str = "sets3lock_locks_waiting";
/// Histogram: how long holds lasted (s).
pub const HOLD_DURATION: &str = "sets3lock_hold_duration_seconds";
/// Counter: renewals, by `result` (`ok`, `delayed`).
pub const RENEWALS: &str = "sets3lock_renewals_total";
/// Histogram: renewal requests, sent to answered (s).
pub const RENEWAL_DURATION: &str = "sets3lock_renewal_duration_seconds";
/// Histogram: validity left when a renewal was sent (s).
pub const RENEWAL_LEASE_LEFT: &str = "sets3lock_renewal_lease_left_seconds";
/// Counter: holds lost, by `reason`.
pub const LOSSES: &str = "sets3lock_losses_total";
/// Counter: releases, by `outcome`.
pub const RELEASES: &str = "sets3lock_releases_total";
/// Counter: lost replies settled by a read-back.
pub const LOST_REPLIES_RECOVERED: &str = "sets3lock_lost_replies_recovered_total";
/// Counter: store requests, by `method` and `result`.
pub const STORE_REQUESTS: &str = "sets3lock_store_requests_total";
/// Histogram: store requests, sent to answered (s), by `method`.
pub const STORE_REQUEST_DURATION: &str = "sets3lock_store_request_duration_seconds";
/// Gauge: the fencing token last granted (fenced mode).
pub const FENCING_TOKEN: &str = "sets3lock_fencing_token";
/// Counter: changes of hands a watcher saw.
pub const HOLDER_CHANGES: &str = "sets3lock_holder_changes_total";

/// Gives every instrument its unit and help text, for exporters that show them (Prometheus'
/// `# HELP`). Call it once after installing the recorder; without it the instruments still
/// record.
pub fn describe() {
    describe_histogram!(
        ACQUIRE_DURATION,
        Unit::Seconds,
        "Time from an acquisition's start to its end, by outcome and whether it was contended."
    );
    describe_gauge!(LOCKS_HELD, Unit::Count, "Locks held by this process now.");
    describe_gauge!(
        LOCKS_WAITING,
        Unit::Count,
        "Acquisitions waiting now for another holder to go."
    );
    describe_histogram!(
        HOLD_DURATION,
        Unit::Seconds,
        "Time from acquisition to the end of the hold."
    );
    describe_counter!(
        RENEWALS,
        Unit::Count,
        "Renewals: ok, or delayed (did not get through, retried)."
    );
    describe_histogram!(
        RENEWAL_DURATION,
        Unit::Seconds,
        "Renewal requests, sent to answered."
    );
    describe_histogram!(
        RENEWAL_LEASE_LEFT,
        Unit::Seconds,
        "Validity left when a renewal was sent."
    );
    describe_counter!(
        LOSSES,
        Unit::Count,
        "Holds lost: taken_over, deleted, expired, unreachable."
    );
    describe_counter!(RELEASES, Unit::Count, "Releases, by what they found.");
    describe_counter!(
        LOST_REPLIES_RECOVERED,
        Unit::Count,
        "Writes whose reply was lost, settled by reading the object back."
    );
    describe_counter!(
        STORE_REQUESTS,
        Unit::Count,
        "Requests to the store, by method and the reply as read."
    );
    describe_histogram!(
        STORE_REQUEST_DURATION,
        Unit::Seconds,
        "Store requests, sent to answered."
    );
    describe_gauge!(
        FENCING_TOKEN,
        Unit::Count,
        "The fencing token last granted to this process."
    );
    describe_counter!(
        HOLDER_CHANGES,
        Unit::Count,
        "Changes of hands a watcher saw (new holder, free, stale)."
    );
}
