//! Amazon S3 and S3-compatible stores: the reply table.
//!
//! The same function as [`crate::classify`], under the name the other stores' tables use
//! ([`crate::azure::classify`], [`crate::gcs::classify`]), so that drivers read alike.
//!
//! ```
//! use http::{HeaderMap, StatusCode};
//! use sets3lock_proto::{IntentKind, Response};
//! let r = sets3lock_proto::s3::classify(IntentKind::PutIfMatch, StatusCode::PRECONDITION_FAILED, &HeaderMap::new(), b"");
//! assert_eq!(r, Response::Mismatch);
//! ```

pub use crate::classify::classify;
