//! Lock URLs on the three stores: `s3://`, `az://` and `gs://`, each with its store's rules for
//! the bucket or container name, the same rules for keys, and errors that name the store.

use sets3lock_proto::{LockUrl, Scheme, UrlError};

#[test]
fn each_scheme_parses_case_insensitively_and_prints_as_itself() {
    for (input, scheme, printed) in [
        (
            "s3://my-bucket/locks/job",
            Scheme::S3,
            "s3://my-bucket/locks/job",
        ),
        ("AZ://locks/job", Scheme::Azure, "az://locks/job"),
        (
            "Gs://my_bucket.example.com/a b",
            Scheme::Gcs,
            "gs://my_bucket.example.com/a b",
        ),
    ] {
        let url = LockUrl::parse(input).expect(input);
        assert_eq!(url.scheme(), scheme);
        assert_eq!(url.to_string(), printed);
        assert_eq!(LockUrl::parse(printed), Ok(url.clone()));
        assert_eq!(LockUrl::in_store(scheme, url.bucket(), url.key()), Ok(url));
    }
    assert_eq!(
        LockUrl::new("my-bucket", "k").map(|u| u.scheme()),
        Ok(Scheme::S3)
    );
    // The same names on two stores are two locks.
    assert_ne!(LockUrl::parse("s3://abc/k"), LockUrl::parse("gs://abc/k"));
    for s in [Scheme::S3, Scheme::Azure, Scheme::Gcs] {
        assert_eq!(s.to_string(), s.as_str());
    }
}

#[test]
fn another_scheme_is_refused_with_the_three_forms() {
    let e = LockUrl::parse("abfss://c@acct.dfs.core.windows.net/k").expect_err("abfss");
    assert!(matches!(e, UrlError::WrongScheme { .. }));
    assert_eq!(
        e.to_string(),
        "unsupported scheme \"abfss\": write s3://BUCKET/KEY (S3 and S3-compatible stores: set \
         the endpoint separately), az://CONTAINER/KEY (Azure Blob Storage) or gs://BUCKET/KEY \
         (Google Cloud Storage)"
    );
}

#[test]
fn azure_container_names_follow_azures_rules() {
    let url = |c: &str| LockUrl::parse(&format!("az://{c}/k"));
    for good in ["abc", "a-b-c", "9lives", &"a".repeat(63), "abc9"] {
        assert!(url(good).is_ok(), "{good:?} was refused");
    }
    for bad in [
        "ab",
        &"a".repeat(64),
        "-abc",
        "abc-",
        "a--b",
        "Abc",
        "a_bc",
        "a.bc",
        "$root",
    ] {
        let e = url(bad).expect_err(bad);
        assert!(
            matches!(e, UrlError::InvalidBucket { .. })
                && e.to_string().contains("Azure container names"),
            "{bad:?}: {e}"
        );
    }
    assert_eq!(
        url("").expect_err("empty").to_string(),
        "the URL has no container name: write it as az://CONTAINER/KEY"
    );
    assert_eq!(
        LockUrl::parse("az://locks")
            .expect_err("no blob")
            .to_string(),
        "az://locks has no object name: name the lock object, for example az://locks/locks/job"
    );
}

#[test]
fn gcs_bucket_names_follow_gcss_rules() {
    let url = |b: &str| LockUrl::parse(&format!("gs://{b}/k"));
    let dotted = format!("{}.{}.{}", "a".repeat(63), "b".repeat(63), "c".repeat(63));
    let longest = format!("{dotted}.{}", "d".repeat(30)); // 222 characters
    for good in [
        "abc",
        "a_b-c",
        "a.b.c",
        "9lives",
        &"a".repeat(63),
        &dotted,
        &longest,
    ] {
        assert!(url(good).is_ok(), "{good:?} was refused");
    }
    let too_long = format!("{dotted}.{}", "d".repeat(31)); // 223 characters
    let long_part = format!("{}.b", "a".repeat(64));
    for bad in [
        "ab",
        &"a".repeat(64),
        &too_long,
        &long_part,
        "_abc",
        "abc_",
        "-abc",
        ".abc",
        "abc.",
        "Abc",
        "goog-locks",
        "googlocks",
        "a b",
    ] {
        let e = url(bad).expect_err(bad);
        assert!(
            matches!(e, UrlError::InvalidBucket { .. })
                && e.to_string().contains("GCS bucket names"),
            "{bad:?}: {e}"
        );
    }
    assert_eq!(
        url("").expect_err("empty").to_string(),
        "the URL has no bucket name: write it as gs://BUCKET/KEY"
    );
    assert!(
        url("my-goog-bucket").is_ok(),
        "only a leading goog is refused"
    );
}

#[test]
fn keys_follow_the_same_rules_on_every_store() {
    for scheme in ["s3", "az", "gs"] {
        let url = |key: &str| LockUrl::parse(&format!("{scheme}://bucket/{key}"));
        assert!(url(&"k".repeat(1024)).is_ok(), "{scheme}");
        assert!(url(&"é".repeat(512)).is_ok(), "{scheme}");
        for bad in [
            "k".repeat(1025),
            "é".repeat(513),
            "a\nb".into(),
            "a/../b".into(),
            "./a".into(),
            "dir/".into(),
        ] {
            assert!(
                matches!(url(&bad), Err(UrlError::InvalidKey { .. })),
                "{scheme}: {bad:?}"
            );
        }
    }
    // S3's own words stay S3's.
    let e = LockUrl::parse(&format!("s3://bucket/{}", "k".repeat(1025))).expect_err("long");
    assert!(
        e.to_string()
            .contains("S3 keys are at most 1024 bytes long"),
        "{e}"
    );
    let e = LockUrl::parse(&format!("gs://bucket/{}", "k".repeat(1025))).expect_err("long");
    assert!(
        e.to_string()
            .contains("object names are at most 1024 bytes long"),
        "{e}"
    );
}

#[test]
fn keys_azure_or_gcs_cannot_name_are_refused_with_the_reason() {
    for (url, says) in [
        ("az://locks/job.", "Azure drops a '.'"),
        ("az://locks/a./b", "Azure drops a '.'"),
        (
            "gs://my-bucket/.well-known/acme-challenge/x",
            "acme-challenge",
        ),
    ] {
        let e = LockUrl::parse(url).expect_err(url).to_string();
        assert!(e.contains(says), "{url}: {e}");
    }
    // The same keys are fine where the store can name them.
    for url in [
        "s3://my-bucket/job.",
        "gs://my-bucket/job.",
        "az://locks/.well-known/acme-challenge/x",
    ] {
        assert!(LockUrl::parse(url).is_ok(), "{url}");
    }
}
