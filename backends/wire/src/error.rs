//! What the builders refuse: arguments no request can be made from.

/// Why no request could be built. Each names the argument to fix; none is a store's answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The endpoint is not an `http` or `https` URL with a host.
    #[error("the endpoint {endpoint:?} is not usable ({reason}): give a URL such as https://s3.us-east-1.amazonaws.com")]
    Endpoint {
        /// The endpoint as given.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A bucket or container name the store's addressing cannot carry.
    #[error("the bucket or container name {name:?} is not usable: {reason}")]
    Bucket {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The signing time is before 1970 or after the year 9999.
    #[error("the time to sign at is out of range: pass the server's time, near now")]
    Time,
    /// A value given to sign with (a token, a key's id) cannot be sent in a header.
    #[error("the {name} cannot be sent in an HTTP header (a line break or a control character?): check where it came from")]
    Header {
        /// Which value.
        name: &'static str,
    },
    /// The request's URL is not a URI the `http` crate accepts.
    #[error("the request's URL cannot be sent as an HTTP URI: check the key and the endpoint")]
    Uri,
}
