//! The exact edges of every parser and validator the core has: the last value accepted and
//! the first refused, on each side, and the inputs that once could panic.

use core::time::Duration;
use sets3lock_proto::{Backoff, Config, ETag, Holder, LockUrl, OwnerId, Record};

#[test]
fn etags_are_1_to_1024_header_safe_bytes_quoted_or_not() {
    let ok = |s: &str| ETag::parse(s).map(|e| e.as_str().to_owned());
    assert_eq!(ok("abc").as_deref(), Ok("abc"));
    assert_eq!(ok("\"abc\"").as_deref(), Ok("abc"));
    assert_eq!(
        ok("W/\"abc\"").as_deref(),
        Ok("abc"),
        "weak: kept as its value"
    );
    assert_eq!(
        ok(" \t\"abc\"\t ").as_deref(),
        Ok("abc"),
        "spaces and tabs trimmed"
    );
    assert_eq!(ok("!").as_deref(), Ok("!"), "0x21, the lowest byte allowed");
    assert_eq!(ok("~").as_deref(), Ok("~"), "0x7e, the highest");
    // Refused, and never a panic: a lone quote, an empty pair, nothing at all.
    for bad in [
        "", "\"", "\"\"", "W/", "W/\"\"", " ", "a b", "a\"b", "\u{7f}", "é", "a\u{0}",
    ] {
        assert!(ETag::parse(bad).is_err(), "{bad:?} was accepted");
    }
    let longest = "e".repeat(1024);
    assert_eq!(ok(&longest).map(|s| s.len()), Ok(1024));
    assert_eq!(ok(&format!("\"{longest}\"")).map(|s| s.len()), Ok(1024));
    assert!(ETag::parse(&"e".repeat(1025)).is_err());
    let e = ETag::parse(&"e".repeat(5000)).expect_err("too long");
    assert!(e.value.len() <= 80, "the error keeps a short preview");
    assert_eq!(
        ETag::parse("abc").map(|e| e.header_value()),
        Ok("\"abc\"".into())
    );
}

#[test]
fn lock_settings_have_exact_bounds() {
    let with = |f: &dyn Fn(&mut Config)| {
        let mut c = Config::default();
        f(&mut c);
        c.validate()
    };
    assert!(
        with(&|c| c.lease = Duration::ZERO).is_ok(),
        "0: never expires"
    );
    assert!(with(&|c| c.lease = Duration::from_millis(10)).is_ok());
    assert!(with(&|c| c.lease = Duration::from_micros(9_999)).is_err());
    assert!(with(&|c| c.lease = Duration::from_nanos(1)).is_err());
    assert!(with(&|c| c.max_drift_ppm = 99_999).is_ok());
    assert!(with(&|c| c.max_drift_ppm = 100_000).is_err());
    let ms = Duration::from_millis;
    for set in [
        |c: &mut Config, b: Backoff| c.poll = b,
        |c: &mut Config, b: Backoff| c.retry = b,
    ] {
        assert!(
            with(&|c| set(c, Backoff::new(ms(5), ms(5)))).is_ok(),
            "floor == cap"
        );
        assert!(
            with(&|c| set(c, Backoff::new(ms(6), ms(5)))).is_err(),
            "floor > cap"
        );
        assert!(
            with(&|c| set(c, Backoff::new(Duration::ZERO, ms(5)))).is_err(),
            "zero floor"
        );
        assert!(with(&|c| set(c, Backoff::new(Duration::from_nanos(1), ms(5)))).is_ok());
    }
    // Each refusal names what to fix.
    let e = with(&|c| c.lease = ms(1)).expect_err("short").to_string();
    assert!(e.contains("at least 10ms"), "{e}");
    let e = with(&|c| c.max_drift_ppm = 200_000)
        .expect_err("drift")
        .to_string();
    assert!(e.contains("100000"), "{e}");
    let e = with(&|c| c.retry = Backoff::new(ms(9), ms(1)))
        .expect_err("backoff")
        .to_string();
    assert!(e.contains("retry") && e.contains("floor <= cap"), "{e}");
}

#[test]
fn validity_is_the_lease_shrunk_by_the_drift_bound_both_ways() {
    let c = |lease_ms: u64, ppm: u32| {
        Config {
            lease: Duration::from_millis(lease_ms),
            max_drift_ppm: ppm,
            ..Config::default()
        }
        .validity()
    };
    assert_eq!(c(60_000, 0), Duration::from_secs(60));
    // 60 s × 0.99 / 1.01 = 58.811881188 s
    assert_eq!(c(60_000, 10_000), Duration::from_nanos(58_811_881_188));
    assert_eq!(c(0, 10_000), Duration::ZERO);
    assert_eq!(Config::default().renew_interval(), Duration::from_secs(20));
}

#[test]
fn bucket_names_are_3_to_63_lower_case_letters_digits_dots_and_hyphens() {
    let url = |bucket: &str| LockUrl::parse(&format!("s3://{bucket}/k"));
    assert!(url("abc").is_ok());
    assert!(url("ab").is_err());
    assert!(url(&"a".repeat(63)).is_ok());
    assert!(url(&"a".repeat(64)).is_err());
    assert!(url("a-b.c9").is_ok());
    assert!(
        url("9bc").is_ok() && url("ab9").is_ok(),
        "digits at either end"
    );
    for bad in [
        "-abc", "abc-", ".abc", "abc.", "Abc", "ab_c", "ab c", "ab/c",
    ] {
        assert!(url(bad).is_err(), "{bad:?} was accepted");
    }
    let e = url("My_Bucket").expect_err("upper case").to_string();
    assert!(e.contains("My_Bucket") && e.contains("lower-case"), "{e}");
}

#[test]
fn keys_are_1_to_1024_bytes_counted_in_bytes() {
    let url = |key: &str| LockUrl::parse(&format!("s3://bucket/{key}"));
    assert!(url(&"k".repeat(1024)).is_ok());
    assert!(url(&"k".repeat(1025)).is_err());
    // Two bytes each in UTF-8: 512 fit, 513 do not.
    assert!(url(&"é".repeat(512)).is_ok());
    assert!(url(&"é".repeat(513)).is_err());
    assert!(url("").is_err());
    let e = url(&"k".repeat(2000)).expect_err("long").to_string();
    assert!(e.len() < 400, "the error quotes a short preview: {e}");
}

#[test]
fn owner_ids_are_exactly_32_hex_digits() {
    let id = OwnerId::from_u128(0xabc);
    let text = id.to_string();
    assert_eq!(text.len(), 32);
    assert_eq!(text.parse::<OwnerId>(), Ok(id));
    assert_eq!(
        "ffffffffffffffffffffffffffffffff".parse::<OwnerId>(),
        Ok(OwnerId::from_u128(u128::MAX))
    );
    for bad in [
        "abc",
        "",
        "0000000000000000000000000000000",   // 31
        "000000000000000000000000000000000", // 33
        "+0000000000000000000000000000000",  // a sign u128 parsing would take
        "g0000000000000000000000000000000",
    ] {
        assert!(bad.parse::<OwnerId>().is_err(), "{bad:?} was accepted");
    }
}

/// A record's body, padded with spaces (which JSON ignores) to exactly `len` bytes.
fn padded(len: usize) -> Vec<u8> {
    let record = Record {
        owner: OwnerId::from_u128(7),
        seq: 1,
        lease: Duration::from_secs(60),
        host: "h".into(),
        pid: 1,
        acquired_unix_ms: 0,
        written_unix_ms: 0,
        fence: None,
        value: None,
        writer: None,
        cooldown: false,
        parked: false,
        terraform: None,
    };
    let mut body = record.encode().to_vec();
    assert!(body.len() <= len);
    body.resize(len, b' ');
    body
}

#[test]
fn records_are_read_up_to_64_kib_exactly() {
    assert!(matches!(
        Holder::decode(&padded(64 * 1024)),
        Holder::Sets3lock(_)
    ));
    match Holder::decode(&padded(64 * 1024 + 1)) {
        Holder::Unknown { len, .. } => assert_eq!(len, 64 * 1024 + 1),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unknown_body_is_described_by_a_printable_preview() {
    let body = b"garbage\x00\x01 in the lock object";
    match Holder::decode(body) {
        Holder::Unknown { len, preview } => {
            assert_eq!(len, body.len());
            assert!(preview.starts_with("garbage"), "{preview:?}");
            assert!(!preview.contains('\u{0}'), "{preview:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn keys_that_http_would_rewrite_or_that_name_folders_are_refused() {
    let url = |key: &str| LockUrl::parse(&format!("s3://bucket/{key}"));
    for bad in [
        "a/./b", "a/../b", "./k", "../k", "k/.", "k/..", "dir/", "a\u{7}b", "a\nb",
    ] {
        assert!(url(bad).is_err(), "{bad:?} was accepted");
    }
    for good in ["a/.b", "a/..b", "a/b.", ".k", "a b", "a/b/c"] {
        assert!(url(good).is_ok(), "{good:?} was refused");
    }
}

#[test]
fn a_lock_url_and_an_etag_read_and_print_back_the_same() {
    let url = LockUrl::parse("s3://my-bucket/locks/nightly job").expect("url");
    assert_eq!(url.bucket(), "my-bucket");
    assert_eq!(url.key(), "locks/nightly job");
    assert_eq!(url.to_string(), "s3://my-bucket/locks/nightly job");
    assert_eq!(LockUrl::parse(&url.to_string()), Ok(url));
    let etag = ETag::parse("\"abc\"").expect("etag");
    assert_eq!(etag.to_string(), "\"abc\"", "printed as sent: quoted");
}
