//! Terraform's and OpenTofu's `.tflock` through the drivers, on the mock in every store's
//! dialect and on every server that takes presence locks: their lock is read as theirs and
//! never taken over (whatever foreign lease is configured); a hold on a `.tflock` key is
//! written in their format with one ID through its renewals; `Client::unlock_id` removes only
//! the lock with that ID, and `Client::unlock_if_stale` only a lock left unrenewed for its
//! lease, never one that declares none. (Real Terraform against these: scripts/test-terraform.sh.)

use crate::conformance::short_lease;
use crate::support;
use crate::support::{fresh_key, Driver, RawAccess, Server};
use sets3lock::blocking::Blocking;
use sets3lock::generic::Tokio;
use sets3lock::proto::{terraform_id, Holder};
use sets3lock::{Client, Error, Unlocked, Wait};
use std::time::{Duration, Instant};

/// Terraform 1.15's S3 lock, as it writes it.
const S3_BODY: &[u8] = br#"{"ID":"22e43534-8fa7-3aa9-810d-3d7afbf2ae6d","Operation":"OperationTypeApply","Info":"","Who":"root@ci-7","Version":"1.15.5","Created":"2026-12-07T23:58:05.787576221Z","Path":"sets3lock-test/demo/terraform.tfstate"}"#;
/// Its GCS backend's (`<prefix>/<workspace>.tflock`; the lock ID it uses is the generation).
const GCS_BODY: &[u8] = br#"{"ID":"5d0b2c61-0c4e-9a53-2f1d-7e6a3b9c0d12","Operation":"OperationTypePlan","Info":"","Who":"bob@laptop","Version":"1.15.5","Created":"2026-12-07T10:00:00.5Z","Path":"gs://state/prod/default.tflock"}"#;

/// Terraform's own lock: read as Terraform's (status, a busy try), never taken over, even
/// by a waiter configured with a foreign lease; `unlock_if_stale` refuses it, `unlock_id`
/// removes it by its ID only.
fn terraforms_lock_is_theirs<D: Driver>(s: &Server) {
    let client = Client::new(&s.url(""), &s.options()).expect("client");
    for (body, operation) in [
        (S3_BODY, "OperationTypeApply"),
        (GCS_BODY, "OperationTypePlan"),
    ] {
        let key = format!("{}.tflock", fresh_key("terraform"));
        s.raw_put(&key, body);
        let (_, holder) = client.status(&key).expect("status").expect("held");
        match &holder {
            Holder::Terraform(info) => assert_eq!(info.operation, operation, "{}", s.name),
            other => panic!("{}: not read as Terraform's: {other:?}", s.name),
        }
        match D::acquire(&s.url(&key), s.options(), Wait::No).map(|h| h.owner()) {
            Err(Error::Busy { holder, .. }) => {
                assert!(
                    matches!(*holder, Holder::Terraform(_)),
                    "{}: {holder:?}",
                    s.name
                )
            }
            other => panic!("{}: a try-once was not refused: {other:?}", s.name),
        }
        let mut foreign = short_lease(s, Duration::from_secs(1));
        foreign.lock.foreign_lease = Some(Duration::from_millis(300));
        match D::acquire(&s.url(&key), foreign, Wait::Timeout(Duration::from_secs(2)))
            .map(|h| h.owner())
        {
            Err(Error::TimedOut { .. }) => {}
            other => panic!(
                "{}: a foreign lease took Terraform's lock: {other:?}",
                s.name
            ),
        }
        match client.unlock_if_stale(&key, |_| {}) {
            Err(Error::NoLease { .. }) => {}
            other => panic!(
                "{}: --if-stale of a lock without a lease: {other:?}",
                s.name
            ),
        }
        let wrong = "00000000-0000-4000-8000-000000000000";
        assert!(
            matches!(client.unlock_id(&key, wrong), Ok(Unlocked::Changed { .. })),
            "{}: another ID",
            s.name
        );
        assert_eq!(
            s.raw_get(&key).map(|(_, b)| b),
            Some(body.to_vec()),
            "{}: left as it was",
            s.name
        );
        let id = holder.terraform().expect("its info").id.clone();
        assert_eq!(
            client.unlock_id(&key, &id).expect("unlock"),
            Unlocked::Deleted,
            "{}",
            s.name
        );
        assert!(s.raw_get(&key).is_none(), "{}: removed", s.name);
    }
}

/// A hold on a `.tflock` key is written in Terraform's format, with the hold's owner as its
/// ID through every renewal; `unlock_id` with that ID ends it (the holder learns it lost the
/// lock at its next renewal).
fn a_tflock_hold_keeps_its_id_and_unlock_id_ends_it<D: Driver>(s: &Server) {
    let client = Client::new(&s.url(""), &s.options()).expect("client");
    let key = format!("{}/default.tfstate.tflock", fresh_key("hold"));
    let held = D::acquire(
        &s.url(&key),
        short_lease(s, Duration::from_millis(1500)),
        Wait::No,
    )
    .expect("acquire");
    let id = terraform_id(held.owner());
    let (first, holder) = client.status(&key).expect("status").expect("held");
    let info = holder.terraform().expect("Terraform's fields").clone();
    assert_eq!(info.id, id, "{}", s.name);
    assert!(
        info.path.ends_with("/default.tfstate"),
        "{}: {info:?}",
        s.name
    );
    // After a renewal (every 500 ms): a new version, the same fields.
    let deadline = Instant::now() + Duration::from_secs(5);
    let renewed = loop {
        let (etag, holder) = client.status(&key).expect("status").expect("held");
        if etag != first {
            break holder;
        }
        assert!(
            Instant::now() < deadline,
            "{}: no renewal within 5 s",
            s.name
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(renewed.terraform(), Some(&info), "{}", s.name);
    assert_eq!(
        client.unlock_id(&key, &id).expect("unlock"),
        Unlocked::Deleted,
        "{}",
        s.name
    );
    assert!(
        D::wait_lost(&held, Duration::from_secs(5)).is_some(),
        "{}: the holder did not learn of the force-unlock",
        s.name
    );
}

/// A crashed holder (a record with a lease, never renewed) is removed by `unlock_if_stale`,
/// not before its lease; a live one is left alone.
fn unlock_if_stale_waits_out_the_lease<D: Driver>(s: &Server) {
    let client = Client::new(&s.url(""), &s.options()).expect("client");
    let key = format!("{}.tflock", fresh_key("stale"));
    let held = D::acquire(
        &s.url(&key),
        short_lease(s, Duration::from_millis(1500)),
        Wait::No,
    )
    .expect("acquire");
    // Alive: it renews within the lease, so the lock is left.
    match client.unlock_if_stale(&key, |_| {}) {
        Ok(Unlocked::Changed { .. }) => {}
        other => panic!("{}: a live holder was not left alone: {other:?}", s.name),
    }
    assert!(held.is_held(), "{}", s.name);
    D::release(held).expect("release");
    // Crashed: its last record stays. A plain, a resting, a let-go and a fenced one: each is
    // removed (the fenced one freed, its token kept) a lease after it was first read.
    let lease = Duration::from_millis(1000);
    for (what, cooldown, parked, fence) in [
        ("plain", false, false, None),
        ("resting", true, false, None),
        ("let go", false, true, None),
        (
            "fenced",
            false,
            false,
            Some(sets3lock::proto::Fence {
                state: sets3lock::proto::LockState::Held,
                token: 41,
            }),
        ),
    ] {
        let body = sets3lock::proto::Record {
            owner: sets3lock::proto::OwnerId::from_u128(7),
            seq: 1,
            lease,
            host: "crashed".into(),
            pid: 1,
            acquired_unix_ms: 0,
            written_unix_ms: 0,
            fence,
            value: None,
            writer: None,
            cooldown,
            parked,
            terraform: None,
        }
        .encode();
        s.raw_put(&key, &body);
        let started = Instant::now();
        let want = match fence {
            None => Unlocked::Deleted,
            Some(_) => Unlocked::Freed { token: 41 },
        };
        assert_eq!(
            client.unlock_if_stale(&key, |_| {}).expect("unlock"),
            want,
            "{} {what}",
            s.name
        );
        assert!(
            started.elapsed() >= lease,
            "{} {what}: removed after {:?}, before its lease",
            s.name,
            started.elapsed()
        );
        s.raw_delete(&key);
    }
}

fn terraform_scenarios<D: Driver>(s: &Server) {
    terraforms_lock_is_theirs::<D>(s);
    a_tflock_hold_keeps_its_id_and_unlock_id_ends_it::<D>(s);
    unlock_if_stale_waits_out_the_lease::<D>(s);
}

#[test]
fn terraforms_locks_on_the_mock_in_every_dialect_through_both_drivers() {
    #[allow(unused_mut)] // Azure's and GCS's are added with their features
    let mut servers = vec![support::mock(404), support::mock(412)];
    #[cfg(feature = "azure")]
    servers.push(support::mock_azure(404));
    #[cfg(feature = "gcs")]
    servers.push(support::mock_gcs());
    for s in servers {
        terraform_scenarios::<Tokio>(&s);
        terraform_scenarios::<Blocking>(&s);
    }
}

#[test]
fn terraforms_locks_on_every_server_that_takes_presence_locks() {
    #[allow(unused_mut)]
    let mut servers: Vec<Server> = ["seaweedfs", "ministack", "moto"]
        .into_iter()
        .filter_map(support::real)
        .collect();
    #[cfg(feature = "azure")]
    servers.extend(support::azurite());
    for s in servers {
        terraform_scenarios::<Tokio>(&s);
        terraform_scenarios::<Blocking>(&s);
    }
}

/// fake-gcs-server ignores DELETE's condition, so presence locks are refused there: reading
/// Terraform's GCS lock is what a gs:// user gets (status, and a waiter that never takes it).
#[cfg(feature = "gcs")]
#[test]
fn terraforms_gcs_lock_is_read_on_fake_gcs() {
    let Some(s) = support::fake_gcs() else {
        return;
    };
    let client = Client::new(&s.url(""), &s.options()).expect("client");
    let key = format!("{}/default.tflock", fresh_key("prod"));
    s.raw_put(&key, GCS_BODY);
    let (_, holder) = client.status(&key).expect("status").expect("held");
    assert!(matches!(holder, Holder::Terraform(_)), "{holder:?}");
    let mut fenced = short_lease(&s, Duration::from_secs(1));
    fenced.lock.fenced = true;
    fenced.lock.foreign_lease = Some(Duration::from_millis(300));
    // (Terraform's format is refused with --fenced; a .tflock key then asks for sets3lock's.)
    let mut options = fenced.clone();
    options.lock_format = sets3lock::LockFormat::Sets3lock;
    match Blocking::acquire(&s.url(&key), options, Wait::Timeout(Duration::from_secs(2))) {
        Err(Error::TimedOut { .. }) => {}
        other => panic!("Terraform's GCS lock was taken: {other:?}"),
    }
    match Blocking::acquire(&s.url(&key), fenced, Wait::No) {
        Err(Error::Config(e)) => assert!(e.to_string().contains("Terraform"), "{e}"),
        other => panic!("Terraform's format with --fenced was not refused: {other:?}"),
    }
}
