//! The store a URL names, picked by its scheme: `s3://`, `az://` (feature `azure`) or `gs://`
//! (feature `gcs`).

use crate::driver::http::Io;
use crate::driver::store::Store;
use crate::s3::store::S3Store;
use crate::{Error, Options};
use sets3lock_proto::Scheme;
use std::sync::Arc;

/// `s3://bucket/-` from `s3://bucket`, `s3://bucket/` or `s3://bucket/any/key` (likewise for
/// the other schemes), with a placeholder key (a lock URL needs one).
pub(crate) fn bucket_url(url: &str) -> String {
    // A bare bucket name is an S3 bucket.
    let (scheme, rest) = url.split_once("://").unwrap_or(("s3", url));
    let bucket = rest.split('/').next().unwrap_or(rest);
    format!("{scheme}://{bucket}/-")
}

/// The bucket (or container) `bucket` of the store `scheme`, reached as `options` say, through
/// the HTTP client of `io`'s mode.
pub(crate) fn open_store(
    scheme: Scheme,
    bucket: &str,
    options: &Options,
    io: Io,
) -> Result<Arc<dyn Store>, Error> {
    match scheme {
        Scheme::S3 => Ok(Arc::new(S3Store::open(bucket, options, io)?)),
        #[cfg(feature = "azure")]
        Scheme::Azure => Ok(Arc::new(crate::azure::store::AzureStore::open(
            bucket, options, io,
        )?)),
        #[cfg(feature = "gcs")]
        Scheme::Gcs => Ok(Arc::new(crate::gcs::store::GcsStore::open(
            bucket, options, io,
        )?)),
        #[allow(unreachable_patterns)] // with every store's feature on
        other => Err(Error::Settings(crate::SettingsError::StoreNotBuilt {
            scheme: other,
        })),
    }
}
