//! Terraform's and OpenTofu's lock format: a lock configured with `Config::terraform` writes
//! Terraform's seven fields beside its record, keeps them (and the ID) through renewals, and a
//! lock Terraform wrote is never taken over unless `terraform_lease` opts in.

use bytes::Bytes;
use serde_json::Value;
use sets3lock_mock::MockS3;
use sets3lock_proto::{
    terraform_id, Config, ConfigError, Event, Holder, NotAcquired, Record, TerraformFormat,
    TerraformInfo, Wait, TERRAFORM_KEYS,
};

use crate::scenario::*;

/// A body as Terraform 1.15 writes it (the field order and the nanoseconds are Go's).
const TERRAFORM_BODY: &[u8] = br#"{"ID":"2b6c3a1e-8a5e-7c1d-2f0b-3c4d5e6f7a8b","Operation":"OperationTypeApply","Info":"","Who":"alice@ci-7","Version":"1.15.5","Created":"2026-12-07T10:00:00.123456789Z","Path":"state/prod.tfstate"}"#;

#[test]
fn fields_from_the_embedding_are_written_bounded_and_printable() {
    let mut s3 = bucket();
    let cfg = Config {
        terraform: Some(TerraformFormat {
            operation: format!("sets3lock {}\u{1b}[2J", "x".repeat(100_000)),
            ..format()
        }),
        ..config()
    };
    let mut c = Process::new(cfg, 1);
    c.lock.acquire(c.now, 0, Wait::No).unwrap();
    c.run(&mut s3, c.now);
    let tf = record_in(&s3).terraform.expect("Terraform's fields");
    assert_eq!(tf.operation.chars().count(), 200, "clipped");
    assert!(!tf.operation.contains('\u{1b}'));
}

fn format() -> TerraformFormat {
    TerraformFormat {
        who: "alice@build-7".into(),
        operation: "sets3lock deploy.sh".into(),
        path: "state/prod.tfstate".into(),
        version: "sets3lock 9.9.9".into(),
    }
}

fn terraform_config() -> Config {
    Config {
        terraform: Some(format()),
        ..config()
    }
}

fn record_in(s3: &MockS3) -> Record {
    let object = s3.object(B, K).expect("the lock object");
    match Holder::decode(&object.body) {
        Holder::Sets3lock(r) => r,
        other => panic!("our own record must decode as ours: {other:?}"),
    }
}

fn json_in(s3: &MockS3) -> serde_json::Map<String, Value> {
    let object = s3.object(B, K).expect("the lock object");
    match serde_json::from_slice(&object.body) {
        Ok(Value::Object(m)) => m,
        other => panic!("not a JSON object: {other:?}"),
    }
}

#[test]
fn a_hold_in_terraforms_format_fills_its_seven_fields_and_keeps_them_through_renewals() {
    let mut s3 = bucket();
    let mut c = Process::new(terraform_config(), 1);
    c.lock.acquire(c.now, 1_764_500_000_000, Wait::No).unwrap();
    c.run(&mut s3, c.now);
    let first = record_in(&s3);
    let tf = first.terraform.clone().expect("Terraform's fields");
    assert_eq!(
        *tf,
        TerraformInfo {
            id: terraform_id(first.owner),
            operation: "sets3lock deploy.sh".into(),
            info: "held by sets3lock with a lease of 30 s: renewed while it runs, taken over by \
                   sets3lock waiters if it stops renewing"
                .into(),
            who: "alice@build-7".into(),
            version: "sets3lock 9.9.9".into(),
            created: "2025-11-30T10:53:20.000Z".into(),
            path: "state/prod.tfstate".into(),
        }
    );
    // The ID is a version-4 UUID: 8-4-4-4-12 hex digits, version 4, variant 10xx.
    let parts: Vec<&str> = tf.id.split('-').collect();
    assert_eq!(
        parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
        [8, 4, 4, 4, 12]
    );
    assert!(parts[2].starts_with('4'), "{}", tf.id);
    assert!(
        matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'),
        "{}",
        tf.id
    );
    // Every key Terraform reads is there, each a string, as Go's decoder needs.
    let body = json_in(&s3);
    for key in TERRAFORM_KEYS {
        assert!(
            body.get(key).is_some_and(Value::is_string),
            "{key} in {body:?}"
        );
    }

    // Renewals write new bodies (a new ETag each time) with the same seven fields.
    for n in 1..=3 {
        c.run(&mut s3, c.at(secs(11 * n)));
        let again = record_in(&s3);
        assert_eq!(again.seq, 1 + n, "renewal {n} happened");
        assert_eq!(again.terraform.as_ref(), Some(&tf), "renewal {n}");
    }
    c.lock.release(c.now).unwrap();
    c.run(&mut s3, c.now);
    assert!(s3.object(B, K).is_none());
}

#[test]
fn no_key_of_the_record_folds_to_one_of_terraforms() {
    // Go's encoding/json matches keys to fields regardless of case (and folds 'ſ' to 's', the
    // Kelvin sign to 'k'): a key of ours that folded to "id" would overwrite Terraform's ID.
    let mut s3 = bucket();
    let cfg = Config {
        value: Some("10.0.0.7:8080".into()),
        ..terraform_config()
    };
    let mut c = Process::new(cfg, 1);
    c.lock.acquire(c.now, 1_764_500_000_000, Wait::No).unwrap();
    c.run(&mut s3, c.now);
    let body = json_in(&s3);
    let ours: Vec<&String> = body
        .keys()
        .filter(|k| !TERRAFORM_KEYS.contains(&k.as_str()))
        .collect();
    assert!(ours.len() >= 8, "the record's own keys are there: {ours:?}");
    for key in ours {
        assert!(key.is_ascii(), "{key}: only ASCII keys fold by case alone");
        for theirs in TERRAFORM_KEYS {
            assert!(
                !key.eq_ignore_ascii_case(theirs),
                "{key} folds to Terraform's {theirs}"
            );
        }
    }
}

#[test]
fn a_lock_terraform_wrote_is_read_as_such_and_never_taken_over_by_a_foreign_lease() {
    let mut s3 = bucket();
    s3.force(B, K, Some(Bytes::from_static(TERRAFORM_BODY)));
    let cfg = Config {
        foreign_lease: Some(secs(5)),
        ..config()
    };
    let mut c = Process::new(cfg, 1);
    c.lock.acquire(c.now, 0, Wait::Timeout(secs(300))).unwrap();
    c.run(&mut s3, c.at(secs(301)));
    match c.events.first() {
        Some(Event::Contended {
            holder: Holder::Terraform(info),
            stale_at: None,
            ..
        }) => {
            assert_eq!(info.who, "alice@ci-7");
            assert_eq!(info.operation, "OperationTypeApply");
            assert_eq!(info.id, "2b6c3a1e-8a5e-7c1d-2f0b-3c4d5e6f7a8b");
        }
        other => panic!("not read as Terraform's, or given a lease: {other:?}"),
    }
    assert!(
        matches!(
            c.events.last(),
            Some(Event::NotAcquired {
                reason: NotAcquired::TimedOut { .. }
            })
        ),
        "{:?}",
        c.events
    );
    assert_eq!(
        s3.object(B, K).map(|o| o.body.clone()),
        Some(Bytes::from_static(TERRAFORM_BODY)),
        "Terraform's lock is untouched"
    );

    // Its own opt-in takes it over after that long unchanged.
    let cfg = Config {
        terraform_lease: Some(secs(60)),
        ..config()
    };
    let mut c = Process::new(cfg, 2);
    c.now = c.at(secs(400));
    c.lock.acquire(c.now, 0, Wait::Forever).unwrap();
    c.run(&mut s3, c.at(secs(459)));
    assert!(!c.lock.is_held(c.now), "taken before its lease");
    c.run(&mut s3, c.at(secs(461)));
    assert!(c.lock.is_held(c.now), "{:?}", c.events);
}

#[test]
fn a_crashed_holder_in_terraforms_format_is_taken_over_after_its_lease() {
    // The holder writes and dies; a plain sets3lock waiter reads the record's lease there.
    let mut s3 = bucket();
    let mut dead = Process::new(terraform_config(), 1);
    dead.lock.acquire(dead.now, 0, Wait::No).unwrap();
    dead.run(&mut s3, dead.now);
    assert!(record_in(&s3).terraform.is_some());
    let mut c = Process::new(config(), 2);
    c.lock.acquire(c.now, 0, Wait::Forever).unwrap();
    c.run(&mut s3, c.at(secs(29)));
    assert!(
        !c.lock.is_held(c.now),
        "taken over before the lease of 30 s"
    );
    c.run(&mut s3, c.at(secs(32)));
    assert!(c.lock.is_held(c.now), "{:?}", c.events);
}

#[test]
fn terraforms_format_is_refused_without_a_lease_or_when_fenced() {
    let zero = Config {
        lease: secs(0),
        ..terraform_config()
    };
    assert!(matches!(
        zero.validate(),
        Err(ConfigError::TerraformNeedsLease(_))
    ));
    let fenced = Config {
        fenced: true,
        ..terraform_config()
    };
    let e = fenced.validate().expect_err("fenced");
    assert!(e.to_string().contains("fenced"), "{e}");
    assert!(terraform_config().validate().is_ok());
}

#[test]
fn terraform_fields_that_are_not_strings_or_are_missing_are_not_terraforms() {
    // Go cannot decode them either; what cannot be read stays an unknown holder, never taken
    // over without a foreign lease.
    for body in [
        &br#"{"ID":7,"Operation":"o","Info":"","Who":"a@b","Version":"1","Created":"c","Path":"p"}"#[..],
        br#"{"ID":"","Operation":"o","Info":"","Who":"a@b","Version":"1","Created":"c","Path":"p"}"#,
        br#"{"ID":"1","Who":"a@b"}"#, // another tool's body with an ID: not Terraform's
        br#"{"Who":"a@b","Operation":"OperationTypeApply"}"#,
    ] {
        assert!(
            matches!(Holder::decode(body), Holder::Unknown { .. }),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    // A sets3lock record with a key of Terraform's of another type is still a record.
    let record = br#"{"sets3lock":1,"owner":"0123456789abcdef0123456789abcdef","seq":1,"lease_ms":1000,"Version":2}"#;
    assert!(matches!(Holder::decode(record), Holder::Sets3lock(_)));
    // Terminal control characters in a field are dropped before it is shown.
    let sneaky = br#"{"ID":"1","Operation":"o","Info":"","Who":"a\u001b[2Jb","Version":"1","Created":"c","Path":"p"}"#;
    assert_eq!(
        Holder::decode(sneaky).terraform().map(|t| t.who.as_str()),
        Some("a[2Jb")
    );
}
