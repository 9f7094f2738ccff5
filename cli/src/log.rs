//! What the command says on stderr: the holder while waiting (unless `-q`), and with `-v`
//! every request, reply and decision (dimmed timestamps only on a terminal).

use sets3lock::proto::{Event, LockUrl};
use sets3lock::{Observation, Observer};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

#[derive(Clone)]
pub(crate) struct Log {
    verbose: bool,
    quiet: bool,
    colour: bool,
    url: LockUrl,
    /// Under a semaphore (`--slots`): how many slots; one waiting line, not one per slot.
    slots: Option<u32>,
    started: Instant,
    waiting_on: Arc<Mutex<Option<String>>>,
    /// Under a semaphore: the latest holders seen, one per slot at most (by the ETag of their
    /// record, newest last), each described with what becomes of it if it stops renewing.
    slot_holders: Arc<Mutex<std::collections::VecDeque<(String, String)>>>,
    /// The waiting line has named every slot's holder once.
    said_every_slot: Arc<AtomicBool>,
    /// Requests that got a reply, and requests that got none (timeouts, broken connections).
    replies: Arc<(AtomicU32, AtomicU32)>,
    /// The store check was inconclusive (no reply, or no clear one).
    check_unanswered: Arc<AtomicBool>,
    /// Operations that failed for good ([`Event::Failed`]), and what the last one said.
    failures: Arc<Mutex<(u32, Option<String>)>>,
}

impl Log {
    pub(crate) fn new(verbose: bool, quiet: bool, url: LockUrl) -> Log {
        Log {
            verbose,
            quiet,
            colour: std::io::stderr().is_terminal(),
            url,
            slots: None,
            started: Instant::now(),
            waiting_on: Arc::new(Mutex::new(None)),
            slot_holders: Arc::default(),
            said_every_slot: Arc::default(),
            replies: Arc::default(),
            check_unanswered: Arc::default(),
            failures: Arc::default(),
        }
    }

    /// The same, for a semaphore of `slots` slots.
    pub(crate) fn with_slots(self, slots: Option<u32>) -> Log {
        Log { slots, ..self }
    }

    /// A `-v` line: the time since the start, then what `say!` would write.
    fn line(&self, what: &str) {
        use std::io::Write as _;
        let t = self.started.elapsed().as_secs_f64();
        let _ = if self.colour {
            writeln!(
                std::io::stderr(),
                "\x1b[2m{t:8.3}s\x1b[0m sets3lock: {what}"
            )
        } else {
            writeln!(std::io::stderr(), "{t:8.3}s sets3lock: {what}")
        };
    }

    pub(crate) fn observer(&self) -> Observer {
        let log = self.clone();
        Observer::new(move |o| log.see(o))
    }

    /// How many requests got a reply, and how many got none.
    pub(crate) fn replies(&self) -> (u32, u32) {
        let (answered, unanswered) = &*self.replies;
        (
            answered.load(Ordering::Relaxed),
            unanswered.load(Ordering::Relaxed),
        )
    }

    /// How many operations have failed for good so far (see [`Log::failed_since`]).
    pub(crate) fn failures(&self) -> u32 {
        self.failures.lock().map_or(0, |f| f.0)
    }

    /// What the last failure said, if any failed after `before` (a count from
    /// [`Log::failures`]).
    pub(crate) fn failed_since(&self, before: u32) -> Option<String> {
        let f = self.failures.lock().ok()?;
        (f.0 > before).then(|| f.1.clone()).flatten()
    }

    /// Whether the store check ended without a clear answer.
    pub(crate) fn store_check_unanswered(&self) -> bool {
        self.check_unanswered.load(Ordering::Relaxed)
    }

    fn see(&self, o: Observation<'_>) {
        if let Observation::StoreChecked(None) = o {
            self.check_unanswered.store(true, Ordering::Relaxed);
        }
        if let Observation::Received(_, response, _) = &o {
            let (answered, unanswered) = &*self.replies;
            match response {
                sets3lock::proto::Response::Ambiguous(
                    sets3lock::proto::Ambiguity::Timeout
                    | sets3lock::proto::Ambiguity::Connection { .. }
                    | sets3lock::proto::Ambiguity::NotSent { .. },
                ) => unanswered.fetch_add(1, Ordering::Relaxed),
                _ => answered.fetch_add(1, Ordering::Relaxed),
            };
        }
        if let Observation::Event(_) = &o {
            // A change of the lock's state (a wait for a holder included): the metrics
            // textfile says it, if there is one.
            crate::textfile::changed();
        }
        if let Observation::Event(Event::Failed { error }) = &o {
            if let Ok(mut f) = self.failures.lock() {
                *f = (f.0 + 1, Some(error.to_string()));
            }
        }
        match o {
            Observation::Sending(r) if self.verbose => self.line(&format!(
                "{} {} ({}) {}",
                r.intent.method(),
                self.url,
                r.purpose,
                r.id
            )),
            Observation::Received(r, response, took) if self.verbose => self.line(&format!(
                "{} {:?} in {:.1} ms",
                r.id,
                response,
                took.as_secs_f64() * 1e3
            )),
            Observation::Event(Event::Contended {
                holder,
                etag,
                stale_at,
            }) => {
                let takeover = if stale_at.is_some() {
                    "taken over if it stops renewing for a full lease"
                } else {
                    "never taken over: no lease"
                };
                let resting =
                    matches!(holder, sets3lock::proto::Holder::Sets3lock(r) if r.cooldown);
                let mut complete = false;
                let text = match self.slots {
                    None if resting => format!(
                        "waiting for {}: {} (ETag {})",
                        self.url,
                        crate::holder::describe(holder),
                        etag.as_str()
                    ),
                    None => format!(
                        "waiting for {}: held by {} (ETag {}; {takeover})",
                        self.url,
                        crate::holder::describe(holder),
                        etag.as_str()
                    ),
                    Some(n) => {
                        let this = if resting {
                            crate::holder::describe(holder)
                        } else {
                            format!("{}: {takeover}", crate::holder::describe(holder))
                        };
                        let (all, known) = self.slot_holders(n, etag.as_str(), this);
                        // Said again once, when every slot's holder is known.
                        complete = known == n as usize
                            && !self.said_every_slot.swap(true, Ordering::Relaxed);
                        format!(
                            "waiting for a slot of {}: all {n} are held ({all})",
                            self.url
                        )
                    }
                };
                // Under a semaphore each slot reports its holder: one line says it all.
                let first = match self.waiting_on.lock() {
                    Ok(mut w) => w.replace(text.clone()).is_none(),
                    Err(_) => true,
                };
                if !self.quiet && (first || complete || self.slots.is_none()) {
                    say!("{text}");
                }
            }
            Observation::Event(e) if self.verbose => self.line(&format!("{e:?}")),
            Observation::StoreChecked(found) if self.verbose => self.line(&match found {
                Some(d) => format!("store-check: conditional writes honoured; the store {d}"),
                None => {
                    "store-check: inconclusive (no clear answer); checking again next time".into()
                }
            }),
            // Said whatever the verbosity: something is left in the user's bucket.
            Observation::ProbeLeftBehind { key } => say!(
                "{}: the store check's probe object {key} could not be removed; it holds no lock: delete it once the store allows",
                self.url
            ),
            Observation::ServerClock {
                offset_ms,
                resending,
            } if self.verbose => {
                let how = if offset_ms >= 0 { "ahead of" } else { "behind" };
                let by =
                    crate::output::human(std::time::Duration::from_millis(offset_ms.unsigned_abs()));
                let again = if resending {
                    "; the request it refused for its time is signed again and resent"
                } else {
                    ""
                };
                self.line(&format!(
                    "the server's clock is {by} {how} this machine's (its Date header): signing at the server's time{again}"
                ))
            }
            _ => {}
        }
    }

    /// Notes the holder of one slot (`etag`: its record's; `this`: it described) and lists
    /// the holders of the `n` slots seen last, each with its own clause: "by A: taken over if
    /// it stops renewing for a full lease; by B: never taken over: no lease".
    /// Returns the list and how many holders it names.
    fn slot_holders(&self, n: u32, etag: &str, this: String) -> (String, usize) {
        let Ok(mut seen) = self.slot_holders.lock() else {
            return (format!("by {this}"), 1);
        };
        seen.retain(|(e, _)| e != etag);
        seen.push_back((etag.to_owned(), this));
        while seen.len() > n as usize {
            seen.pop_front();
        }
        let all = seen
            .iter()
            .map(|(_, h)| format!("by {h}"))
            .collect::<Vec<_>>()
            .join("; ");
        (all, seen.len())
    }

    /// Repeats the holder line while the wait goes on.
    pub(crate) fn remind(&self) {
        if self.quiet {
            return;
        }
        if let Ok(w) = self.waiting_on.lock() {
            if let Some(text) = &*w {
                say!("still {text}");
            }
        }
    }

    /// A `-v` line.
    pub(crate) fn note(&self, what: &str) {
        if self.verbose {
            self.line(what);
        }
    }

    /// Warns that a detach (`acquire`, `renew`, `--keep`) kept the hold but could not mark
    /// its record parked, if an operation failed since `before` (a count from
    /// [`Log::failures`]): a release from the handle will then rest the lock.
    pub(crate) fn unparked_since(&self, before: u32, lease: std::time::Duration) {
        if let Some(why) = self.failed_since(before) {
            if lease.is_zero() {
                say!(
                    "{}: the lock stays held, but its record may not have been marked parked ({why}): with lease 0, later --handle runs and releases from this handle then refuse it as in use (exit 111) until `sets3lock unlock --etag` removes it",
                    self.url
                );
            } else {
                say!(
                    "{}: the lock stays held, but its record may not have been marked parked ({why}): a release from this handle may then keep the lock resting for about one lease ({}) instead of freeing it at once",
                    self.url,
                    crate::output::human(lease)
                );
            }
        }
    }

    pub(crate) fn acquired(&self, held: &sets3lock::Held) {
        if self.verbose {
            self.line(&format!("acquired {} as owner {}", self.url, held.owner()));
        }
    }
}
