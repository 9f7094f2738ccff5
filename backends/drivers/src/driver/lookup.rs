//! Name lookups for the blocking client: one shared thread for the whole process, and each
//! answer kept for [`MAX_AGE`].
//!
//! ureq resolves the URI before every request, and its default resolver starts a thread for
//! each lookup that has a time limit (ours always do), so that a hung DNS server cannot hold
//! a request past it: with every real cloud store a name, that was a thread per request. Here
//! a request first looks in the cache; on a miss it hands the name to the lookup thread and
//! waits for the answer no longer than its own time limit. A DNS server that hangs holds up
//! the lookup thread, not the requests: each still fails at its limit (as before), and names
//! already known keep being answered from the cache meanwhile.
//!
//! The system's resolver gives no TTL, so answers are kept for a fixed time: [`MAX_AGE`], about
//! what resolvers' caches keep for a cloud endpoint (S3's records have a TTL of 5 s to 60 s).
//! Failed lookups are not kept.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// How long an answer is used before the name is looked up again.
pub(crate) const MAX_AGE: Duration = Duration::from_secs(30);

/// The most names kept; past it the cache starts over (a process talks to a handful of hosts).
const MAX_NAMES: usize = 1024;

/// How a name becomes addresses: the system's resolver, or a test's.
pub(crate) type LookupFn = fn(&str) -> io::Result<Vec<SocketAddr>>;

/// What a lookup came to.
type Answer = io::Result<Vec<SocketAddr>>;

/// The answers kept: each name's addresses, and when they were found.
type Cache = Arc<Mutex<HashMap<String, (Instant, Vec<SocketAddr>)>>>;

/// A name to look up (`host:port`), and where its answer goes.
struct Job {
    name: String,
    reply: SyncSender<Answer>,
}

/// The cache and the lookup thread's queue.
pub(crate) struct Lookups {
    cache: Cache,
    /// The lookup thread's queue, started with the first miss.
    queue: OnceLock<io::Result<Sender<Job>>>,
    lookup: LookupFn,
}

/// Why no addresses came back.
#[derive(Debug)]
pub(crate) enum Failed {
    /// The time limit ran out first.
    TimedOut,
    /// The lookup failed (no such name, no lookup thread).
    Io(io::Error),
}

impl Lookups {
    /// A cache and (once needed) a lookup thread that looks names up with `lookup`.
    pub(crate) fn new(lookup: LookupFn) -> Lookups {
        Lookups {
            cache: Arc::new(Mutex::new(HashMap::new())),
            queue: OnceLock::new(),
            lookup,
        }
    }

    /// The process's: the system's resolver.
    pub(crate) fn shared() -> &'static Lookups {
        static SHARED: OnceLock<Lookups> = OnceLock::new();
        SHARED.get_or_init(|| Lookups::new(system))
    }

    /// The addresses of `name` (`host:port`), waiting at most `limit` for a lookup (`None`: as
    /// long as it takes).
    pub(crate) fn resolve(
        &self,
        name: &str,
        limit: Option<Duration>,
    ) -> Result<Vec<SocketAddr>, Failed> {
        if let Some(found) = fresh(&self.cache, name) {
            return Ok(found);
        }
        let queue = self
            .queue
            .get_or_init(|| start(Arc::clone(&self.cache), self.lookup))
            .as_ref()
            .map_err(|e| Failed::Io(io::Error::new(e.kind(), e.to_string())))?;
        let (reply, answer) = mpsc::sync_channel(1);
        let job = Job {
            name: name.to_owned(),
            reply,
        };
        if queue.send(job).is_err() {
            return Err(Failed::Io(io::Error::other("the lookup thread stopped")));
        }
        wait(&answer, limit)
    }
}

/// The answer, within `limit`.
fn wait(answer: &Receiver<Answer>, limit: Option<Duration>) -> Result<Vec<SocketAddr>, Failed> {
    let got = match limit {
        Some(limit) => answer.recv_timeout(limit),
        None => answer.recv().map_err(|_| RecvTimeoutError::Disconnected),
    };
    match got {
        Ok(found) => found.map_err(Failed::Io),
        Err(RecvTimeoutError::Timeout) => Err(Failed::TimedOut),
        Err(RecvTimeoutError::Disconnected) => {
            Err(Failed::Io(io::Error::other("the lookup thread stopped")))
        }
    }
}

/// A kept answer for `name`, if it is younger than [`MAX_AGE`].
fn fresh(cache: &Cache, name: &str) -> Option<Vec<SocketAddr>> {
    let cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
    let (at, found) = cache.get(name)?;
    (at.elapsed() < MAX_AGE).then(|| found.clone())
}

/// Starts the lookup thread: it answers one name at a time, from the cache if another request
/// had it looked up meanwhile, and keeps what it finds.
fn start(cache: Cache, lookup: LookupFn) -> io::Result<Sender<Job>> {
    let (queue, jobs) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("sets3lock-lookup".into())
        .spawn(move || {
            for job in jobs {
                let answer = match fresh(&cache, &job.name) {
                    Some(found) => Ok(found),
                    None => {
                        let found = lookup(&job.name);
                        if let Ok(addresses) = &found {
                            let mut kept = cache.lock().unwrap_or_else(PoisonError::into_inner);
                            if kept.len() >= MAX_NAMES {
                                kept.clear();
                            }
                            kept.insert(job.name.clone(), (Instant::now(), addresses.clone()));
                        }
                        found
                    }
                };
                // The request may have given up waiting: nobody to tell.
                let _ = job.reply.send(answer);
            }
        })?;
    Ok(queue)
}

/// The system's resolver (getaddrinfo: /etc/hosts, then DNS).
fn system(name: &str) -> io::Result<Vec<SocketAddr>> {
    name.to_socket_addrs().map(Iterator::collect)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Lookups of the two names the counting test uses (the tests run at once).
    static S3_LOOKUPS: AtomicUsize = AtomicUsize::new(0);
    static MISSING_LOOKUPS: AtomicUsize = AtomicUsize::new(0);

    fn counted(name: &str) -> io::Result<Vec<SocketAddr>> {
        match name {
            "s3.example.test:443" => S3_LOOKUPS.fetch_add(1, Ordering::SeqCst),
            "missing.test:80" => MISSING_LOOKUPS.fetch_add(1, Ordering::SeqCst),
            _ => 0,
        };
        match name {
            "hangs.test:80" => {
                std::thread::sleep(Duration::from_secs(2));
                Ok(vec!["10.0.0.9:80".parse().expect("address")])
            }
            "missing.test:80" => Err(io::Error::new(io::ErrorKind::NotFound, "no such name")),
            _ => Ok(vec!["10.0.0.7:443".parse().expect("address")]),
        }
    }

    #[test]
    fn a_name_is_looked_up_once_then_answered_from_the_cache_and_failures_are_not_kept() {
        let lookups = Lookups::new(counted);
        for _ in 0..100 {
            let found = lookups
                .resolve("s3.example.test:443", Some(Duration::from_secs(5)))
                .expect("resolves");
            assert_eq!(found, vec!["10.0.0.7:443".parse().expect("address")]);
        }
        assert_eq!(
            S3_LOOKUPS.load(Ordering::SeqCst),
            1,
            "one lookup for 100 requests"
        );
        for _ in 0..2 {
            match lookups.resolve("missing.test:80", Some(Duration::from_secs(5))) {
                Err(Failed::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::NotFound),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            MISSING_LOOKUPS.load(Ordering::SeqCst),
            2,
            "a failure is not kept: looked up each time"
        );
    }

    #[test]
    fn an_old_answer_is_looked_up_again() {
        let lookups = Lookups::new(counted);
        let stale = Instant::now()
            .checked_sub(MAX_AGE + Duration::from_secs(1))
            .expect("a machine up for a minute");
        lookups.cache.lock().expect("cache").insert(
            "old.test:443".into(),
            (stale, vec!["10.9.9.9:443".parse().expect("address")]),
        );
        let found = lookups
            .resolve("old.test:443", Some(Duration::from_secs(5)))
            .expect("resolves");
        assert_eq!(found, vec!["10.0.0.7:443".parse().expect("address")]);
    }

    #[test]
    fn a_hung_lookup_fails_each_request_at_its_limit_and_known_names_still_answer() {
        let lookups = Lookups::new(counted);
        lookups
            .resolve("known.test:443", Some(Duration::from_secs(5)))
            .expect("resolves");
        // The lookup answers after 2 s: a request with 200 ms fails at its limit, not with
        // the answer.
        match lookups.resolve("hangs.test:80", Some(Duration::from_millis(200))) {
            Err(Failed::TimedOut) => {}
            other => panic!("{other:?}"),
        }
        // The lookup thread is still stuck: a known name does not wait for it (it would time
        // out behind it).
        lookups
            .resolve("known.test:443", Some(Duration::from_millis(100)))
            .expect("from the cache");
    }
}
