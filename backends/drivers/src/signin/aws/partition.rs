//! AWS partitions: the domain a region's endpoints live under (`s3.cn-north-1.amazonaws.com.cn`),
//! as the SDKs' partition table gives it. A region outside every known partition is in the
//! standard one, as the SDKs assume.

/// The DNS suffix of `region`'s partition.
pub(crate) fn dns_suffix(region: &str) -> &'static str {
    // Longest prefixes first: `us-isob-` and `us-isof-` are not `us-iso-`, nor `us-gov-`.
    const PARTITIONS: [(&str, &str); 7] = [
        ("cn-", "amazonaws.com.cn"),
        ("us-gov-", "amazonaws.com"),
        ("us-isob-", "sc2s.sgov.gov"),
        ("us-isof-", "csp.hci.ic.gov"),
        ("us-iso-", "c2s.ic.gov"),
        ("eu-isoe-", "cloud.adc-e.uk"),
        ("eusc-", "amazonaws.eu"),
    ];
    PARTITIONS
        .iter()
        .find(|(prefix, _)| region.starts_with(prefix))
        .map_or("amazonaws.com", |(_, suffix)| suffix)
}

/// `https://{service}.{region}.{suffix}`: a service's regional endpoint, or why `region` cannot
/// be part of a host name (it comes from a variable or a file; `evil.example/#` must not move
/// the request elsewhere).
pub(crate) fn endpoint(service: &str, region: &str) -> Result<String, String> {
    let label = !region.is_empty()
        && region.len() <= 63
        && region
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !region.starts_with('-')
        && !region.ends_with('-');
    if !label {
        return Err(format!(
            "the region {region:?} is not a region's name (such as eu-west-1): set AWS_REGION"
        ));
    }
    Ok(format!("https://{service}.{region}.{}", dns_suffix(region)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_partition_s_regions_get_its_domain() {
        for (region, suffix) in [
            ("us-east-1", "amazonaws.com"),
            ("eu-west-1", "amazonaws.com"),
            ("il-central-1", "amazonaws.com"),
            ("us-gov-west-1", "amazonaws.com"),
            ("cn-north-1", "amazonaws.com.cn"),
            ("cn-northwest-1", "amazonaws.com.cn"),
            ("us-iso-east-1", "c2s.ic.gov"),
            ("us-isob-east-1", "sc2s.sgov.gov"),
            ("us-isof-south-1", "csp.hci.ic.gov"),
            ("eu-isoe-west-1", "cloud.adc-e.uk"),
            ("eusc-de-east-1", "amazonaws.eu"),
            ("xx-new-9", "amazonaws.com"),
        ] {
            assert_eq!(dns_suffix(region), suffix, "{region}");
        }
        assert_eq!(
            endpoint("sts", "cn-north-1").as_deref(),
            Ok("https://sts.cn-north-1.amazonaws.com.cn")
        );
    }

    #[test]
    fn a_region_that_is_not_a_host_label_is_refused() {
        for bad in [
            "",
            "evil.example/#",
            "EU-WEST-1",
            "-x",
            "x-",
            "a b",
            &"a".repeat(64),
        ] {
            let e = endpoint("sts", bad).expect_err(bad);
            assert!(e.contains("set AWS_REGION"), "{e}");
        }
        assert!(endpoint("s3", "x").is_ok());
    }
}
