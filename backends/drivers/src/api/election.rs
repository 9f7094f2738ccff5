//! Leader election on one lock key, in the words of client-go's `leaderelection` and etcd's
//! `concurrency.Election`.

use crate::api::locker::Locker;
use crate::api::watcher::Watcher;
use crate::driver::mode::Mode;
use crate::{Error, Options};
use sets3lock_proto::{Setback, Sighting, WatchConfig, WatchEvent};

/// Leader election on one key: whoever holds its lock leads.
///
/// | here | client-go / etcd |
/// |---|---|
/// | [`campaign`](crate::Election::campaign) returns the leadership (a [`Held`](crate::Held)) | `OnStartedLeading` / `Campaign` |
/// | the leadership's `lost()` / `wait_lost()` | `OnStoppedLeading` |
/// | the leadership's `release()` | `Resign` |
/// | the leadership's [`health`](crate::Held::health) | the leader's health check |
/// | [`observe`](Election::observe): a [`Watcher`] of holder changes | `OnNewLeader` / `Observe` |
/// | [`leader`](crate::Election::leader): one read | `GetLeader` / `Leader` |
///
/// Each candidate proclaims a value (its address, its name) that observers see in the
/// leader's record ([`Record::value`](crate::proto::Record::value)). A leader renews its lease
/// every third of it; if it crashes, the next candidate takes over a full lease after the
/// last renewal it saw. Observers poll with conditional `GET`s ([`WatchConfig`]: 30 a minute
/// by default, mostly `304`s).
#[derive(Debug)]
pub struct Election<M: Mode> {
    locker: Locker<M>,
    url: String,
    options: Options,
}

impl<M: Mode> Election<M> {
    /// An election on `url` (`s3://bucket/key`), where this candidate proclaims `value` (at
    /// most 256 bytes).
    pub fn new(url: &str, value: impl Into<String>, options: Options) -> Result<Self, Error> {
        let mut options = options;
        options.lock.value = Some(value.into());
        Ok(Election {
            locker: Locker::new(url, options.clone())?,
            url: url.to_owned(),
            options,
        })
    }

    /// The lock this election is held on.
    pub fn locker(&self) -> &Locker<M> {
        &self.locker
    }

    /// A watcher of the leadership (anyone may observe, candidate or not): the leader now,
    /// then every change, at `cfg`'s cadence.
    pub fn observe(&self, cfg: WatchConfig) -> Result<Watcher<M>, Error> {
        Watcher::new(&self.url, self.options.clone(), cfg)
    }

    /// The leader now, from one read.
    pub(crate) async fn leader_as(&self) -> Result<Sighting, Error> {
        let cfg = WatchConfig::default();
        let mut watcher = self.observe(cfg)?;
        match watcher.next_event().await {
            Some(WatchEvent::Changed(sighting)) => Ok(sighting),
            Some(WatchEvent::Failed { error }) => Err(Error::Store(error)),
            Some(WatchEvent::Unreachable { setback }) => Err(unreachable(setback)),
            other => Err(Error::UnknownWatchEvent(format!("{other:?}"))),
        }
    }
}

fn unreachable(setback: Setback) -> Error {
    Error::Store(sets3lock_proto::Error::GaveUp {
        attempts: 1,
        last: Box::new(setback),
    })
}
