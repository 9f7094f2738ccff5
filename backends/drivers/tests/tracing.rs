//! With the `tracing` feature (`cargo test -p sets3lock --features tracing --test tracing`):
//! `Observer::tracing()` turns a lock's life into `tracing` events inside a span named after
//! the lock, at the levels its docs give.
#![cfg(feature = "tracing")]

mod support;

use sets3lock::{blocking::Locker, Observer, Wait};
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// What was seen: (level, message, the `event` field, the enclosing span's `lock` field).
type Seen = Arc<Mutex<Vec<(Level, String, String, String)>>>;

struct Record(Seen);

#[derive(Default)]
struct Fields {
    message: String,
    event: String,
    lock: String,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let v = format!("{value:?}");
        match field.name() {
            "message" => self.message = v,
            "event" => self.event = v,
            "lock" => self.lock = v,
            _ => {}
        }
    }
}

/// The span's `lock` field, kept in the span's extensions.
struct LockField(String);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Record {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(LockField(fields.lock));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let lock = ctx
            .event_span(event)
            .and_then(|s| s.extensions().get::<LockField>().map(|l| l.0.clone()))
            .unwrap_or_default();
        let level = *event.metadata().level();
        if let Ok(mut seen) = self.0.lock() {
            seen.push((level, fields.message, fields.event, lock));
        }
    }
}

#[test]
fn a_locks_life_as_tracing_events_in_its_span() {
    let seen: Seen = Arc::default();
    let subscriber = tracing_subscriber::registry().with(Record(seen.clone()));
    tracing::subscriber::set_global_default(subscriber).expect("subscriber");
    let s = support::mock(404);
    let url = s.url(&support::fresh_key("tracing"));
    let mut options = s.options();
    options.observer = Some(Observer::tracing());
    let locker = Locker::new(&url, options).expect("locker");
    let held = locker.acquire(Wait::No).expect("acquire");
    held.release().expect("release");
    let seen = seen.lock().expect("seen").clone();
    let in_span: Vec<_> = seen.iter().filter(|(.., lock)| *lock == url).collect();
    assert!(
        in_span
            .iter()
            .any(|(l, m, ..)| *l == Level::DEBUG && m == "sending"),
        "{seen:?}"
    );
    assert!(in_span
        .iter()
        .any(|(l, m, ..)| *l == Level::DEBUG && m == "received"));
    let acquired = in_span
        .iter()
        .find(|(_, m, e, _)| m == "lock event" && e.starts_with("Acquired"));
    assert!(matches!(acquired, Some((Level::INFO, ..))), "{seen:?}");
    assert!(in_span
        .iter()
        .any(|(l, _, e, _)| *l == Level::INFO && e.starts_with("Released")));
}
