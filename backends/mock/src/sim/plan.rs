//! What a simulation is given: the settings, each process's plan, and tampering.

use crate::Semantics;
use bytes::Bytes;
use core::time::Duration;
use sets3lock_proto::{Backoff, Config, Resume, Wait};

/// Settings shared by every process of one simulation.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// The core's settings (lease, drift bound, pacing). Every process uses them.
    pub lock: Config,
    /// How long a process's driver waits for a reply before answering "timeout".
    pub request_timeout: Duration,
    /// Latency each way once the fault list is used up.
    pub latency: Duration,
    /// How the mock answers where servers differ.
    pub semantics: Semantics,
    /// Stop after this much real time; plans not finished by then fail the liveness check.
    pub horizon: Duration,
    /// `Some(n)`: the processes share a semaphore of `n` slots (the keys `lock/slot-0` …),
    /// each round taking one slot as [`SlotChoice`](sets3lock_proto::SlotChoice) decides, instead
    /// of the one lock `lock`.
    pub slots: Option<u32>,
    /// `Some(unix_ms)`: the store keeps a clock, reading `unix_ms` at real time zero and
    /// running at real time's rate ([`MockS3::set_time`](crate::MockS3::set_time) before every
    /// request it applies): its replies carry `Date` and `Last-Modified`, which fresh readers
    /// of a resting record and adopters of a handle judge a record's age by. `None`: no store
    /// clock, no age.
    pub store_clock: Option<u64>,
    /// Keep every core's tape (its inputs and outputs, [`Report::tapes`](super::Report::tapes)):
    /// the recorded scenarios of `docs/vectors/`.
    pub record: bool,
}

impl Default for SimConfig {
    /// A 10 s lease, 1% drift bound, fast polling, 2 s request timeout, 5 ms latency.
    fn default() -> SimConfig {
        SimConfig {
            lock: Config {
                lease: Duration::from_secs(10),
                max_drift_ppm: 10_000,
                poll: Backoff::new(Duration::from_millis(50), Duration::from_secs(1)),
                retry: Backoff::new(Duration::from_millis(20), Duration::from_millis(500)),
                // Above the longest run of faults a schedule has (60): a network that heals
                // must not be given up on, or liveness could not be judged.
                retry_limit: 64,
                foreign_lease: None,
                conditional_get: true,
                fenced: false,
                host: "sim".into(),
                pid: 1,
                value: None,
                hold_at_least: Duration::ZERO,
                stop_before: Duration::ZERO,
                terraform: None,
                terraform_lease: None,
            },
            request_timeout: Duration::from_secs(2),
            latency: Duration::from_millis(5),
            semantics: Semantics::default(),
            horizon: Duration::from_secs(3600),
            slots: None,
            store_clock: None,
            record: false,
        }
    }
}

/// What one process does, round after round.
#[derive(Clone, Debug)]
pub struct ProcessPlan {
    /// Its clock's rate error in parts per million (keep within the configured drift bound
    /// for the safety property to be promised).
    pub drift_ppm: i32,
    /// Its clock's reading at real time zero.
    pub clock_offset: Duration,
    /// Its rounds, in order.
    pub rounds: Vec<Round>,
    /// Overrides `SimConfig::lock.fenced` for this process (mixed configurations on a key).
    pub fenced: Option<bool>,
}

/// One acquire / hold / exit cycle.
#[derive(Clone, Debug)]
pub struct Round {
    /// Pause before acquiring (after the previous round ended).
    pub start_after: Duration,
    /// How the round gets its hold: acquiring it, or continuing one that an earlier round
    /// (of any process) let go of with [`Exit::Detach`].
    pub start: Start,
    /// How long to wait for the lock (an acquisition's; an adoption does not wait).
    pub wait: Wait,
    /// How long to hold it once acquired (by the process's clock).
    pub hold: Duration,
    /// Freeze the whole process right after acquiring, for this long: a GC pause or a
    /// suspended VM. Its lock must expire on its own clock meanwhile.
    pub pause: Option<Duration>,
    /// How the hold ends.
    pub exit: Exit,
}

/// How a round gets its hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// [`Lock::acquire`](sets3lock_proto::Lock::acquire), waiting as the round says.
    Acquire,
    /// [`Lock::adopt`](sets3lock_proto::Lock::adopt) a handle from the run's pool of handles (every
    /// [`Exit::Detach`] adds one), to hold it or to release it: `handle` counts back from the
    /// newest (0: the newest; beyond the oldest it wraps around). An older handle's hold has
    /// often been taken over or released by then. With no handle in the pool yet the round
    /// acquires instead. A semaphore's processes always acquire.
    Adopt {
        /// Which handle, counting back from the newest.
        handle: usize,
        /// Hold it (then the round holds and exits as it says) or release it (then the round
        /// ends with the release).
        then: Resume,
    },
}

/// How a hold ends: the exit section, in the words of the mutual-exclusion literature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Release the lock (even while another process runs under the same hold).
    Release,
    /// The process dies: nothing more from it (requests in flight still land).
    Crash,
    /// [`Lock::detach`](sets3lock_proto::Lock::detach): let go without releasing, and put the
    /// handle in the pool for a later [`Start::Adopt`]. A semaphore's processes release
    /// instead.
    Detach,
}

/// Something done to the bucket behind the processes' backs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tamper {
    /// Delete the lock object.
    Delete,
    /// Overwrite it with this body.
    Overwrite(Bytes),
}
