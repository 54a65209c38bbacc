//! The watch verb: opens a watch on a collection (or one object) and hands it to the stream
//! framing in `api/watch.rs`.

use hyper::Response;
use tokio::sync::watch as signal;

use super::resolve::Resolved;
use crate::params::{Format, WatchParams};
use crate::response::Body;
use crate::status::Status;
use crate::watch::{self, WatchFormat};

/// Starts a watch; events stream until the timeout, an error, or `shutdown`.
///
/// # Errors
/// 400 for a single-object watch with a field selector.
pub(crate) async fn watch(
    res: &Resolved,
    params: WatchParams,
    format: Format,
    shutdown: signal::Receiver<bool>,
) -> Result<Response<Body>, Status> {
    let opts = params.options(res.path.name.as_deref())?;
    let def = res.store().definition();
    let api_version = def.api_version(&res.read_scope().version);
    let format = WatchFormat {
        table: format.as_table,
        include_object: format.include_object.as_str().to_string(),
        protobuf: format.protobuf
            && !format.as_table
            && def.builtin
            && crate::protobuf::supports(&api_version, &def.kind),
    };
    Ok(watch::serve(
        res.store().clone(),
        res.read_scope(),
        opts,
        params.timeout_seconds,
        format,
        shutdown,
    )
    .await)
}
