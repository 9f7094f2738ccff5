//! What `Held` and `AsyncHeld` both show of a hold (its URL, owner, token, slot, version,
//! health), written once: `hold_face!` makes a class's one `#[pymethods]` block from these
//! and the methods of its own (the blocking or the awaitable ones).

/// `hold_face! { Held { ...its own methods... } }`: the `#[pymethods]` block of a class with a
/// `hold: Hold` field, the shared read-only methods first.
macro_rules! hold_face {
    ($class:ident { $($own:tt)* }) => {
        #[pymethods]
        impl $class {
            /// The lock's URL.
            #[getter]
            fn url(&self) -> &str {
                &self.hold.url
            }

            /// This hold's owner id (hex), as the lock's record names it.
            #[getter]
            fn owner(&self) -> &str {
                &self.hold.owner
            }

            /// The fencing token (fenced mode), `None` in presence mode.
            #[getter]
            fn token(&self) -> Option<u64> {
                self.hold.token
            }

            /// The slot, for a semaphore's hold.
            #[getter]
            fn slot(&self) -> Option<u32> {
                self.hold.slot
            }

            /// The lock object's version now (it changes at each renewal).
            #[getter]
            fn etag(&self) -> PyResult<String> {
                self.hold.etag()
            }

            /// "renewing", "behind" (renewals are failing; less than half the validity
            /// left) or "ended"; sends no request.
            fn health(&self) -> PyResult<&'static str> {
                self.hold.health()
            }

            /// Seconds of validity left (0 once ended), `None` for a lease of 0 (never
            /// expires).
            fn remaining(&self) -> PyResult<Option<f64>> {
                self.hold.remaining()
            }

            /// Whether the lock is held and valid now.
            fn is_held(&self) -> PyResult<bool> {
                self.hold.is_held()
            }

            /// Raises `LockLost` if the lock was lost (call it before an irreversible step).
            fn ensure(&self) -> PyResult<()> {
                self.hold.ensure()
            }

            fn __repr__(&self) -> String {
                format!(
                    "<sets3lock.{} {} owner {}>",
                    stringify!($class),
                    self.hold.url,
                    self.hold.owner
                )
            }

            $($own)*
        }
    };
}

pub(crate) use hold_face;
