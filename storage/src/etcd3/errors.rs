//! Turning every `etcd-client` error into a typed [`StorageError`].

use crate::error::StorageError;

/// etcd's error text for a read or watch below the compacted revision.
const COMPACTED: &str = "required revision has been compacted";
/// etcd's error text for a read at a revision it has not reached.
const FUTURE_REVISION: &str = "required revision is a future revision";

/// `Unavailable`, naming every endpoint tried and why the last one failed.
pub(super) fn unreachable_error(endpoints: &[String], cause: &StorageError) -> StorageError {
    let cause = match cause {
        StorageError::Unavailable(message) => message.clone(),
        other => other.to_string(),
    };
    StorageError::Unavailable(format!(
        "cannot reach etcd at {}: {cause}",
        endpoints.join(",")
    ))
}

/// Maps an `etcd-client` error to a storage error. A compacted revision becomes a bare `Expired`
/// and a future revision a `TooLargeResourceVersion` with zero revisions; callers that know the
/// revisions involved rebuild those with [`is_compacted`] / [`is_future_revision`].
pub(super) fn map_error(e: etcd_client::Error) -> StorageError {
    use etcd_client::Error as E;
    match e {
        E::GRpcStatus(status) => map_status(i32::from(status.code()), status.message()),
        E::TransportError(_) | E::IoError(_) | E::WatchError(_) | E::EndpointError(_) => {
            StorageError::Unavailable(e.to_string())
        }
        E::InvalidArgs(_) | E::InvalidUri(_) => StorageError::BadRequest(e.to_string()),
        other => StorageError::Internal(other.to_string()),
    }
}

/// Maps a gRPC status (its numeric code and message) to a storage error.
fn map_status(code: i32, message: &str) -> StorageError {
    if message.contains(COMPACTED) {
        return StorageError::Expired {
            message: format!("etcd: {message}"),
        };
    }
    if message.contains(FUTURE_REVISION) {
        return StorageError::TooLargeResourceVersion {
            requested: 0,
            current: 0,
        };
    }
    // gRPC codes: 1 Cancelled, 2 Unknown, 3 InvalidArgument, 4 DeadlineExceeded,
    // 8 ResourceExhausted, 9 FailedPrecondition, 10 Aborted, 11 OutOfRange, 14 Unavailable.
    match code {
        1 | 2 | 4 | 8 | 10 | 14 => StorageError::Unavailable(format!("etcd: {message}")),
        3 | 9 | 11 => StorageError::BadRequest(format!("etcd: {message}")),
        _ => StorageError::Internal(format!("etcd: grpc status {code}: {message}")),
    }
}

/// True for the error [`map_error`] makes of etcd's "required revision has been compacted".
pub(super) fn is_compacted(e: &StorageError) -> bool {
    matches!(e, StorageError::Expired { message } if message.contains(COMPACTED))
}

/// True for the error [`map_error`] makes of etcd's "required revision is a future revision".
pub(super) fn is_future_revision(e: &StorageError) -> bool {
    matches!(
        e,
        StorageError::TooLargeResourceVersion {
            requested: 0,
            current: 0
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_errors_are_typed() {
        let e = map_status(11, "etcdserver: mvcc: required revision has been compacted");
        assert!(is_compacted(&e) && e.is_expired());
        let e = map_status(
            11,
            "etcdserver: mvcc: required revision is a future revision",
        );
        assert!(is_future_revision(&e) && e.is_too_large_resource_version());
        assert!(map_status(14, "connection refused").is_unavailable());
        assert!(map_status(4, "slow").is_unavailable());
        assert!(map_status(3, "bad").is_bad_request());
        assert!(map_error(etcd_client::Error::WatchError("closed".into())).is_unavailable());
    }
}
