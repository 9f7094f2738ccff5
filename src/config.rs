//! How a lock behaves: lease, clock-drift bound, polling and retry pacing, identity.

use crate::{Backoff, TerraformFormat};
use core::time::Duration;

/// Settings for one [`Lock`](crate::Lock).
///
/// ```
/// use core::time::Duration;
/// use sets3lock_proto::Config;
///
/// let config = Config {
///     lease: Duration::from_secs(30),
///     host: "build-7".into(),
///     pid: 4242,
///     ..Config::default()
/// };
/// assert!(config.validate().is_ok());
/// // The holder trusts its lock for the lease less the drift margin, and renews every third.
/// assert_eq!(config.renew_interval(), Duration::from_secs(10));
/// assert!(config.validity() < config.lease);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// How long the lock stays valid after each confirmed write. Zero means it never expires:
    /// no renewals and no takeover, as in the Go sets3lock; a crashed holder then blocks
    /// everyone until someone deletes the object.
    pub lease: Duration,
    /// The largest difference in clock *rate* between any two clients, in parts per million.
    /// The holder shortens its validity by this much in each direction, so that a waiter
    /// measuring the lease on its own clock never takes over before the holder stops trusting
    /// its lock. Absolute clock offsets do not matter; only rates do.
    pub max_drift_ppm: u32,
    /// Pacing of `GET` polls while the lock is held by someone else.
    pub poll: Backoff,
    /// Pacing of retries after a 409, a 5xx, or a lost reply.
    pub retry: Backoff,
    /// How many setbacks in a row (5xx, lost replies) without an answer from S3 an
    /// acquisition tolerates before failing with [`Error::GaveUp`](crate::Error::GaveUp) (an
    /// unreachable or broken endpoint); how many 409s, or rounds of a lock changing hands, a
    /// try-once acquisition tolerates; and how many attempts a release or a cleanup makes.
    pub retry_limit: u32,
    /// The lease to assume for a holder whose record declares none (the Go sets3lock, or any
    /// other body). `None`: such locks are never taken over.
    pub foreign_lease: Option<Duration>,
    /// Poll with `If-None-Match: <last ETag>` so an unchanged lock costs a 304 and no body.
    pub conditional_get: bool,
    /// Fenced mode for keys this lock creates: the lock object is never deleted; its record
    /// says `held` or `free` and carries a fencing token that grows with every grant
    /// ([`Event::Acquired`](crate::Event::Acquired)'s `token`). Needs no conditional DELETE.
    /// A key whose object is already a fenced record is always used in fenced mode, whatever
    /// this says, so clients configured differently can share a key safely.
    pub fenced: bool,
    /// This machine's name, written into the record for people.
    pub host: String,
    /// This process's id, written into the record for people.
    pub pid: u32,
    /// What the holder proclaims in its record, for whoever watches the lock (like etcd's
    /// proclaim value): a leader's address or name; at most
    /// [`MAX_VALUE`](crate::MAX_VALUE) bytes.
    pub value: Option<String>,
    /// At most one acquisition per this much time (zero: off). A hold released sooner than
    /// this after it was granted is not deleted but left to rest: its record is replaced by a
    /// `cooldown` record whose lease runs until this long after the grant (with the drift
    /// margin), and nobody acquires the key before that runs out. Waiters time it on their own
    /// clock like any lease; a reader that has watched nothing (a try-once acquisition started
    /// later) reads it on the store's clock (`Date` against `Last-Modified`), so a run after
    /// the period gets the lock at once. A holder that dies before releasing is covered by its
    /// lease only: use a lease at least this long if a crash must not shorten the period.
    pub hold_at_least: Duration,
    /// How long before the end of validity the lock's user stops relying on the hold (the
    /// command's `--kill-after`: its program gets SIGTERM then, if no renewal got through).
    /// After a setback, a renewal's next try is paced to go out before that moment, early
    /// enough to be answered (a tenth of a renewal interval, at least `retry.floor`), so a
    /// store that recovers in time renews the hold before its user gives up on it; past that
    /// moment, pauses end no later than validity. A hold's requests also wait at most half of
    /// the time left before it ([`Lock::request_limit`](crate::Lock::request_limit)). Zero:
    /// the end of validity.
    pub stop_before: Duration,
    /// Write the record in Terraform's and OpenTofu's lock format too (`None`: sets3lock's
    /// alone): Terraform's seven `LockInfo` fields beside the record's own, so that Terraform
    /// refuses with a Lock Info that names this holder, and `terraform force-unlock` has its
    /// ID. Presence mode with a lease only: a fenced or lease-0 record persists, and Terraform
    /// could never take it.
    pub terraform: Option<TerraformFormat>,
    /// The lease to assume for a lock Terraform or OpenTofu wrote (which declares none), to
    /// take it over after that long unchanged. `None`, the default, never takes one over, and
    /// [`foreign_lease`](Config::foreign_lease) does not apply to them: a Terraform apply can
    /// run for hours, and taking its lock while it writes state corrupts the state.
    pub terraform_lease: Option<Duration>,
}

impl Default for Config {
    /// A 60 s lease, 1% drift bound, polls between 100 ms and 3 s, retries between 50 ms and
    /// 2 s, 6 retries, conditional polls.
    fn default() -> Config {
        Config {
            lease: Duration::from_secs(60),
            max_drift_ppm: 10_000,
            poll: Backoff::new(Duration::from_millis(100), Duration::from_secs(3)),
            retry: Backoff::new(Duration::from_millis(50), Duration::from_secs(2)),
            retry_limit: 6,
            foreign_lease: None,
            conditional_get: true,
            fenced: false,
            host: String::new(),
            pid: 0,
            value: None,
            hold_at_least: Duration::ZERO,
            stop_before: Duration::ZERO,
            terraform: None,
            terraform_lease: None,
        }
    }
}

/// A setting that cannot work.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The lease is shorter than 10 ms (and not zero).
    #[error(
        "a lease of {0:?} is too short: use at least 10ms, or 0 for a lock that never expires"
    )]
    LeaseTooShort(Duration),
    /// The drift bound is 10% or more.
    #[error("a clock-drift bound of {0} ppm is not credible: use less than 100000 (10%)")]
    DriftTooLarge(u32),
    /// The proclaimed value is longer than [`MAX_VALUE`](crate::MAX_VALUE) bytes.
    #[error("a value of {0} bytes is too long for the lock record: use at most 256")]
    ValueTooLong(usize),
    /// A watch's polling interval is shorter than 10 ms.
    #[error("a polling interval of {0:?} is too short: use at least 10ms")]
    IntervalTooShort(Duration),
    /// `hold_at_least` is set on a lock with a zero lease (which never ends, so never rests).
    #[error("--hold-at-least needs a lease: a lock with a zero lease is held until deleted")]
    HoldWithoutLease,
    /// Terraform's format was asked for a lock with a zero lease, or in fenced mode.
    #[error(
        "Terraform's lock format needs presence mode with a lease ({0}): Terraform could never \
         take a record that persists; give a lease and no --fenced, or use sets3lock's own \
         format (--lock-format sets3lock, which a key ending in .tflock otherwise gets)"
    )]
    TerraformNeedsLease(&'static str),
    /// A backoff range is empty or has a zero floor.
    #[error("the {which} backoff needs 0 < floor <= cap")]
    BadBackoff {
        /// `poll` or `retry`.
        which: &'static str,
    },
}

const PPM: u128 = 1_000_000;

impl Config {
    /// Checks that the settings can work.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use sets3lock_proto::Config;
    /// let bad = Config { lease: Duration::from_millis(1), ..Config::default() };
    /// assert!(bad.validate().is_err());
    /// let never = Config { lease: Duration::ZERO, ..Config::default() };
    /// assert!(never.validate().is_ok());
    /// ```
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !self.lease.is_zero() && self.lease < Duration::from_millis(10) {
            return Err(ConfigError::LeaseTooShort(self.lease));
        }
        if self.max_drift_ppm >= 100_000 {
            return Err(ConfigError::DriftTooLarge(self.max_drift_ppm));
        }
        if let Some(v) = self.value.as_ref().filter(|v| v.len() > crate::MAX_VALUE) {
            return Err(ConfigError::ValueTooLong(v.len()));
        }
        if self.lease.is_zero() && !self.hold_at_least.is_zero() {
            return Err(ConfigError::HoldWithoutLease);
        }
        if self.terraform.is_some() {
            if self.lease.is_zero() {
                return Err(ConfigError::TerraformNeedsLease("its lease is 0"));
            }
            if self.fenced {
                return Err(ConfigError::TerraformNeedsLease("it is fenced"));
            }
        }
        for (which, b) in [("poll", self.poll), ("retry", self.retry)] {
            if b.floor.is_zero() || b.floor > b.cap {
                return Err(ConfigError::BadBackoff { which });
            }
        }
        Ok(())
    }

    /// How long after *sending* a confirmed write the holder trusts its lock:
    /// `lease × (1 − ρ) / (1 + ρ)` for the drift bound ρ. A waiter takes over only after seeing
    /// the same ETag for a full `lease` on its own clock, starting after the write landed; with
    /// clock rates within ρ of each other, that is never sooner in real time.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use sets3lock_proto::Config;
    /// let c = Config { lease: Duration::from_secs(101), max_drift_ppm: 10_000, ..Config::default() };
    /// assert_eq!(c.validity(), Duration::from_secs(99));
    /// ```
    pub fn validity(&self) -> Duration {
        let rho = u128::from(self.max_drift_ppm);
        let nanos = self.lease.as_nanos() * (PPM - rho.min(PPM)) / (PPM + rho);
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// How long after sending a confirmed write the holder renews: a third of the lease, so
    /// that two renewals can fail before the lease runs out.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use sets3lock_proto::Config;
    /// assert_eq!(Config::default().renew_interval(), Duration::from_secs(20));
    /// ```
    pub fn renew_interval(&self) -> Duration {
        self.lease / 3
    }

    /// `d` stretched by the drift bound both ways, `d × (1 + ρ) / (1 − ρ)`: a span measured on
    /// our clock that no other clock within the bound sees as shorter than `d`.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use sets3lock_proto::Config;
    /// let c = Config { max_drift_ppm: 10_000, ..Config::default() };
    /// assert_eq!(c.stretch(Duration::from_secs(99)), Duration::from_secs(101));
    /// ```
    pub fn stretch(&self, d: Duration) -> Duration {
        let rho = u128::from(self.max_drift_ppm).min(PPM - 1);
        let nanos = (d.as_nanos() * (PPM + rho)).div_ceil(PPM - rho);
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}
