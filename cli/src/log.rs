//! What the command says on stderr: the holder while waiting (unless `-q`), and with `-v`
//! every request, reply and decision (dimmed timestamps only on a terminal).

use sets3lock::{Event, LockUrl};
use sets3lock_s3::{Observation, Observer};
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::Instant;

#[derive(Clone)]
pub(crate) struct Log {
    verbose: bool,
    quiet: bool,
    colour: bool,
    url: LockUrl,
    started: Instant,
    waiting_on: Arc<Mutex<Option<String>>>,
}

impl Log {
    pub(crate) fn new(verbose: bool, quiet: bool, url: LockUrl) -> Log {
        Log {
            verbose,
            quiet,
            colour: std::io::stderr().is_terminal(),
            url,
            started: Instant::now(),
            waiting_on: Arc::new(Mutex::new(None)),
        }
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

    fn see(&self, o: Observation<'_>) {
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
                let text = format!(
                    "waiting for {}: held by {} (ETag {}; {takeover})",
                    self.url,
                    crate::holder::describe(holder),
                    etag.as_str()
                );
                if let Ok(mut w) = self.waiting_on.lock() {
                    *w = Some(text.clone());
                }
                if !self.quiet {
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
            _ => {}
        }
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

    pub(crate) fn acquired(&self, held: &sets3lock_s3::tokio::Held) {
        if self.verbose {
            self.line(&format!("acquired {} as owner {}", self.url, held.owner()));
        }
    }
}
