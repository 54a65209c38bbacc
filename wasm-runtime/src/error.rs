//! Why a module was refused at load, and why a call failed.

use std::fmt;

use super::abi::AbiVersion;

/// Why one call into a module failed; the request fails, the server carries on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallFailure {
    /// What kind of failure (also the metrics label).
    pub kind: FailureKind,
    /// The detail, for the log and the client's `Status`.
    pub message: String,
}

/// `e` on one line: wasmtime's messages can span several (e.g. a dump of the bad magic bytes),
/// and reasons travel in log lines, statuses and `Status` messages.
pub fn one_line(e: impl fmt::Display) -> String {
    e.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

impl CallFailure {
    /// A failure of `kind`, described by `message`.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for CallFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The kinds of call failure, each counted per module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The call ran past its deadline (epoch interruption).
    Deadline,
    /// The module tried to grow its memory past the cap.
    Memory,
    /// The module trapped (unreachable, out-of-bounds access, a panic, ...).
    Trap,
    /// The response was larger than the output cap.
    OutputTooLarge,
    /// The response (or the manifest) did not decode, or pointed outside memory.
    BadOutput,
    /// The module answered with an error of its own (e.g. the object did not decode).
    Guest,
    /// The host could not set up the call (instance pool exhausted, worker gone).
    Host,
}

impl FailureKind {
    /// Every kind, in the order metrics list them.
    pub const ALL: [FailureKind; 7] = [
        Self::Deadline,
        Self::Memory,
        Self::Trap,
        Self::OutputTooLarge,
        Self::BadOutput,
        Self::Guest,
        Self::Host,
    ];

    /// The metrics label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Deadline => "deadline",
            Self::Memory => "memory",
            Self::Trap => "trap",
            Self::OutputTooLarge => "output_too_large",
            Self::BadOutput => "bad_output",
            Self::Guest => "guest_error",
            Self::Host => "host",
        }
    }
}

/// Why a module was refused at load (it never serves; the previous version keeps serving).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The module is larger than the module-size cap.
    #[error("module is {size} bytes, over the cap of {limit} bytes")]
    TooLarge {
        /// The module's size.
        size: usize,
        /// The cap.
        limit: usize,
    },
    /// The bytes are not a valid wasm module, or did not compile.
    #[error("module did not compile: {0}")]
    Compile(String),
    /// The module imports something the host does not provide.
    #[error("module imports {0}, which the host does not provide")]
    UnknownImport(String),
    /// The module imports a host function its manifest does not ask for.
    #[error("module imports host function {0:?} without asking for it in its manifest")]
    UngrantedImport(String),
    /// An export the ABI requires is missing or has the wrong type.
    #[error("module lacks the export {0}")]
    MissingExport(String),
    /// The manifest names an ABI version the host does not speak: another major version, or a
    /// minor version newer than the host's.
    #[error("module speaks ABI version {found}; this host speaks {}.0 to {expected}", expected.major)]
    AbiVersion {
        /// The module's version.
        found: AbiVersion,
        /// The newest version the host speaks.
        expected: AbiVersion,
    },
    /// The manifest is malformed (no resources, empty names, unknown operations ...).
    #[error("invalid manifest: {0}")]
    Manifest(String),
    /// Instantiating the module or calling it at load failed.
    #[error("module failed its load check: {0}")]
    LoadCall(CallFailure),
    /// The module binds a resource it may not (already served by another source, or refused by
    /// the resource check).
    #[error("{0}")]
    Resource(String),
    /// Reading the module or the compilation cache failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

/// `Result` with the runtime's load [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
