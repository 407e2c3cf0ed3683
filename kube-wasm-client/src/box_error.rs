//! The type-erased error of transport failures.

/// A type-erased error, as tower's `BoxError` that kube's
/// [`Error::Service`](crate::Error::Service) carries.
///
/// For host failures it holds a [`kube_wasm_abi::OpError`] (downcast to read its code).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
